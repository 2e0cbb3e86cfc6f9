"""A long command killed (kill -9, SIGTERM) leaves nothing running and nothing the next start
does not sweep: kit import's spool, kit data homology's mmseqs and its work folder, a probe
stack's uv sync and its half-built venv, an atomic write's temporary file (issue 40). The
commands are the real ones, in a subprocess with a private KIT_HOME, killed while their folder
or child tool exists."""

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from places import ROOT
from procs import none_left as _none_left
from procs import tool_running as _tool_running
from procs import wait_until as _wait

from kit.core import children
from kit.core.spools import OWNER, discard, spool, sweep
from tests.app.test_releases import BASE, one_stack_catalogue
from tests.data.test_homology import needs_mmseqs


def _env(home, **extra):
    return dict(os.environ, KIT_HOME=str(home), PYTHONPATH=str(ROOT), **extra)


def _clean(out: subprocess.CompletedProcess) -> None:
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "internal error" not in out.stderr, out.stderr


pytestmark = pytest.mark.skipif(
    not Path("/proc/self/environ").exists(), reason="reads processes from /proc (Linux)"
)


# -- the pieces ---------------------------------------------------------------------------------
def test_a_tethered_tool_and_its_children_end_when_kit_is_killed(tmp_path):
    """sh starting a sleeping child: both end with the process that ran them (kill -9)."""
    home = tmp_path / "h"
    code = (
        "from kit.core import children; children.run(['sh', '-c', 'sleep 300 & sleep 300; wait'])"
    )
    p = subprocess.Popen([sys.executable, "-c", code], env=_env(home))
    assert _wait(lambda: _tool_running(home, "sleep"), p, 30)
    p.kill()
    p.wait()
    assert _none_left(home) == []


def test_a_tethered_tool_keeps_run_s_answers(tmp_path):
    got = children.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (got.returncode, got.stdout, got.stderr) == (3, "out\n", "err\n")
    with pytest.raises(FileNotFoundError):
        children.run([str(tmp_path / "no-such-tool")])
    t = time.time()
    with pytest.raises(subprocess.TimeoutExpired):
        children.run(["sh", "-c", "sleep 30 & sleep 30"], timeout=0.5)
    assert time.time() - t < 5


def test_a_spool_is_swept_only_once_its_owner_is_gone(tmp_path):
    """A live owner's folder stays (its lock is held); a dead one's goes; an older kit's
    unlocked folder without a pid goes once it is old."""
    code = (
        "import sys, time; from kit.core.spools import spool\n"
        "with spool(sys.argv[1], '.x-') as d:\n"
        "    (d / 'data').write_bytes(b'1' * 1000); print(d, flush=True); time.sleep(300)\n"
    )
    live = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(tmp_path / "h"),
    )
    held = Path(live.stdout.readline().strip())
    dead = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(tmp_path / "h"),
    )
    left = Path(dead.stdout.readline().strip())
    dead.kill(), dead.wait()
    old = tmp_path / ".x-oldkit"
    old.mkdir()
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    young = tmp_path / ".x-young"
    young.mkdir()
    try:
        assert sweep(tmp_path, ".x-") == 2
        assert held.is_dir() and young.is_dir() and not left.exists() and not old.exists()
    finally:
        live.kill(), live.wait()
    assert sweep(tmp_path, ".x-") == 1 and not held.exists()
    with spool(tmp_path, ".x-") as d:
        fd = os.open(d / OWNER, os.O_RDWR)
        with pytest.raises(BlockingIOError):  # held by its owner, this process
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(fd)
    assert not d.exists() and not list(tmp_path.glob(".trash-*"))


def test_discard_removes_a_full_folder_and_leaves_nothing_that_looks_whole(tmp_path):
    v = tmp_path / "venv"
    (v / "lib" / "deep").mkdir(parents=True)
    (v / "lib" / "deep" / "f").write_text("x")
    discard(v)
    assert not v.exists() and not list(tmp_path.iterdir())
    discard(v)  # nothing there: nothing to do


_WRITER = (
    "import sys, time; from kit.core.atomic import atomic_path\n"
    "with atomic_path(sys.argv[1]) as t:\n"
    "    t.write_bytes(b'1' * 1000); print(t.name, flush=True); time.sleep(300)\n"
)


