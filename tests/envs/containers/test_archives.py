"""Images in bundles (kit export --image, kit compare --trust-image; kit.envs.containers.archives
and .loaded): an OCI archive is read as untrusted before any runtime sees it, a carried image is
run only when asked and only if it is the image its recipe names, and code in a forged image
reaches no network and writes nothing outside its run's folder."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import socket
import subprocess
import tarfile
import threading
import time
from pathlib import Path

import containers
import pytest

from kit.cli import main
from kit.core.errors import KitError
from kit.core.spec import RunSpec
from kit.envs.containers import archives, images, loaded
from tests.app.test_bundle_derived import members, write

STACK = containers.STACK


# -- archives, read as untrusted (no runtime needed) ---------------------------------------------


def _blob(data: bytes) -> tuple:
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def _layer_tar(files: dict) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def oci(path: Path, layer_files=None, edit=lambda parts: parts) -> dict:
    """A small OCI archive as `podman save --format oci-archive` writes one (a gzip layer, a
    config naming its diff_id, a manifest, an index naming no reference); ``edit(parts)`` may
    change any part first. Returns the claim a recipe would make of it."""
    plain = _layer_tar(layer_files or {"bin/tool": b"#!/bin/sh\necho hi\n"})
    diff_id = "sha256:" + hashlib.sha256(plain).hexdigest()
    layer = _blob(gzip.compress(plain, mtime=0))
    config = _blob(
        json.dumps(
            {
                "architecture": "amd64",
                "os": "linux",
                "rootfs": {"type": "layers", "diff_ids": [diff_id]},
            }
        ).encode()
    )
    manifest = _blob(
        json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {
                    "mediaType": "application/vnd.oci.image.config.v1+json",
                    "digest": config[0],
                    "size": len(config[1]),
                },
                "layers": [
                    {
                        "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                        "digest": layer[0],
                        "size": len(layer[1]),
                    }
                ],
            }
        ).encode()
    )
    index = json.dumps(
        {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": manifest[0],
                    "size": len(manifest[1]),
                }
            ],
        }
    ).encode()
    parts = {
        "oci-layout": b'{"imageLayoutVersion": "1.0.0"}',
        "index.json": index,
        **{f"blobs/sha256/{d[7:]}": data for d, data in (layer, config, manifest)},
    }
    parts = edit(parts)
    with tarfile.open(path, "w") as t:
        for name, data in parts.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return {"stack": "s@container", "id": config[0], "diff_ids": [diff_id]}


def test_a_well_formed_archive_is_the_image_its_recipe_names(tmp_path):
    claim = oci(tmp_path / "a.tar")
    got = archives.check(tmp_path / "a.tar", claim)
    assert got["id"] == claim["id"] and got["diff_ids"] == claim["diff_ids"]


def _swap_blob(old_data: bytes, new_data: bytes):
    """A blob's bytes changed and renamed to their new digest (a forger's consistent edit)."""

    def edit(parts):
        out = {}
        for name, data in parts.items():
            if data == old_data:
                name, data = f"blobs/sha256/{hashlib.sha256(new_data).hexdigest()}", new_data
            out[name] = data
        return out

    return edit


def _layer_changed(parts):
    """The layer's contents changed and every digest that names it made consistent, but the
    config's diff_id (the image id's) left: the layer is not the one the id names."""
    manifest_name = next(n for n, d in parts.items() if b'"schemaVersion": 2, "mediaType"' in d)
    manifest = json.loads(parts[manifest_name])
    old = manifest["layers"][0]["digest"][7:]
    new = gzip.compress(_layer_tar({"bin/tool": b"#!/bin/sh\ncurl evil\n"}), mtime=0)
    new_d = hashlib.sha256(new).hexdigest()
    manifest["layers"][0].update(digest="sha256:" + new_d, size=len(new))
    m = json.dumps(manifest).encode()
    m_d = hashlib.sha256(m).hexdigest()
    index = json.loads(parts["index.json"])
    index["manifests"][0].update(digest="sha256:" + m_d, size=len(m))
    out = {n: d for n, d in parts.items() if n not in (manifest_name, f"blobs/sha256/{old}")}
    return {
        **out,
        "index.json": json.dumps(index).encode(),
        f"blobs/sha256/{new_d}": new,
        f"blobs/sha256/{m_d}": m,
    }


def _first_blob(parts, pred):
    return next(n for n, d in parts.items() if n.startswith("blobs/") and pred(d))


@pytest.mark.parametrize(
    "edit, words",
    [
        (
            lambda p: {
                **p,
                _first_blob(p, lambda d: d[:2] == b"\x1f\x8b"): gzip.compress(b"other"),
            },
            "does not hash to its name",
        ),
        (lambda p: {**p, "../escape": b"x"}, "is not part of an OCI image"),
        (lambda p: {**p, "notes.txt": b"x"}, "is not part of an OCI image"),
        (
            lambda p: {**p, "blobs/sha256/" + hashlib.sha256(b"spare").hexdigest(): b"spare"},
            "holds blobs its image does not use",
        ),
        (
            lambda p: {
                **p,
                "index.json": p["index.json"].replace(
                    b"}]}",
                    b', "annotations": {"org.opencontainers.image.ref.name": "localhost/kit-stack:x"}}]}',
                ),
            },
            "names a reference",
        ),
        (lambda p: {**p, "oci-layout": b'{"imageLayoutVersion": "9"}'}, "not an OCI image layout"),
        (lambda p: {k: v for k, v in p.items() if k != "index.json"}, "index.json is not an OCI"),
        (_layer_changed, "contents are not its diff_id"),
    ],
    ids=[
        "blob-bytes",
        "traversal",
        "stray",
        "spare-blob",
        "reference",
        "layout",
        "no-index",
        "layer-contents",
    ],
)
def test_a_forged_or_damaged_archive_is_one_line(tmp_path, edit, words):
    claim = oci(tmp_path / "a.tar", edit=edit)
    with pytest.raises(KitError, match=words):
        archives.check(tmp_path / "a.tar", claim)


def test_an_archive_of_another_image_than_its_recipe_names_is_not_run(tmp_path):
    claim = oci(tmp_path / "a.tar")
    with pytest.raises(KitError, match="not .* as its recipe and runs claim; it is not run"):
        archives.check(tmp_path / "a.tar", {**claim, "id": "sha256:" + "e" * 64})
    with pytest.raises(KitError, match="not the ones its recipe names"):
        archives.check(tmp_path / "a.tar", {**claim, "diff_ids": ["sha256:" + "e" * 64]})


def test_a_cut_short_or_oversized_archive_is_one_line(tmp_path, monkeypatch):
    claim = oci(tmp_path / "a.tar", {"big": os.urandom(300_000)})  # cut inside its layer
    data = (tmp_path / "a.tar").read_bytes()
    (tmp_path / "cut.tar").write_bytes(data[: len(data) // 2])
    with pytest.raises(KitError, match="damaged or cut short|is cut short|not in the archive"):
        archives.check(tmp_path / "cut.tar", claim)
    claim = oci(tmp_path / "big.tar", {"big": os.urandom(1_500_000)})
    monkeypatch.setenv("KIT_BUNDLE_MAX_IMAGE_MIB", "1")
    with pytest.raises(KitError, match="above the 1 MiB cap"):
        archives.check(tmp_path / "big.tar", claim)


def test_links_and_devices_in_an_archive_are_refused(tmp_path):
    claim = oci(tmp_path / "a.tar")
    with tarfile.open(tmp_path / "a.tar", "a") as t:
        info = tarfile.TarInfo("blobs/sha256/" + "0" * 64)
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(info)
    with pytest.raises(KitError, match="is not a regular file"):
        archives.check(tmp_path / "a.tar", claim)


def test_a_recipe_carries_what_names_the_image_and_no_runtime():
    rec = {
        "id": "sha256:" + "a" * 64,
        "diff_ids": ["sha256:" + "b" * 64],
        "base": "bookworm",
        "base_id": "sha256:" + "c" * 64,
        "lock_sha256": "d" * 64,
        "interpreter": "/py/bin/python",
        "python_prefix": "/py",
        "runtime": {"options": ["--root", "/x"]},
        "built": "today",
        "build_s": 3.0,
        "os_packages": 90,
    }
    carried = images.carried(rec)
    assert "runtime" not in carried and "built" not in carried and "build_s" not in carried
    assert carried["id"] == rec["id"] and carried["os_packages"] == []


def test_what_differs_between_two_recipes_is_said_first_by_its_cause():
    a = {
        "id": "sha256:" + "a" * 64,
        "lock_sha256": "1" * 64,
        "interpreter": "/py",
        "base_id": "sha256:" + "b" * 64,
        "diff_ids": ["sha256:" + "c" * 64],
        "os_packages": [["libc6", "2.36-9+deb12u9"], ["zlib1g", "1:1.2.13"]],
    }
    assert "the stack's lock differs" in images.recipe_difference(a, {**a, "lock_sha256": "2" * 64})
    assert "the interpreter differs" in images.recipe_difference(a, {**a, "interpreter": "/other"})
    assert "layer 1 of 1 differs" in images.recipe_difference(
        a, {**a, "diff_ids": ["sha256:" + "d" * 64]}
    )


# -- real podman: a bundle's image, rebuilt, trusted or forged -----------------------------------


@pytest.fixture
def image_bundle(images_home, tmp_path):
    """A bundle of a container pair whose image travels (kit export --image --arrays)."""
    assert main(containers.CONTAINER_PAIR) == 0
    out = tmp_path / "lab.kit"
    assert (
        main(
            [
                "export",
                "--n",
                "120",
                "--factor",
                "container",
                "--out",
                str(out),
                "--arrays",
                "--image",
            ]
        )
        == 0
    )
    return out


def _another_home(tmp_path, monkeypatch, name: str) -> Path:
    home = tmp_path / name
    monkeypatch.setenv("KIT_HOME", str(home))
    return home


def test_trust_image_reruns_in_the_carried_image(
    image_bundle, images_home, tmp_path, monkeypatch, capsys
):
    """In another KIT_HOME with no image built, --trust-image checks the archive, loads it
    under a name of its own and reruns in it: the image is held fixed."""
    built = images.record(STACK, "bookworm")
    doc = json.loads(members(image_bundle)["bundle.json"])
    recipe = doc["images"][f"{STACK}@container"]
    assert recipe["archive"] and recipe["id"] == built["id"] and "runtime" not in recipe
    _another_home(tmp_path, monkeypatch, "other")
    capsys.readouterr()
    assert main(["compare", str(image_bundle), "--trust-image", "--yes"]) == 0
    captured = capsys.readouterr()
    out = " ".join(captured.out.split())
    assert "reproduced: all 2 runs are bitwise identical" in out
    assert "the bundle's own image, checked and loaded (--trust-image)" in out
    assert "Its code runs here (no network" in " ".join(captured.err.split())
    name = loaded.name(STACK, built["id"])
    assert loaded.record(name)["id"] == built["id"]
    assert not images.recorded()  # nothing was built here: the image ran as carried
    assert main(["stacks"]) == 0 and name in capsys.readouterr().out


def test_trust_image_asks_and_without_a_terminal_runs_nothing(
    image_bundle, tmp_path, monkeypatch, capsys
):
    _another_home(tmp_path, monkeypatch, "other")
    capsys.readouterr()
    assert main(["compare", str(image_bundle), "--trust-image"]) != 0
    err = " ".join(capsys.readouterr().err.split())
    assert "Run the bundle's images?" in err and "--yes" in err
    from kit.runs.store import Store

    assert Store().runs() == [] and loaded.recorded() == []


def test_a_bundle_s_image_members_are_checked_against_its_recipes(
    image_bundle, tmp_path, monkeypatch, capsys
):
    ms = members(image_bundle)
    doc = json.loads(ms["bundle.json"])
    name = f"{STACK}@container"
    archive = next(n for n in ms if n.startswith("images/"))
    _another_home(tmp_path, monkeypatch, "other")
    cases = [
        (
            "no-member",
            {n: d for n, d in ms.items() if n not in (archive, "MANIFEST.json")},
            "says the bundle carries its image, but MANIFEST.json lists none",
        ),
        (
            "undeclared",
            {
                **{n: d for n, d in ms.items() if n != "MANIFEST.json"},
                "bundle.json": json.dumps(
                    {**doc, "images": {name: {**doc["images"][name], "archive": False}}}
                ).encode(),
            },
            "is not an array of its runs",
        ),
        (
            "other-id",
            {
                **{n: d for n, d in ms.items() if n != "MANIFEST.json"},
                "bundle.json": json.dumps(
                    {**doc, "images": {name: {**doc["images"][name], "id": "sha256:" + "e" * 64}}}
                ).encode(),
            },
            "but its runs ran in",
        ),
        (
            "stranger",
            {
                **{n: d for n, d in ms.items() if n != "MANIFEST.json"},
                "bundle.json": json.dumps(
                    {**doc, "images": {**doc["images"], "np1-sk191@container": doc["images"][name]}}
                ).encode(),
            },
            "is of no container stack its runs ran in",
        ),
    ]
    for what, parts, words in cases:
        bad = write(parts, tmp_path / f"{what}.kit")
        capsys.readouterr()
        assert main(["compare", str(bad), "--trust-image", "--yes"]) == 1, what
        err = capsys.readouterr().err
        assert words in " ".join(err.split()) and "Traceback" not in err, (what, err)
    assert loaded.recorded() == []


ESCAPE = """
import os, socket, sys
for host in ("127.0.0.1", "%(ip)s"):
    try:
        socket.create_connection((host, %(port)d), timeout=2)
    except OSError:
        pass
