"""Container stacks (kit.envs.containers, kit.envs.kinds.container): names, the recipe, the
deterministic base, the confinement of a worker's container; and, with real podman, images built
twice to one id, runs inside them, the container and os factors, and kill -9 leaving nothing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import containers
import pytest
from places import ROOT
from usage import usage_error

from kit.cli import main
from kit.envs.containers import bases, images
from kit.envs.containers.command import InImage
from kit.envs.containers.runtime import Runtime
from kit.envs.kinds import UnknownStack, stack_kind
from tests.scenarios.test_running_on_a_cluster import stage_hashes

STACK = containers.STACK


# -- names ------------------------------------------------------------------------------------


def test_a_container_stack_is_named_for_its_stack_and_base():
    k = stack_kind(f"{STACK}@container")
    assert (k.kind, k.inner.name, k.base) == ("container", STACK, bases.DEFAULT)
    assert stack_kind(f"{STACK}@trixie").base == "trixie"


@pytest.mark.parametrize(
    "name, said",
    [
        (f"{STACK}@bookworm", f"is called {STACK}@container"),
        ("np1-sk15@container", "did you mean np1-sk152"),
        (f"{STACK}@trxie", "unknown base 'trxie'"),
        ("torch-linux-cpu@container", "pipeline stacks only"),
    ],
)
def test_a_wrong_container_name_is_one_line(name, said):
    with pytest.raises(UnknownStack) as e:
        stack_kind(name)
    assert said in str(e.value) and "\n" not in str(e.value)


def test_wrong_words_are_usage_errors(capsys):
    assert "add --container" in usage_error(["stacks", "build", STACK, "--base", "trixie"], capsys)
    assert "add --container" in usage_error(["stacks", "verify", STACK], capsys)
    assert "names a container stack already" in usage_error(
        ["stacks", "build", f"{STACK}@container", "--container"], capsys
    )
    assert "'sid': one of bookworm, trixie, bullseye" in usage_error(
        ["stacks", "build", STACK, "--container", "--base", "sid"], capsys
    )


# -- the recipe and the base --------------------------------------------------------------------


def test_the_recipe_pins_everything_and_reaches_no_network():
    text = images.recipe("ab" * 32, "sha256:" + "cd" * 32, "/opt/py/bin/python3.12", "/opt/py")
    assert f"FROM sha256:{'cd' * 32}" in text
    assert "sync --frozen --no-build" in text and "UV_OFFLINE=1" in text
    assert f"SOURCE_DATE_EPOCH={bases.EPOCH}" in text
    assert "cp -a /kit-build/python /opt/py" in text  # the interpreter at its own path


def _tree(root: Path, order, stamp) -> None:
    for name in order:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"content of {name}\n")
        os.utime(p, (stamp, stamp))
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc" / "resolv.conf").write_text(f"nameserver {stamp}\n")
    (root / "etc" / "shadow").write_text(f"root:*:{stamp // 86400}:0:99999:7:::\n")
    (root / "var" / "log").mkdir(parents=True, exist_ok=True)
    (root / "var" / "log" / "dpkg.log").write_text(f"installed at {stamp}\n")


def test_a_base_tar_depends_on_its_files_alone(tmp_path):
    """Two roots with the same files, made in another order at other times, give one tar:
    times clamped, names sorted, the build's own traces (resolv.conf, logs, shadow's day of
    last change) left out or fixed."""
    a, b = tmp_path / "a", tmp_path / "b"
    _tree(a, ["usr/bin/x", "usr/lib/y", "z"], 1_000_000_000)
    _tree(b, ["z", "usr/lib/y", "usr/bin/x"], 1_700_000_000)
    for root in (a, b):
        bases._normalise(root)
        bases._tar(root, root.with_suffix(".tar"))
    assert a.with_suffix(".tar").read_bytes() == b.with_suffix(".tar").read_bytes()
    with tarfile.open(a.with_suffix(".tar")) as t:
        names = t.getnames()
        assert "etc/resolv.conf" not in names and "var/log/dpkg.log" not in names
        assert {m.mtime for m in t.getmembers()} == {bases.EPOCH}
        shadow = t.extractfile("etc/shadow").read().decode()
    assert shadow.split(":")[2] == str(bases.EPOCH // 86400)


def test_the_os_factor_offers_only_bases_that_run_the_interpreter(monkeypatch):
    """An older glibc than the one the copied interpreter was built against cannot start it:
    that base is one line with its reason, never a pair."""
    import platform as pf

    from kit.runs.planning.stack_pairs import os_pairs, stack_pairs

    monkeypatch.setattr(pf, "libc_ver", lambda: ("glibc", "2.36"))
    runs, cannot = os_pairs(STACK)
    assert ("bookworm", "trixie") in runs
    assert [b for b, _ in cannot] == ["bullseye"]
    assert "glibc 2.31, older than this machine's 2.36" in cannot[0][1]
    pairs = stack_pairs("os", None, STACK)
    assert [(a, b) for a, _, b, _, _ in pairs] == [(f"{STACK}@container", f"{STACK}@trixie")]
    assert "glibc 2.36" in pairs[0][4] and "glibc 2.41" in pairs[0][4]
    monkeypatch.setattr(pf, "libc_ver", lambda: ("glibc", "2.99"))
    with pytest.raises(Exception, match="no pair of bases that runs here"):
        stack_pairs("os", None, STACK)


def test_the_container_factor_pairs_a_venv_with_its_image():
    from kit.runs.planning.stack_pairs import listed_pairs, stack_pairs

    ((a, _, b, _, label),) = stack_pairs("container", None, STACK)
    assert (a, b) == (STACK, f"{STACK}@container") and "venv vs image" in label
    assert (a, (), b, ()) in listed_pairs("container")
    # the host is never imaged: the reference stack stands for it
    from kit.envs.catalogue import reference

    assert stack_pairs("container", None, "host")[0][0] == reference()


# -- confinement: what a worker's container is given -------------------------------------------


def test_a_worker_container_is_confined():
    rt = Runtime("podman", "/usr/bin/podman", "4", ("--runtime", "runc"), "/x/containers.conf")
    cmd = InImage(rt, "sha256:" + "ab" * 32, "/opt/stack/bin/python")
    env = {
        "OPENBLAS_CORETYPE": "Haswell",
        "OMP_NUM_THREADS": "2",
        "SECRET_TOKEN": "s3cret",
        "PYTHONPATH": "/w",
    }
    argv = cmd.argv("kit-1-ab", env, "/runs/r/work", [("/w", False), ("/runs", True)], stdin=True)
    assert argv[:3] == ["/usr/bin/podman", "--runtime", "runc"]
    for opt in (
        "--network=none",
        "--read-only",
        "--cap-drop=all",
        "--security-opt=no-new-privileges",
        "--preserve-fds=1",
        "-i",
    ):
        assert opt in argv, opt
    assert f"--user={os.getuid()}:{os.getgid()}" in argv
    assert argv[argv.index("-w") + 1] == "/runs/r/work"
    mounts = [argv[i + 1] for i, a in enumerate(argv) if a == "-v"]
    assert mounts == ["/w:/w:ro", "/runs:/runs:rw"]
    passed = [argv[i + 1] for i, a in enumerate(argv) if a == "-e"]
    # what changes a result passes in; nothing else of kit's environment does
    assert "OPENBLAS_CORETYPE=Haswell" in passed and "OMP_NUM_THREADS=2" in passed
    assert not any("SECRET" in p for p in passed)
    assert "KIT_CHANNEL=3" in passed
    assert argv[-2:] == ["sha256:" + "ab" * 32, "/opt/stack/bin/python"]
    assert cmd.removal("kit-1-ab")[-1] == "kit-1-ab"


_ENV = {"OPENBLAS_CORETYPE": "Haswell", "OMP_NUM_THREADS": "2", "SECRET_TOKEN": "s3cret"}
_MOUNTS = [("/w", False), ("/data sets", False), ("/runs", True)]


def test_under_charliecloud_a_worker_is_confined_by_kits_own_namespaces():
    """ch-run shares the host's network and binds read-write: kit runs it in a user, mount and
    network namespace of its own, the read-only folders remounted read-only there, with a
    private /tmp, only the passed variables, and no capabilities (setpriv)."""
    import shlex

    from kit.envs.containers.routes import InCharliecloud

    cmd = InCharliecloud(
        "/home/k/containers/charliecloud/ab", "sha256:" + "ab" * 32, "/opt/stack/bin/python"
    )
    argv = cmd.argv("kit-1", _ENV, "/runs/r/work", _MOUNTS, stdin=True)
    assert argv[:5] == ["unshare", "--user", "--map-root-user", "--mount", "--net"]
    assert argv[5:7] == ["sh", "-c"] and argv[8] == "kit-worker"
    words = shlex.split(argv[7])
    for ro in ("/w", "/data sets"):  # each read-only folder, remounted so before ch-run
        assert f"remount,bind,ro {shlex.quote(ro)} && " in argv[7]
    assert "remount,bind,ro /runs" not in argv[7]
    ch = words[words.index("ch-run") :]
    assert "--private-tmp" in ch and "--unset-env=*" in ch
    assert "--set-env=KIT_CHANNEL=3" in ch and "--set-env=OPENBLAS_CORETYPE=Haswell" in ch
    assert not any("SECRET" in w for w in ch)
    assert [w for w in ch if w.startswith("--bind=")] == [
        "--bind=/w",
        "--bind=/data sets",
        "--bind=/runs",
    ]
    assert "--cd=/runs/r/work" in ch
    tail = ch[ch.index("--") + 1 :]
    assert tail[:5] == [
        "/usr/bin/setpriv",
        "--no-new-privs",
        "--inh-caps=-all",
        "--ambient-caps=-all",
        "--bounding-set=-all",
    ]
    assert tail[5:] == ["/opt/stack/bin/python", "$@"] and cmd.removal("kit-1") is None


def test_under_apptainer_a_worker_is_confined_by_its_options():
    """Apptainer cannot be installed here: its command line is read back."""
    from kit.envs.containers.routes import InApptainer

    cmd = InApptainer("/k/x.sif", "sha256:" + "ab" * 32, "/opt/stack/bin/python")
    argv = cmd.argv("kit-1", _ENV, "/runs/r/work", _MOUNTS, stdin=True)
    assert argv[:2] == ["apptainer", "exec"]
    for opt in ("--containall", "--cleanenv", "--no-home", "--no-privs", "--net"):
        assert opt in argv, opt
    assert argv[argv.index("--network") + 1] == "none"
    binds = [argv[i + 1] for i, a in enumerate(argv) if a == "--bind"]
    assert binds == ["/w:/w:ro", "/data sets:/data sets:ro", "/runs:/runs:rw"]
    envs = [argv[i + 1] for i, a in enumerate(argv) if a == "--env"]
    assert "KIT_CHANNEL=3" in envs and not any("SECRET" in e for e in envs)
    assert argv[argv.index("--pwd") + 1] == "/runs/r/work"
    assert argv[-2:] == ["/k/x.sif", "/opt/stack/bin/python"]


def test_the_route_is_named_or_found_and_a_missing_one_is_one_line(monkeypatch, tmp_path):
    from kit.core.errors import KitError
    from kit.envs.containers import routes

    monkeypatch.setenv("KIT_CONTAINER_RUNTIME", "singularity")
    with pytest.raises(KitError, match="not one of podman, charliecloud, apptainer"):
        routes.chosen()
    monkeypatch.setenv("KIT_CONTAINER_RUNTIME", "apptainer")
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing installed
    assert routes.chosen() == "apptainer"
    assert "apptainer is not installed" in routes.unavailable("apptainer")
    assert "ch-run is not installed" in routes.unavailable("charliecloud")
    monkeypatch.delenv("KIT_CONTAINER_RUNTIME")
    assert routes.chosen() == "podman" and "podman is not installed" in routes.unavailable("podman")


def test_the_tether_runs_its_after_command_when_kit_is_killed(tmp_path):
    """A container is not below the tether: the command that removes it (here, one that
    leaves a file) runs when kit dies by kill -9, before the family is ended."""
    done = tmp_path / "removed"
    script = tmp_path / "parent.py"
    script.write_text(
        "import subprocess, sys, time\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from kit.core import tether\n"
        f"subprocess.Popen(tether.argv(['sleep', '600'], after=['touch', {str(done)!r}]),"
        " start_new_session=True)\n"
        "print('started', flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert parent.stdout.readline().strip() == "started"
    time.sleep(0.5)
    parent.kill()
    parent.wait()
    for _ in range(100):
        if done.exists():
            break
        time.sleep(0.1)
    assert done.exists()


def test_no_runtime_is_one_line(tmp_path, capsys, monkeypatch):
    """Where neither podman nor docker is on PATH, building an image says so in one line."""
    import kit.envs.containers.runtime as runtime

    monkeypatch.setattr(runtime, "_found", None)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(runtime.NoRuntime) as e:
        runtime.runtime()
    assert "podman is not installed" in str(e.value) and "\n" not in str(e.value)
    assert stack_kind(f"{STACK}@container").status(_plat())[0] == "unavailable"


def _plat():
    from kit.envs.platforms import detect

    return detect()


# -- real podman --------------------------------------------------------------------------------


def test_images_are_listed_beside_venvs(images_home, capsys):
    assert main(["stacks"]) == 0
    out = capsys.readouterr().out
    assert f"{STACK}@container" in out and f"{STACK}@trixie" in out
    assert "on Debian 12 (bookworm, glibc 2.36)" in out
    assert main(["stacks", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    image = rows[f"{STACK}@container"]["image"]
    assert image["id"].startswith("sha256:") and image["size"] > 10**8
    assert len(image["diff_ids"]) >= 2 and image["base_id"] != image["id"]
    assert rows[f"{STACK}@container"]["status"] == "built"


def test_a_rebuild_from_nothing_gives_the_same_image_id(images_home, capsys):
    """kit stacks verify bootstraps the base again from the mirror and rebuilds the image in an
    empty store of its own: the same id, or the layer that differs (exit 1)."""
    rec = images.record(STACK, "bookworm")
    assert main(["stacks", "verify", STACK, "--container"]) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert "the same image id from its recipe again" in out and rec["id"] in out
    assert images.record(STACK, "bookworm") == rec  # the kept record is untouched


def test_runs_in_the_image_name_it_and_match_the_venv(images_home, capsys):
    assert main(containers.CONTAINER_PAIR) == 0
    capsys.readouterr()
    assert main(["budget", "--factor", "container", "--n", "120", "--json"]) == 0
    from kit.runs.store import Store

    store = Store()
    (pair,) = [p for p in store.pairs() if p.factor == "container"]
    a, b = store.run(pair.a), store.run(pair.b)
    rec = images.record(STACK, "bookworm")
    assert a.spec.stack == STACK and a.manifest.get("image") is None
    assert b.spec.stack == f"{STACK}@container" and b.spec.stack_id == rec["id"]
    assert b.manifest["image"]["id"] == rec["id"] and b.manifest["image"]["base"] == "bookworm"
    # the container's host name is the host's: nothing but what the image changes differs
    from kit.analysis.compare import env_diff

    assert set(env_diff(a.manifest, b.manifest)) <= {"image", "os_release", "libc"}


def test_the_os_factor_runs_on_two_debian_bases(images_home, capsys):
    assert (
        main(["run", "--factor", "os", "--stack", STACK, "--n", "120", "--threads", "1", "--yes"])
        == 0
    )
    capsys.readouterr()
    from kit.runs.store import Store

    store = Store()
    (pair,) = [p for p in store.pairs() if p.factor == "os"]
    a, b = store.run(pair.a).manifest, store.run(pair.b).manifest
    assert a["env"]["os_release"].endswith("(bookworm)") and a["env"]["libc"] == "glibc 2.36"
    assert b["env"]["os_release"].endswith("(trixie)") and b["env"]["libc"] == "glibc 2.41"
    assert main(["budget", "--factor", "os", "--n", "120"]) == 0
    out = capsys.readouterr().out
    assert "bookworm (glibc 2.36) vs trixie (glibc 2.41)" in " ".join(out.split())


def test_kill_9_of_kit_leaves_no_container(images_home):
    env = dict(os.environ, KIT_HOME=str(images_home))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kit",
            "run",
            "--factor",
            "seed",
            "--stack",
            f"{STACK}@container",
            "--n",
            "400",
            "--seeds",
            "0-3",
            "--yes",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            if containers.kit_containers(proc.pid):
                break
            assert proc.poll() is None, "kit ended before a container started"
            time.sleep(0.1)
        else:
            pytest.fail("no container started")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert containers.left_by(proc.pid) == []
    # none of its processes: its tethers name it (--parent=PID), its podman runs their
    # containers (kit-PID-...); other tests' workers may run meanwhile
    for mark in (f"--parent={proc.pid}", f"kit-{proc.pid}-"):
        left = subprocess.run(["pgrep", "-f", "--", mark], capture_output=True, text=True).stdout
        assert not left.strip(), (mark, left)


CONFINED = '''"""Tries to leave its container: the network, the host's files, kit's store."""
import os
import socket

import numpy as np

SEEDS = ("init",)
KINDS = {"x": "embedding"}


def run(seeds):
    escaped = []
    try:
        socket.create_connection(("127.0.0.1", int(os.environ.get("PORT", "%d"))), timeout=2)
        escaped.append("reached the host's loopback")
    except OSError:
        pass
    if [n for _, n in socket.if_nameindex() if n != "lo"]:
        escaped.append("has a network interface")
    for path in ("/escaped", "/etc/escaped", "%s", "%s"):
        try:
            with open(path, "w") as f:
                f.write("x")
            escaped.append("wrote " + path)
        except OSError:
            pass
    if os.path.exists("%s"):
        escaped.append("sees kit's store")
    if escaped:
        raise RuntimeError("; ".join(escaped))
    return {"x": np.arange(4.0).reshape(2, 2) + seeds["init"]}
'''


def test_code_in_a_container_reaches_no_network_and_writes_only_its_run(images_home, tmp_path):
    """A pipeline run in the image cannot reach a server on the host's loopback, has no
    network interface but lo, cannot write the image, the datasets or the pipeline files, and
    does not see kit's store (the run's folder is its only writable place)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted = []
    server.settimeout(0.2)

    def accept():
        end = time.monotonic() + 120
        while time.monotonic() < end:
            try:
                accepted.append(server.accept())
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    port = server.getsockname()[1]
    store = images_home / "store.sqlite"
    datasets = images_home / "datasets" / "escaped"
    pipelines = images_home / "pipelines" / "escaped"
    script = tmp_path / "confined.py"
    script.write_text(CONFINED % (port, datasets, pipelines, store))
    try:
        code = main(
            [
                "run",
                "--pipeline",
                str(script),
                "--factor",
                "repeat",
                "--stack",
                f"{STACK}@container",
                "--threads",
                "1",
                "--yes",
            ]
        )
    finally:
        server.close()
    assert code == 0
    assert accepted == []
    assert not datasets.exists() and not pipelines.exists()


