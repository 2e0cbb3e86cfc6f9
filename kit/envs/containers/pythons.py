"""An image's interpreter where the host's cannot be copied in: a relocatable CPython fetched once.

On Linux kit copies the stack's own interpreter into its image at the same path. That is
impossible on a Mac (the host's interpreter is a Mach-O binary and the image runs Linux, arm64
natively or amd64 under Rosetta) and wherever the runtime's architecture is not the host's. There
the image gets python-build-standalone's build of the same CPython version for the image's
architecture, the one uv itself installs. kit fetches it once, on a machine that reaches the
release mirror, and pins it by version, release and sha256. The sha256 comes from the release's
own SHA256SUMS at the first fetch and is kept in the image record from then on, so every
rebuild (``kit stacks verify``, another machine's) checks the same bytes. The build still runs
with no network: the archive is mounted into it, not downloaded there.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import stat
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from ...core.atomic import write_bytes
from ...core.errors import Failed, KitError, one_line
from ...core.paths import subdir
from ...core.small_files import read_head
from .. import interpreters
from .runtime import Runtime

# uv's own default (UV_PYTHON_INSTALL_MIRROR replaces it, as it does for uv)
DEFAULT_MIRROR = "https://github.com/astral-sh/python-build-standalone/releases/download"
PREFIX = "/opt/kit-python"  # where a fetched interpreter lies inside the image
MAX_BYTES = 256 * 2**20  # an install_only_stripped build is ~30 MB
_SUMS_BYTES = 4 * 2**20
# the image architectures kit builds for, as python-build-standalone names them
_ARCHES = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}
# the ELF e_machine of each (a copied interpreter must be an ELF of the image's architecture)
_ELF_MACHINE = {"x86_64": 62, "aarch64": 183}
_VERSION = re.compile(r"3\.\d{1,2}\.\d{1,3}")
_RELEASE = re.compile(r"\d{8}")
_FLAVOURS = ("install_only", "install_only_stripped")
_URL = re.compile(
    r"/cpython-[0-9.]+%2B(\d{8})-[\w]+-unknown-linux-gnu-(install_only(?:_stripped)?)\.tar\.gz$"
)


@dataclass(frozen=True)
class Pin:
    """One python-build-standalone build: what names it and the sha256 of its archive."""

    version: str  # "3.12.1"
    release: str  # "20240107"
    arch: str  # "x86_64" or "aarch64"
    flavour: str  # "install_only_stripped" (older releases: "install_only")
    sha256: str

    @property
    def file(self) -> str:
        triple = f"{self.arch}-unknown-linux-gnu"
        return f"cpython-{self.version}+{self.release}-{triple}-{self.flavour}.tar.gz"

    @property
    def executable(self) -> str:
        """The interpreter inside the image."""
        return f"{PREFIX}/bin/python{'.'.join(self.version.split('.')[:2])}"

    def url(self) -> str:
        return f"{mirror()}/{self.release}/{self.file.replace('+', '%2B')}"

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, doc) -> Pin | None:
        """A pin as a record or a bundle holds it; None unless every field has its form (they
        reach a URL and a file name)."""
        if not isinstance(doc, dict) or set(doc) != {
            "version",
            "release",
            "arch",
            "flavour",
            "sha256",
        }:
            return None
        ok = (
            isinstance(doc["version"], str)
            and _VERSION.fullmatch(doc["version"])
            and isinstance(doc["release"], str)
            and _RELEASE.fullmatch(doc["release"])
            and doc["arch"] in _ELF_MACHINE
            and doc["flavour"] in _FLAVOURS
            and isinstance(doc["sha256"], str)
            and re.fullmatch(r"[0-9a-f]{64}", doc["sha256"])
        )
        return cls(**doc) if ok else None


def mirror() -> str:
    return (os.environ.get("UV_PYTHON_INSTALL_MIRROR") or DEFAULT_MIRROR).rstrip("/")


def image_arch(rt: Runtime) -> str:
    """The architecture of the images the runtime runs (a Mac's podman machine: arm64)."""
    proc = rt.call("info", "--format", "{{.Host.Arch}}", timeout=60)
    got = proc.stdout.strip() if proc.returncode == 0 else ""
    if got not in _ARCHES:
        raise Failed(f"{rt.name} does not say which architecture its images are ({got or '?'})")
    return _ARCHES[got]


def not_copyable(python: str, arch: str, system: str | None = None) -> str | None:
    """Why the host interpreter ``python`` cannot be copied into an ``arch`` image (None: it
    can). KIT_IMAGE_PYTHON=fetch asks for the fetched one anyway, =copy never."""
    choice = os.environ.get("KIT_IMAGE_PYTHON", "")
    if choice not in ("", "copy", "fetch"):
        raise KitError(f"KIT_IMAGE_PYTHON is 'copy' or 'fetch', not {choice!r}")
    if choice == "fetch":
        return "KIT_IMAGE_PYTHON=fetch asks for a fetched interpreter"
    system = system or platform.system()
    if system != "Linux":
        why = f"on {'macOS' if system == 'Darwin' else system} the interpreter is no Linux binary"
        return None if choice == "copy" else why
    head = read_head(Path(python).resolve(), 20) or b""
    if head[:4] != b"\x7fELF":
        why = f"interpreter {python} is not an ELF binary"
    elif int.from_bytes(head[18:20], "little" if head[5] == 1 else "big") != _ELF_MACHINE[arch]:
        why = f"interpreter {python} is not built for {arch}, the images' architecture"
    else:
        return None
    return None if choice == "copy" else why


def asked(python: str, code: str) -> str:
    """What interpreter ``python`` prints running ``code`` (isolated), stripped; Failed, one
    line, when it does not start or says nothing."""
    try:
        out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Failed(f"interpreter {python} does not start: {one_line(e)}") from None
    if out.returncode != 0 or not out.stdout.strip():
        raise Failed(f"interpreter {python} does not start")
    return out.stdout.strip()


def version_of(python: str) -> str:
    """The full CPython version of the host interpreter ``python`` (the image gets the same)."""
    version = asked(python, "import platform; print(platform.python_version())")
    if not _VERSION.fullmatch(version):
        raise Failed(f"interpreter {python} does not say its version")
    return version


def release_of(version: str) -> tuple:
    """(release, flavour) of the python-build-standalone build uv installs CPython ``version``
    from: uv's own list names it (its URLs, under a placeholder mirror so that none is local)."""
    argv = [
        interpreters.uv_bin(),
        "python",
        "list",
        "--all-platforms",
        "--all-versions",
        "--only-downloads",
    ]
    try:
        proc = subprocess.run(
            [*argv, "--output-format", "json", f"cpython@{version}"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "UV_PYTHON_INSTALL_MIRROR": "https://pbs.invalid/d"},
        )
        rows = json.loads(proc.stdout) if proc.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired, ValueError) as e:
        raise Failed(f"uv python list failed: {one_line(e)}") from None
    for row in rows if isinstance(rows, list) else []:
        m = isinstance(row, dict) and _URL.search(str(row.get("url")))
        if m and row.get("version") == version:
            return m.group(1), m.group(2)
    raise Failed(
        f"uv knows no python-build-standalone build of CPython {version} (update uv, or build "
        "the stack with an interpreter uv can install)"
    )