for path in %(paths)r:
    try:
        with open(path, "w") as f:
            f.write("escaped")
    except OSError:
        pass
# then a line on kit's answer channel before the real worker's: proof that it ran, and what
# kit does with an answer that is not one
os.write(int(os.environ.get("KIT_CHANNEL", "3")), b"forged: escaped nothing\\n")
"""


def _host_ip() -> str:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.255.255.255", 1))  # no packet is sent: the route's source address
        return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    finally:
        s.close()


def _forge_image(genuine: str, tmp_path: Path, port: int, paths: list) -> dict:
    """The genuine image with its worker's interpreter replaced by one that first tries to
    reach a server on the host and to write outside its run, then runs the real one."""
    from kit.envs.containers.runtime import runtime

    ctx = tmp_path / "forge"
    ctx.mkdir()
    (ctx / "escape.py").write_text(ESCAPE % {"ip": _host_ip(), "port": port, "paths": paths})
    py = images.PYTHON
    (ctx / "Containerfile").write_text(
        f"FROM {genuine}\nCOPY escape.py /escape.py\n"
        f"RUN mv {py} {py}-real && printf '#!/bin/sh\\n{py}-real /escape.py\\n"
        f'exec {py}-real "$@"\\n\' > {py} && chmod 755 {py}\n'
    )
    rt = runtime()
    tag = "localhost/kit-test-forged:latest"
    proc = rt.call(
        "build",
        "--network=none",
        "--pull=never",
        "-t",
        tag,
        "-f",
        str(ctx / "Containerfile"),
        str(ctx),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(rt.call("image", "inspect", tag, timeout=60).stdout)[0]
    forged = {
        "id": got["Id"] if got["Id"].startswith("sha256:") else "sha256:" + got["Id"],
        "diff_ids": got["RootFS"]["Layers"],
    }
    archive = tmp_path / "forged.tar"
    archives.save(rt, forged["id"], archive)
    rt.call("rmi", "-f", tag, timeout=120)  # only its archive is left: the bundle carries it
    return {**forged, "archive": archive}


def _forged_bundle(src: Path, dst: Path, forged: dict) -> Path:
    """The bundle rewritten as a forger would: its container runs, its recipe and its archive
    all name the forged image, every id and digest consistent."""
    ms = members(src)
    doc = json.loads(ms.pop("bundle.json"))
    ms.pop("MANIFEST.json")
    name = f"{STACK}@container"
    renamed = {}
    for r in doc["runs"]:
        if r["spec"]["stack"] != name:
            continue
        spec = RunSpec.from_dict(r["spec"]).with_(stack_id=forged["id"])
        renamed[r["id"]] = spec.run_id
        r.update(id=spec.run_id, spec=json.loads(spec.to_json()))
        r["manifest"]["image"].update(id=forged["id"], diff_ids=forged["diff_ids"])
    for p in doc["pairs"]:
        p.update(a=renamed.get(p["a"], p["a"]), b=renamed.get(p["b"], p["b"]))
    doc["images"][name].update(id=forged["id"], diff_ids=forged["diff_ids"])
    ms = {n: d for n, d in ms.items() if not n.startswith("images/")}
    ms[f"images/{forged['id'][7:]}.tar"] = forged["archive"].read_bytes()
    return write({"bundle.json": json.dumps(doc).encode(), **ms}, dst)


def test_a_forged_image_is_never_run_unasked_and_confined_when_trusted(
    image_bundle, images_home, tmp_path, monkeypatch, capsys
):
    """A forger's bundle whose runs, recipe and archive all name a forged image. Without
    --trust-image kit rebuilds from the recipe: another id, a finding, the forged code never
    runs. With it, the forged code runs (its line on kit's channel is refused as no answer),
    and reaches no server on the host and writes nothing outside its run's folder (kit's home,
    its datasets, pipelines and logs, the worker's code)."""
    server = socket.socket()
    server.bind(("0.0.0.0", 0))
    server.listen()
    server.settimeout(0.2)
    accepted, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                accepted.append(server.accept())
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    homes = [tmp_path / "rebuilt", tmp_path / "trusting"]
    from kit.envs.launch import worker_root

    paths = [
        str(h / sub / "escaped")
        for h in homes
        for sub in ("", "datasets", "pipelines", "logs", "tmp")
    ]
    paths += [str(Path(worker_root()) / "escaped"), "/escaped", "/tmp/escaped"]
    genuine = images.record(STACK, "bookworm")
    forged = _forge_image(genuine["id"], tmp_path, server.getsockname()[1], paths)
    bad = _forged_bundle(image_bundle, tmp_path / "forged.kit", forged)
    try:
        # without --trust-image: rebuilt from the recipe (the records shared: built already)
        containers.share(images_home, homes[0])
        _another_home(tmp_path, monkeypatch, "rebuilt")
        capsys.readouterr()
        assert main(["compare", str(bad), "--yes"]) == 0
        out = " ".join(capsys.readouterr().out.split())
        assert "a FINDING" in out and genuine["id"][:19] in out and forged["id"][:19] in out
        assert "not run (kit compare --trust-image runs it)" in out
        assert loaded.recorded() == []
        # with it: the forged code runs, confined, and its answer is refused as not one
        _another_home(tmp_path, monkeypatch, "trusting")
        capsys.readouterr()
        assert main(["compare", str(bad), "--trust-image", "--yes"]) == 1
        err = " ".join(capsys.readouterr().err.split())
        assert "forged: escaped nothing" in err and "not an answer" in err, err
        assert "Traceback" not in err
        assert loaded.record(loaded.name(STACK, forged["id"]))
    finally:
        time.sleep(0.5)
        stop.set()
        server.close()
        subprocess.run(
            ["podman", "rmi", "-f", loaded.tag(STACK, forged["id"])],
            capture_output=True,
            timeout=120,
        )
    assert accepted == []
    assert [p for p in paths if Path(p).exists()] == []