def test_a_differing_image_is_said_by_its_layer():
    base = "sha256:" + "b" * 64
    old = {"base_id": base, "diff_ids": ["sha256:" + "1" * 64, "sha256:" + "2" * 64]}
    assert "layer 2 of 2 differs: the stack" in images.layer_difference(
        old, {**old, "diff_ids": ["sha256:" + "1" * 64, "sha256:" + "3" * 64]}
    )
    assert "the base differs" in images.layer_difference(
        old, {**old, "base_id": "sha256:" + "c" * 64}
    )
    assert "only the image's configuration" in images.layer_difference(old, dict(old))
    from kit.views.tables import image_lines

    said = " ".join(
        image_lines(
            [
                {
                    "stack": "s@container",
                    "same": False,
                    "here": "sha256:" + "a" * 64,
                    "there": "sha256:" + "f" * 64,
                    "difference": "layer 2 of 2 differs",
                }
            ]
        )
    )
    assert "a FINDING" in said and "layer 2 of 2 differs" in said


def test_compare_holds_the_image_fixed_when_its_id_is_the_same(
    images_home, tmp_path, capsys, monkeypatch
):
    """A bundle of container runs, compared in another KIT_HOME (another host) whose image of
    the same recipe has the same id: the image is held fixed, what remains is the machine."""
    assert main(containers.CONTAINER_PAIR) == 0
    assert (
        main(
            [
                "export",
                "--n",
                "120",
                "--factor",
                "container",
                "--out",
                str(tmp_path / "lab.kit"),
                "--arrays",
            ]
        )
        == 0
    )
    other = tmp_path / "other"
    containers.share(images_home, other)
    monkeypatch.setenv("KIT_HOME", str(other))
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "lab.kit"), "--yes"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "reproduced: all 2 runs are bitwise identical" in out
    assert f"{STACK}@container: the same image id here" in out and "held fixed" in out