def _two_writers(a: Path, b: Path, kit_home) -> tuple:
    """A writer of ``a`` that lives on and one of ``b`` killed midway: (the live one's process,
    its temporary file, the killed one's temporary file)."""
    env = _env(kit_home)
    live = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(a)], stdout=subprocess.PIPE, text=True, env=env
    )
    held = a.parent / live.stdout.readline().strip()
    dead = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(b)], stdout=subprocess.PIPE, text=True, env=env
    )
    left = b.parent / dead.stdout.readline().strip()
    dead.kill(), dead.wait()
    return live, held, left


def test_an_atomic_write_s_temporary_file_is_swept_only_once_its_writer_is_gone(tmp_path, kit_home):
    """A live writer's file stays (its lock is held), a killed one's goes; an older kit's
    (no pid, no lock) goes once an hour old, and only under KIT_HOME; a user's own file, or
    one that merely looks like an older kit's in a folder of theirs, is never touched."""
    from kit.core.atomic import atomic_path, sweep_tmp

    ours, theirs = kit_home / "datasets", tmp_path / "mine"
    for d in (ours, theirs):
        d.mkdir(parents=True)
    live, held, left = _two_writers(ours / "a.json", ours / "b.json", kit_home)
    hour_ago = time.time() - 7200
    for d in (ours, theirs):
        for name in (".c.json.abcd1234.tmp", ".young.json.abcd1234.tmp", ".notes.tmp"):
            (d / name).write_text("x")
        os.utime(d / ".c.json.abcd1234.tmp", (hour_ago, hour_ago))
        os.utime(d / ".notes.tmp", (hour_ago, hour_ago))
    try:
        assert held.is_file() and left.is_file() and held.name.startswith(".a.json.kit")
        assert sweep_tmp(ours) == 2 and sweep_tmp(theirs) == 0
        assert sorted(p.name for p in ours.iterdir()) == sorted(
            [held.name, ".young.json.abcd1234.tmp", ".notes.tmp"]
        )
        assert len(list(theirs.iterdir())) == 3
    finally:
        live.kill(), live.wait()
    assert sweep_tmp(ours) == 1 and not held.exists()
    with atomic_path(ours / "d.json") as t:  # this process's own write in progress: kept
        t.write_text("{}")
        assert sweep_tmp(ours) == 0 and t.exists()
    assert (ours / "d.json").read_text() == "{}"


def test_every_temporary_file_kit_writes_is_one_the_sweep_knows():
    """Files kit writes whole go through kit.core.atomic (a name and lock the sweep reads); a
    temporary file made anywhere else would be left by a kill -9 with no one to sweep it
    (tempfile.TemporaryFile, kit.data.sink's spill, has no name: nothing of it outlives kit)."""
    makers = ("mkstemp(", "NamedTemporaryFile(")
    found = [
        str(f.relative_to(ROOT))
        for f in (ROOT / "kit").rglob("*.py")
        if any(m in f.read_text() for m in makers)
    ]
    assert found == ["kit/core/atomic.py"]


def test_a_write_outside_kit_home_is_said_never_swept_on_a_note_s_word(tmp_path, kit_home, capsys):
    """Issue 54 item 4: a note under KIT_HOME names a folder outside it, and anyone who can
    write KIT_HOME can plant one (one made `kit runs` delete a user's file). So no command
    removes anything outside KIT_HOME on a note's word: `kit store check` names what a killed
    write left there (exit 1), `--repair` forgets the note, and the next write into that folder,
    which the user named, sweeps it. A note that left nothing is forgotten by any command."""
    from kit.cli import main
    from kit.core.atomic import NOTES, atomic_path
    from kit.core.sweeps import sweep_store

    mine = tmp_path / "mine"
    mine.mkdir()
    live, held, left = _two_writers(mine / "a.kit", mine / "b.kit", kit_home)
    # a planted note: a user's file of a kit-like name in a folder no write of kit's went to
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    keep = elsewhere / ".keep.txt.kit999999-abc.tmp"
    keep.write_text("the user's")
    (kit_home / NOTES / "999999-abcd.note").write_bytes(os.fsencode(elsewhere / "keep.txt"))
    try:
        assert sweep_store(kit_home) == 0 and main(["runs"]) == 0
        assert keep.read_text() == "the user's" and held.is_file() and left.is_file()
        capsys.readouterr()
        assert main(["store", "check"]) == 1
        out = capsys.readouterr().out
        assert str(keep) in out and str(left) in out and str(held) not in out, out
        assert main(["store", "check", "--repair"]) == 0
        assert keep.read_text() == "the user's" and left.is_file()
        assert len(os.listdir(kit_home / NOTES)) == 1  # the live writer's note stays
    finally:
        live.kill(), live.wait()
    with atomic_path(mine / "c.kit") as t:  # a write into the folder the user named sweeps it
        t.write_text("{}")
    assert sorted(os.listdir(mine)) == ["c.kit"] and keep.exists()
    sweep_store(kit_home)  # the dead writer's note, now that its file is gone, is forgotten
    assert os.listdir(kit_home / NOTES) == []