def pin(version: str, arch: str) -> Pin:
    """The build of CPython ``version`` for ``arch`` images, pinned by the sha256 its release's
    SHA256SUMS names (fetched from the mirror: this needs the network once)."""
    from ...data.http import Fetcher, Limits

    release, flavour = release_of(version)
    unpinned = Pin(version, release, arch, flavour, "0" * 64)
    url = f"{mirror()}/{release}/SHA256SUMS"
    _, body = Fetcher(
        Limits.from_env(page_bytes=_SUMS_BYTES), what="the python-build-standalone mirror"
    ).get(url)
    for line in body.decode("utf-8", "replace").splitlines():
        parts = line.split()
        named = len(parts) == 2 and parts[1].lstrip("*") == unpinned.file
        if named and re.fullmatch(r"[0-9a-f]{64}", parts[0]):
            return Pin(version, release, arch, flavour, parts[0])
    raise Failed(f"{url} names no sha256 for {unpinned.file}")


def fetched(p: Pin, log=lambda msg: None) -> Path:
    """The archive of ``p`` in kit's cache, fetched now if it is not there; its bytes are
    checked against the pin before they are kept (a wrong or cut archive is never kept)."""
    from ...data.http import Fetcher, Limits

    path = subdir("containers") / "pythons" / f"{p.sha256}.tar.gz"
    if _kept(path) and _sha256(path) == p.sha256:
        return path
    log(f"fetching CPython {p.version} for {p.arch} images ({p.file}) from {mirror()}")
    _, body = Fetcher(
        Limits.from_env(page_bytes=MAX_BYTES, page_s=1800.0),
        what="the python-build-standalone mirror",
    ).get(p.url())
    got = hashlib.sha256(body).hexdigest()
    if got != p.sha256:
        raise Failed(
            f"{p.url()} is not the pinned archive (sha256 {got[:12]}, pinned {p.sha256[:12]}): "
            "refused, nothing kept"
        )
    write_bytes(path, body)
    return path


def _kept(path: Path) -> bool:
    """Is a regular file of at most MAX_BYTES there (never through a link: kit's home is read
    as input too)?"""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size <= MAX_BYTES


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(2**20), b""):
            h.update(chunk)
    return h.hexdigest()