def test_a_dask_cluster_runs_in_the_image(images_home, capsys):
    """On a node the runs' folders are in its /tmp: a container worker is given exactly its
    pool's folder, and its runs are the same as the local ones."""
    assert (
        main(
            [
                "run",
                "--factor",
                "repeat",
                "--stack",
                f"{STACK}@container",
                "--n",
                "120",
                "--threads",
                "1",
                "--cluster",
                "local:1",
                "--yes",
            ]
        )
        == 0
    )
    from kit.runs.store import Store

    runs = Store().runs()
    assert len(runs) == 2 and all(r.manifest["image"]["id"] == r.spec.stack_id for r in runs)
    assert all(r.manifest.get("node") for r in runs)


def test_a_base_named_by_digest_is_a_usage_error_unless_it_is_one(capsys):
    err = usage_error(["stacks", "build", STACK, "--container", "--base", "debian:latest"], capsys)
    assert "REF@sha256:<64 hex digits>" in err and "bookworm" in err


@pytest.mark.slow
def test_a_base_by_digest_that_no_registry_serves_is_one_line(kit_home, capsys):
    """Pulling is the one step that needs a registry; none is reachable from these machines."""
    if containers.unavailable():
        pytest.skip(containers.unavailable())
    ref = "docker.io/library/debian@sha256:" + "a" * 64
    assert main(["stacks", "build", STACK, "--container", "--base", ref]) == 1
    err = capsys.readouterr().err
    assert f"cannot pull {ref}" in err and "a registry must be reachable" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not list((kit_home / "containers" / "bases").glob("digest-*.json"))
    assert stack_kind(f"{STACK}@digest-{'a' * 12}").status(_plat())[0] == "unavailable"