@pytest.mark.slow
def test_kill_9_of_export_leaves_a_temporary_file_the_next_command_sweeps(tmp_path):
    """`kit export` killed while it writes its bundle into a folder of the user's: the file's
    temporary copy is left beside it; `kit store check` names it (nothing outside KIT_HOME is
    removed on a note's word: issue 54), and the next export into that folder removes it."""
    from stored import budget_store

    home = tmp_path / "h"
    budget_store(tmp_path, home=home)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "kit", "export", "--out", str(out / "lab.kit"), "--arrays"]

    def temporary():
        return (
            [n for n in os.listdir(out) if n.startswith(".lab.kit.") and n.endswith(".tmp")]
            if out.is_dir()
            else []
        )

    for _ in range(40):  # the file is written in a fraction of a second: kill where it is seen
        p = subprocess.Popen(
            argv, env=_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        caught = _wait(temporary, p, 60)
        p.kill()
        p.wait()
        if caught and temporary():
            break
        (out / "lab.kit").unlink(missing_ok=True)
    assert temporary(), "the export ended before its temporary file was seen, every time"
    assert not (out / "lab.kit").exists()
    _clean(
        subprocess.run(
            [sys.executable, "-m", "kit", "runs"], env=_env(home), capture_output=True, text=True
        )
    )
    left = temporary()
    assert left and len(os.listdir(home / "writes")) == 1
    check = subprocess.run(
        [sys.executable, "-m", "kit", "store", "check"],
        env=_env(home),
        capture_output=True,
        text=True,
    )
    assert check.returncode == 1 and left[0] in check.stdout, check.stdout
    _clean(subprocess.run(argv, env=_env(home), capture_output=True, text=True))
    assert sorted(os.listdir(out)) == ["lab.kit"]


# -- kit import ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_kill_9_of_import_leaves_a_spool_the_next_import_sweeps(tmp_path):
    from stored import budget_store

    from kit.app.bundle import export

    st = budget_store(tmp_path, home=tmp_path / "a")
    big = tmp_path / "lab.kit"
    export(st, [r.id for r in st.runs()], big, arrays=True)
    home = tmp_path / "b"
    home.mkdir()
    caught = 0
    for _ in range(40):  # the spool lives for a fraction of a second: kill where it is seen
        p = subprocess.Popen(
            [sys.executable, "-m", "kit", "import", str(big)],
            env=_env(home),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if _wait(lambda: any(n.startswith(".bundle-") for n in os.listdir(home)), p, 60):
            p.kill()
            caught += 1
        p.wait()
        if caught >= 2:
            break
    assert caught >= 2, "the import ended before its spool was seen, every time"
    assert [n for n in os.listdir(home) if n.startswith(".bundle-")]  # what kill -9 left
    assert _none_left(home) == []
    out = subprocess.run(
        [sys.executable, "-m", "kit", "import", str(big)],
        env=_env(home),
        capture_output=True,
        text=True,
    )
    _clean(out)
    assert not [n for n in os.listdir(home) if n.startswith((".bundle-", ".trash-"))]


@pytest.mark.slow
def test_every_command_that_opens_the_store_sweeps_a_killed_import_s_spool(tmp_path):
    """A killed import's .bundle- spool (its arrays: up to a bundle's size) waited for the next
    import or compare; now any command that opens the store removes it, and never a live
    import's (its lock is held)."""
    home = tmp_path / "h"
    code = (
        "import sys, time; from kit.core.spools import BUNDLE, spool\n"
        "with spool(sys.argv[1], BUNDLE) as d:\n"
        "    (d / 'a.npy').write_bytes(b'1' * 100_000); print(d, flush=True); time.sleep(300)\n"
    )

    def importing():
        p = subprocess.Popen(
            [sys.executable, "-c", code, str(home)],
            stdout=subprocess.PIPE,
            text=True,
            env=_env(tmp_path / "other"),
        )
        return p, Path(p.stdout.readline().strip())

    live, held = importing()
    killed, left = importing()
    killed.kill(), killed.wait()  # as kill -9 of `kit import` leaves it
    try:
        assert left.is_dir() and held.is_dir()
        for argv in (["runs"], ["export", "--out", str(tmp_path / "x.kit")]):
            out = subprocess.run(
                [sys.executable, "-m", "kit", *argv], env=_env(home), capture_output=True, text=True
            )
            assert "Traceback" not in out.stderr, out.stderr
            assert not left.exists() and held.is_dir(), argv
            killed, left = importing()
            killed.kill(), killed.wait()
    finally:
        live.kill(), live.wait()


# -- kit data homology --------------------------------------------------------------------------
@pytest.fixture
def big_home(tmp_path):
    """A KIT_HOME holding 3,000 random proteins of 300 residues, "big": a search long enough
    to be killed inside."""
    from kit.data.dataset import make_dataset, save_dataset

    home = tmp_path / "h"

    rng = np.random.default_rng(1)
    amino = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    n = 3000
    seqs = ["".join(rng.choice(amino, 300)) for _ in range(n)]
    old = os.environ.get("KIT_HOME")
    os.environ["KIT_HOME"] = str(home)
    try:
        save_dataset(
            make_dataset(
                "big",
                "import:big.tsv",
                [f"P{i:05d}" for i in range(n)],
                seqs,
                rng.integers(0, 2, n),
                ["Human"] * n,
            )
        )
    finally:
        if old is None:
            os.environ.pop("KIT_HOME")
        else:
            os.environ["KIT_HOME"] = old
    return home


def _homology_killed(home, sig):
    """`kit data homology big` started and sent ``sig`` once mmseqs runs in its work folder."""
    work = home / "cache" / "mmseqs"
    p = subprocess.Popen(
        [sys.executable, "-m", "kit", "data", "homology", "big"],
        env=_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = _wait(
        lambda: (
            work.is_dir()
            and any(n.startswith("run-") for n in os.listdir(work))
            and _tool_running(home, "easy-")
        ),
        p,
        120,
    )
    assert seen, "mmseqs finished before it was seen"
    p.send_signal(sig)
    out, err = p.communicate()
    return p.returncode, err, work


@pytest.mark.soak
@needs_mmseqs
def test_kill_9_of_data_homology_ends_mmseqs_and_the_next_run_sweeps_its_folder(big_home):
    home = big_home
    code, _, work = _homology_killed(home, signal.SIGKILL)
    assert code == -signal.SIGKILL
    assert _none_left(home) == []  # mmseqs and its workflow's children too
    assert [n for n in os.listdir(work) if n.startswith("run-")]  # left by the kill
    out = subprocess.run(
        [sys.executable, "-m", "kit", "data", "homology", "big"],
        env=_env(home),
        capture_output=True,
        text=True,
    )
    _clean(out)
    assert not [n for n in os.listdir(work) if n.startswith(("run-", ".trash-"))]


@pytest.mark.slow
@needs_mmseqs
def test_sigterm_of_data_homology_says_nothing_half_made_was_stored_and_leaves_nothing(big_home):
    home = big_home
    code, err, work = _homology_killed(home, signal.SIGTERM)
    assert code == 143
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith(
            "kit: terminated; stopped: nothing of the search or clustering it was making was stored"
        )
    )
    assert "finished runs" not in err and "Traceback" not in err
    assert _none_left(home) == []
    assert not [n for n in os.listdir(work) if n.startswith("run-")]


# -- a probe stack's build (the release scan's step that runs uv sync) --------------------------
_BUILD = """
import sys
from kit.envs.catalogue import definitions
from kit.envs.kinds import stack_kind
from kit.envs.platforms import detect
from kit.envs.probes import prepare
name, why = prepare(definitions()[sys.argv[1]], "scikit-learn", "1.6.0", detect())
assert name, why
print(name, flush=True)
print("built" if stack_kind(name).build(detect()) else "kept", flush=True)
"""


@pytest.mark.slow
def test_kill_9_of_a_probe_build_ends_uv_and_the_next_build_rebuilds_cleanly(tmp_path):
    """uv sync killed with kit (kill -9) leaves a half-built venv: the next build removes it,
    however full, and builds it whole (before: uv kept writing, and the next `kit explain`
    ended in an internal error, OSError "Directory not empty")."""
    from kit.envs.kinds import stack_kind
    from kit.envs.platforms import detect

    cat = one_stack_catalogue(tmp_path / "catalogue")
    home = tmp_path / "h"
    env = _env(home, KIT_STACKS_DIR=str(cat))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_HOME", str(home))
        mp.setenv("KIT_STACKS_DIR", str(cat))
        if stack_kind(BASE).status(detect())[0] == "unavailable":
            pytest.skip(stack_kind(BASE).status(detect())[1])
    p = subprocess.Popen(
        [sys.executable, "-c", _BUILD, BASE],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    name = p.stdout.readline().strip()
    assert name.startswith("probe-"), p.stderr.read()
    site = home / "probes" / name / "venv" / "lib"
    seen = _wait(
        lambda: (
            _tool_running(home, "sync")
            and site.is_dir()
            and any(site.glob("python*/site-packages/*"))
        ),
        p,
        300,
    )
    assert seen, "uv sync finished before it was seen"
    p.kill()
    p.wait()
    assert _none_left(home) == []  # uv sync with it
    assert (home / "probes" / name / "venv").is_dir()  # half-built, no marker
    out = subprocess.run(
        [sys.executable, "-c", _BUILD, BASE], env=env, capture_output=True, text=True
    )
    _clean(out)
    assert out.stdout.split() == [name, "built"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_HOME", str(home))
        mp.setenv("KIT_STACKS_DIR", str(cat))
        assert stack_kind(name).status(detect())[0] == "built"
    assert not list((home / "probes").rglob(".trash-*"))


@pytest.mark.soak
def test_kill_9_of_a_release_scan_then_the_same_kit_explain_finishes_clean(tiny, tmp_path):
    """`kit explain --library` killed while uv sync builds a probe stack: no uv left, and the
    same command then builds the half-built probe whole and scans (before: an internal error,
    OSError "Directory not empty")."""
    from kit.data.dataset import save_dataset
    from kit.envs.kinds import stack_kind
    from kit.envs.platforms import detect
    from kit.runs.executing.runner import run_all
    from kit.runs.planning.options import PlanOptions
    from kit.runs.planning.plan import plan
    from kit.runs.store import Store

    cat = one_stack_catalogue(tmp_path / "catalogue")
    home = tmp_path / "h"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_HOME", str(home))
        mp.setenv("KIT_STACKS_DIR", str(cat))
        kind = stack_kind(BASE)
        if kind.status(detect())[0] == "unavailable":
            pytest.skip(kind.status(detect())[1])
        kind.build(detect())
        store = Store()
        pair = plan(
            "seed:models", tiny.sha256, PlanOptions(threads=(1,), seeds=(0, 1)), stack=BASE
        )[0]
        run_all([pair.a, pair.b], tiny, store)
        store.add_pairs([pair])
        save_dataset(tiny)
    argv = [
        sys.executable,
        "-m",
        "kit",
        "explain",
        "seed:models",
        "--library",
        "scikit-learn",
        "1.5.2",
        "1.6.0",
        "--yes",
    ]
    env = _env(home, KIT_STACKS_DIR=str(cat))
    p = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    probes = home / "probes"
    seen = _wait(
        lambda: _tool_running(home, "sync") and any(probes.glob("probe-*/venv/lib")), p, 300
    )
    assert seen, f"no uv sync was seen: {p.stderr.read() if p.poll() is not None else ''}"
    p.kill()
    p.wait()
    assert _none_left(home) == []
    out = subprocess.run(argv, env=env, capture_output=True, text=True)
    _clean(out)
    assert "scikit-learn 1.5.2 -> 1.6.0 (2 of 2 releases scanned)" in out.stdout
    assert not list(probes.rglob(".trash-*")) and not list(probes.glob(".probe-*"))
