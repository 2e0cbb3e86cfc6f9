"""kit.envs.containers.pythons: the interpreter of an image where the host's cannot be copied in
(a Mac, another architecture), fetched from a python-build-standalone mirror and pinned by
sha256. A real local HTTP server stands in for the mirror; the Mac's Mach-O interpreter and an
arm64 ELF are real file headers; uv's own download list names the release."""

from __future__ import annotations

import hashlib
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kit.core.errors import Failed, KitError
from kit.envs.containers import pythons
from kit.envs.containers.pythons import Pin


class Mirror:
    """A local python-build-standalone mirror: {path: bytes}, and the paths asked for."""

    def __init__(self):
        self.files: dict = {}
        self.asked: list = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                outer.asked.append(self.path)
                body = outer.files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def publish(self, p: Pin, archive: bytes, listed: str | None = None) -> None:
        """``archive`` as ``p``'s file, and its release's SHA256SUMS naming ``listed`` (the
        archive's own sha256 by default)."""
        digest = listed or hashlib.sha256(archive).hexdigest()
        self.files[f"/{p.release}/{p.file.replace('+', '%2B')}"] = archive
        self.files[f"/{p.release}/SHA256SUMS"] = (
            f"{'1' * 64}  cpython-other.tar.gz\n{digest}  {p.file}\n"
        ).encode()


@pytest.fixture
def mirror(monkeypatch, kit_home):
    m = Mirror()
    monkeypatch.setenv("UV_PYTHON_INSTALL_MIRROR", m.url)
    yield m
    m.server.shutdown()


def _elf(tmp_path: Path, machine: int) -> Path:
    """A file that begins as a little-endian ELF executable for ``machine`` does."""
    f = tmp_path / f"python-{machine}"
    f.write_bytes(
        b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + b"\x02\x00" + machine.to_bytes(2, "little")
    )
    return f