async def test_setup_offers_and_builds_the_image_of_a_built_venv(images_home):
    """kit stacks and the TUI's Setup offer NAME@container for each built venv without an
    image (images are built from the venv's wheels); `b` on its row builds it."""
    from textual.widgets import DataTable

    from kit.runs.store import Store
    from kit.tui.app import KitApp
    from tests.tui.test_app import LINUX, idle, until

    other = "np1-sk191"
    assert main(["stacks", "build", other]) == 0
    name = f"{other}@container"
    assert stack_kind(name).status(_plat())[0] == "not built"
    async with KitApp("synthetic", 120, platform=LINUX, store=Store()).run_test(
        size=(120, 40)
    ) as pilot:
        await idle(pilot)
        table = pilot.app.query_one("#stacks", DataTable)
        rows = [table.coordinate_to_cell_key((r, 0)).row_key.value for r in range(table.row_count)]
        assert name in rows
        table.move_cursor(row=rows.index(name))
        await pilot.press("b")
        await idle(pilot)
        await until(pilot, lambda: stack_kind(name).status(_plat())[0] == "built", 900)
    assert images.record(other, "bookworm")["id"].startswith("sha256:")


REPEAT = ["--factor", "repeat"]
SEEDS = ["--factor", "seed", "--seeds", "5,6"]