def test_the_host_interpreter_is_copied_only_where_it_is_a_linux_binary_of_the_images_arch(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("KIT_IMAGE_PYTHON", raising=False)
    x86, arm = _elf(tmp_path, 62), _elf(tmp_path, 183)
    assert pythons.not_copyable(str(x86), "x86_64", "Linux") is None
    assert pythons.not_copyable(str(arm), "aarch64", "Linux") is None
    assert "is not built for x86_64, the images' architecture" in pythons.not_copyable(
        str(arm), "x86_64", "Linux"
    )
    macho = tmp_path / "python3.12"
    macho.write_bytes(bytes.fromhex("cffaedfe0c000001") + b"\x00" * 24)  # arm64 Mach-O
    assert "is not an ELF binary" in pythons.not_copyable(str(macho), "aarch64", "Linux")
    # on a Mac the host interpreter never goes in, whatever it is
    assert pythons.not_copyable(str(macho), "aarch64", "Darwin") == (
        "on macOS the interpreter is no Linux binary"
    )
    monkeypatch.setenv("KIT_IMAGE_PYTHON", "fetch")
    assert "KIT_IMAGE_PYTHON=fetch" in pythons.not_copyable(str(x86), "x86_64", "Linux")
    monkeypatch.setenv("KIT_IMAGE_PYTHON", "copy")
    assert pythons.not_copyable(str(macho), "aarch64", "Darwin") is None
    monkeypatch.setenv("KIT_IMAGE_PYTHON", "yes")
    with pytest.raises(KitError, match="KIT_IMAGE_PYTHON is 'copy' or 'fetch', not 'yes'"):
        pythons.not_copyable(str(x86), "x86_64", "Linux")


def test_uv_names_the_release_of_a_version():
    assert pythons.release_of("3.12.1") == ("20240107", "install_only")
    release, flavour = pythons.release_of("3.13.0")
    assert release.isdigit() and len(release) == 8 and flavour == "install_only_stripped"
    with pytest.raises(
        Failed, match="uv knows no python-build-standalone build of CPython 3.12.99"
    ):
        pythons.release_of("3.12.99")


def test_a_pin_is_read_only_in_its_own_form():
    good = {
        "version": "3.12.1",
        "release": "20240107",
        "arch": "aarch64",
        "flavour": "install_only",
        "sha256": "a" * 64,
    }
    p = Pin.from_dict(good)
    assert p is not None and p.as_dict() == good
    assert p.file == "cpython-3.12.1+20240107-aarch64-unknown-linux-gnu-install_only.tar.gz"
    assert p.executable == "/opt/kit-python/bin/python3.12"
    for bad in (
        {**good, "release": "../../etc"},
        {**good, "version": "3.12.1 && curl x"},
        {**good, "arch": "riscv64"},
        {**good, "flavour": "full"},
        {**good, "sha256": "A" * 64},
        {**good, "more": 1},
        "3.12.1",
    ):
        assert Pin.from_dict(bad) is None, bad


def test_the_pin_is_the_sha256_the_release_lists(mirror):
    release, flavour = pythons.release_of("3.12.1")
    unpinned = Pin("3.12.1", release, "aarch64", flavour, "0" * 64)
    mirror.publish(unpinned, b"an archive")
    p = pythons.pin("3.12.1", "aarch64")
    assert p == Pin(
        "3.12.1", release, "aarch64", flavour, hashlib.sha256(b"an archive").hexdigest()
    )
    # a release whose SHA256SUMS does not name the file: one line, no pin
    mirror.files[f"/{release}/SHA256SUMS"] = b"abc  cpython-other.tar.gz\n"
    with pytest.raises(Failed, match=f"names no sha256 for {unpinned.file.replace('+', '.')}"):
        pythons.pin("3.12.1", "aarch64")


def test_an_archive_is_kept_only_when_its_bytes_are_the_pinned_ones(mirror, kit_home):
    body = b"the interpreter's archive"
    p = Pin("3.12.1", "20240107", "x86_64", "install_only", hashlib.sha256(body).hexdigest())
    cache = kit_home / "containers" / "pythons"
    # the mirror serves other bytes under the pinned name: refused, nothing kept
    mirror.publish(p, b"a forged archive")
    with pytest.raises(Failed, match="is not the pinned archive .* refused, nothing kept"):
        pythons.fetched(p)
    assert not cache.exists() or list(cache.iterdir()) == []
    mirror.publish(p, body)
    path = pythons.fetched(p)
    assert path == cache / f"{p.sha256}.tar.gz" and path.read_bytes() == body
    asked = len(mirror.asked)
    assert pythons.fetched(p) == path and len(mirror.asked) == asked  # kept: not fetched again
    path.write_bytes(b"damaged")  # a damaged cache entry is fetched again, never used
    assert pythons.fetched(p).read_bytes() == body and len(mirror.asked) == asked + 1


def test_no_mirror_is_one_line(monkeypatch, kit_home):
    monkeypatch.setenv("UV_PYTHON_INSTALL_MIRROR", "http://127.0.0.1:9")
    with pytest.raises(KitError, match="cannot reach the python-build-standalone mirror"):
        pythons.pin("3.12.1", "x86_64")


def test_a_kept_archive_is_never_read_through_a_link(mirror, kit_home):
    body = b"the interpreter's archive"
    p = Pin("3.12.1", "20240107", "x86_64", "install_only", hashlib.sha256(body).hexdigest())
    mirror.publish(p, body)
    cache = kit_home / "containers" / "pythons"
    cache.mkdir(parents=True)
    (cache / f"{p.sha256}.tar.gz").symlink_to("/dev/zero")
    # never read (a /dev/zero there was a MemoryError elsewhere), never replaced: one line
    with pytest.raises(KitError, match="is a symbolic link, and kit neither follows nor replaces"):
        pythons.fetched(p)


# -- real podman: an image whose interpreter was fetched ---------------------------------------


def _relocatable(version_python: str, out: Path) -> bytes:
    """python-build-standalone's layout (one top folder, python/) of the stack's own CPython:
    the host's build less its tests and site-packages, its RUNPATH made $ORIGIN/../lib by
    patchelf, so that it starts from any folder as a standalone build does."""
    import shutil
    import subprocess
    import tarfile

    prefix = Path(
        subprocess.run(
            [version_python, "-I", "-c", "import sys; print(sys.base_prefix)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    ).resolve()
    tree = out / "python"
    minor = ".".join(pythons.version_of(version_python).split(".")[:2])
    shutil.copytree(
        prefix,
        tree,
        symlinks=True,
        ignore=shutil.ignore_patterns("test", "site-packages", "__pycache__", "*.a"),
    )
    for exe in (tree / "bin").glob(f"python{minor}*"):
        if exe.is_file() and not exe.is_symlink() and exe.read_bytes()[:4] == b"\x7fELF":
            subprocess.run(["patchelf", "--set-rpath", "$ORIGIN/../lib", str(exe)], check=True)
    archive = out / "python.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        tar.add(tree, arcname="python")
    return archive.read_bytes()


@pytest.fixture
def own_podman_store(tmp_path, monkeypatch, images_home):
    """podman with an image store of its own (CONTAINERS_STORAGE_CONF), the session's base
    loaded into it: this test's stack image never retags the one other tests run."""
    import subprocess

    from kit.envs.containers import bases

    root, run = tmp_path / "podman-root", Path(f"/tmp/kit-ps-{os.getpid()}")
    conf = tmp_path / "storage.conf"
    conf.write_text(f'[storage]\ndriver = "overlay"\ngraphroot = "{root}"\nrunroot = "{run}"\n')
    base_id = bases.record("bookworm")["id"]
    saved = tmp_path / "base.tar"
    subprocess.run(["podman", "save", "-o", str(saved), base_id], check=True, timeout=600)
    monkeypatch.setenv("CONTAINERS_STORAGE_CONF", str(conf))
    subprocess.run(["podman", "load", "-q", "-i", str(saved)], check=True, timeout=600)
    saved.unlink()
    yield images_home
    subprocess.run(["podman", "rm", "-a", "-f"], capture_output=True, timeout=600)
    subprocess.run(["podman", "rmi", "-a", "-f"], capture_output=True, timeout=600)
    subprocess.run(["rm", "-rf", str(root), str(run)], timeout=600)


def test_an_image_with_a_fetched_interpreter_runs_the_venvs_hashes(
    own_podman_store, mirror, monkeypatch, tmp_path, capsys
):
    """KIT_IMAGE_PYTHON=fetch (what a Mac gets): the stack's CPython version fetched from the
    mirror, pinned by its release's sha256, unpacked at /opt/kit-python in a build with no
    network; the runs in that image give the host venv's stage hashes."""
    import shutil
    import sqlite3

    from containers import CONTAINER_PAIR, STACK

    from kit.cli import main
    from kit.envs.containers import images
    from kit.envs.kinds import stack_kind
    from kit.runs.store import Store

    if shutil.which("patchelf") is None:
        pytest.skip("patchelf is not installed (.ci/run installs it)")
    home = own_podman_store
    (home / "containers" / "images" / f"{STACK}@bookworm.json").unlink()
    assert main(["stacks", "build", STACK]) == 0  # its venv: the interpreter whose version
    python = stack_kind(STACK).build_record()["interpreter"]
    version = pythons.version_of(python)
    release, flavour = pythons.release_of(version)
    archive = _relocatable(python, tmp_path)
    pin = Pin(version, release, "x86_64", flavour, hashlib.sha256(archive).hexdigest())
    mirror.publish(pin, archive)
    monkeypatch.setenv("KIT_IMAGE_PYTHON", "fetch")
    assert main(["stacks", "build", STACK, "--container"]) == 0, capsys.readouterr()
    capsys.readouterr()
    rec = images.record(STACK, "bookworm")
    assert rec["python_fetched"] == pin.as_dict() and rec["interpreter"] == pin.executable
    assert rec["python_prefix"] == "/opt/kit-python"
    assert images.carried(rec)["python_fetched"] == pin.as_dict()  # a bundle names it too
    assert main(["stacks"]) == 0  # kit stacks says the interpreter was fetched, and which
    listed = " ".join(capsys.readouterr().out.split())
    assert f"CPython {version} fetched (sha256 {pin.sha256[:12]})" in listed, listed
    assert main(CONTAINER_PAIR) == 0, capsys.readouterr()
    capsys.readouterr()
    (pair,) = [p for p in Store().pairs() if p.factor == "container"]
    db = sqlite3.connect(home / "store.sqlite")
    a, b = (
        dict(db.execute("SELECT stage, sha256 FROM stages WHERE run=?", (r,)).fetchall())
        for r in (pair.a, pair.b)
    )
    assert len(a) > 5 and a == b
    assert Store().run(pair.b).spec.stack_id == rec["id"]


@pytest.mark.slow  # it runs uv (export, then pip install for the image's platform)
def test_a_lock_without_the_images_platform_is_one_line_before_any_build(kit_home):
    """np1-sk152's lock resolves for Linux x86_64 and macOS only: an arm64 image of it (a Mac's
    podman machine) is refused before the build, with the reason."""
    from kit.envs.containers import images
    from kit.envs.kinds import stack_kind

    d = stack_kind("np1-sk152").d
    pin = Pin("3.12.1", "20240107", "aarch64", "install_only", "a" * 64)
    cache = kit_home / "uv-cache"
    with pytest.raises(Failed, match="the lock names no wheel for Linux aarch64 with CPython 3.12"):
        images._wheels_for(pin, d.lock_dir(), str(cache))
    assert not list((kit_home / "tmp").iterdir())  # its work folder is gone


def test_kit_stacks_names_a_fetched_interpreter_beside_the_image():
    from kit.views.tables import image_note

    image = {
        "id": "sha256:" + "ab" * 32,
        "size": 6.28e8,
        "base": "bookworm",
        "release": "Debian GNU/Linux 12",
        "glibc": "2.36",
    }
    assert "fetched" not in image_note(image)
    pin = Pin("3.12.1", "20240107", "aarch64", "install_only", "c" * 64)
    assert image_note({**image, "python_fetched": pin.as_dict()}).endswith(
        "(bookworm, glibc 2.36); CPython 3.12.1 fetched (sha256 cccccccccccc)"
    )