def _on_slurm(home: Path, slurm_env: dict, factor=REPEAT, **env) -> None:
    """`kit run` of ``factor`` in the image on this machine's real Slurm (one job)."""
    (home / "cluster.toml").write_text(
        '[jobqueue]\nqueue = "main"\ncores = 1\nmemory = "2GB"\n'
        'walltime = "00:20:00"\njobs = 1\ninterface = "lo"\n'
        "wait_s = 180\n"
    )
    got = subprocess.run(
        [
            str(Path(sys.executable).with_name("kit")),
            "run",
            *factor,
            "--stack",
            f"{STACK}@container",
            "--n",
            "120",
            "--threads",
            "1",
            "--cluster",
            "slurm",
            "--yes",
        ],
        env=dict(os.environ, KIT_HOME=str(home), **slurm_env, **env),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert got.returncode == 0, got.stderr
    assert "1 slurm job(s) through dask-jobqueue" in got.stderr


def test_slurm_runs_in_the_image_by_podman(images_home, slurm_env):
    """kit run --cluster slurm on a container stack: the job's Dask worker starts each run in
    the image with podman on its node, confined as a local run is, and the runs name it."""
    _on_slurm(images_home, slurm_env)
    from kit.runs.store import Store

    runs = Store().runs()
    assert len(runs) == 2 and all(r.manifest.get("node") for r in runs)
    assert {r.manifest["image"]["runtime"] for r in runs} == {"podman"}
    assert all(r.manifest["image"]["id"] == r.spec.stack_id for r in runs)


@pytest.fixture
def charliecloud_home(images_home, tmp_path, monkeypatch):
    """A second KIT_HOME (another host) whose container runs go by Charliecloud: the image
    built by podman, converted once by ch-convert into a directory image."""
    if shutil.which("ch-run") is None:
        pytest.skip("Charliecloud is not installed (.ci/run installs it)")
    home = tmp_path / "charliecloud"
    containers.share(images_home, home)
    monkeypatch.setenv("KIT_HOME", str(home))
    monkeypatch.setenv("KIT_CONTAINER_RUNTIME", "charliecloud")
    assert main(["stacks", "build", STACK, "--container"]) == 0
    return home


def test_charliecloud_runs_the_image_podman_built_and_gets_its_hashes(
    images_home, charliecloud_home, slurm_env, tmp_path, monkeypatch
):
    """The same runs by podman (one home) and by ch-run (another; locally and in a Slurm job)
    give the same stage hashes; a pipeline under ch-run reaches no network and writes nothing
    but its run's folder."""
    monkeypatch.setenv("KIT_HOME", str(images_home))
    monkeypatch.delenv("KIT_CONTAINER_RUNTIME")
    for factor in (REPEAT, SEEDS):
        assert (
            main(
                [
                    "run",
                    *factor,
                    "--stack",
                    f"{STACK}@container",
                    "--n",
                    "120",
                    "--threads",
                    "1",
                    "--yes",
                ]
            )
            == 0
        )
    monkeypatch.setenv("KIT_HOME", str(charliecloud_home))
    monkeypatch.setenv("KIT_CONTAINER_RUNTIME", "charliecloud")
    assert (
        main(
            [
                "run",
                *REPEAT,
                "--stack",
                f"{STACK}@container",
                "--n",
                "120",
                "--threads",
                "1",
                "--yes",
            ]
        )
        == 0
    )
    _on_slurm(charliecloud_home, slurm_env, SEEDS, KIT_CONTAINER_RUNTIME="charliecloud")
    podman, ch = stage_hashes(images_home), stage_hashes(charliecloud_home)
    assert len(podman) == 4 and podman == ch
    from kit.runs.store import Store

    runs = Store().runs()
    assert {r.manifest["image"]["runtime"] for r in runs} == {"charliecloud"}
    assert sum(bool(r.manifest.get("node")) for r in runs) == 2  # the Slurm job's
    # confined: the pipeline that tries to leave its container, under ch-run
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    store = charliecloud_home / "store.sqlite"
    datasets = charliecloud_home / "datasets" / "escaped"
    pipelines = charliecloud_home / "pipelines" / "escaped"
    script = tmp_path / "confined.py"
    script.write_text(CONFINED % (server.getsockname()[1], datasets, pipelines, store))
    try:
        assert (
            main(
                [
                    "run",
                    "--pipeline",
                    str(script),
                    "--factor",
                    "repeat",
                    "--stack",
                    f"{STACK}@container",
                    "--threads",
                    "1",
                    "--yes",
                ]
            )
            == 0
        )
    finally:
        server.close()
    assert not datasets.exists() and not pipelines.exists()


def test_records_of_kits_home_are_read_bounded_and_checked(kit_home, monkeypatch):
    """A record under KIT_HOME that is a link to /dev/zero, a FIFO, or names options and ids
    kit never writes is not a record: the stack is not built, and nothing hangs or is run."""
    from kit.envs.containers import runtime

    folder = kit_home / "containers" / "images"
    folder.mkdir(parents=True)
    (folder / f"{STACK}@bookworm.json").symlink_to("/dev/zero")
    os.mkfifo(folder / f"{STACK}@trixie.json")
    assert images.record(STACK, "bookworm") is None and images.record(STACK, "trixie") is None
    good = {
        "id": "sha256:" + "a" * 64,
        "base_id": "sha256:" + "b" * 64,
        "diff_ids": ["sha256:" + "c" * 64],
        "lock_sha256": "d" * 64,
        "interpreter": "/usr/bin/python3",
    }
    assert images.well_formed(good)
    for bad in (
        {"id": "alpine; rm -rf /"},
        {"interpreter": "/x\nRUN curl evil"},
        {"diff_ids": ["sha256:zz"]},
    ):
        assert not images.well_formed({**good, **bad})
    # a remembered runtime with options of its own is probed again, never used
    (kit_home / "containers" / "runtime.json").write_text(
        json.dumps(
            {
                "binary": "/usr/bin/podman",
                "version": "4.3.1",
                "options": ["--root", "/elsewhere"],
                "conf": None,
            }
        )
    )
    if containers.unavailable() is None:
        monkeypatch.setattr(runtime, "_found", None)
        assert "--root" not in runtime.runtime().options
