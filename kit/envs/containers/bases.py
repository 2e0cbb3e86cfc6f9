"""Debian bases: kit's own deterministic recipe for a container's operating system.

No image registry need be reachable: a base is made with ``debootstrap --variant=minbase`` from
the Debian mirror this machine's apt already uses, the libraries a CPython interpreter loads
included, then written as a tar whose bytes depend only on the packages (names sorted, every
time clamped to ``EPOCH``, numeric owners, logs, caches and the host's own files left out) and
committed ``FROM scratch`` with a fixed timestamp: the same packages give the same image id.
Each base is recorded in ``$KIT_HOME/containers/bases/NAME.json``: its image id, suite, glibc
and the digest of its package list (``dpkg-query``), what differs when two ids do.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...core import children
from ...core.atomic import write_bytes
from ...core.errors import Failed, KitError, NotFound, Refused, one_line
from ...core.locks import file_lock
from ...core.paths import subdir
from ...core.small_files import read_small
from ...core.spools import discard
from .runtime import Runtime, building, last_line

EPOCH = 1767225600  # 2026-01-01T00:00:00Z: every time in a base and a stack image
# what a copied CPython needs beyond minbase: ssl, sqlite, readline, curses, expat, ffi, dbm
_LIBS = (
    "libsqlite3-0",
    "libncursesw6",
    "libexpat1",
    "libffi8",
    "libbz2-1.0",
    "liblzma5",
    "zlib1g",
    "libuuid1",
    "ca-certificates",
)
# files of the bootstrap that say when or where it ran, not what it holds (the runtime
# provides hosts, hostname and resolv.conf to each container)
_DROPPED = (
    "etc/hostname",
    "etc/hosts",
    "etc/resolv.conf",
    "etc/machine-id",
    "var/cache/ldconfig/aux-cache",
    "var/lib/dpkg/status-old",
    "var/lib/dpkg/diversions-old",
    "var/cache/debconf/config.dat-old",
    "var/cache/debconf/templates.dat-old",
    "var/cache/debconf/passwords.dat",
)
_EMPTIED = (
    "dev",
    "proc",
    "sys",
    "run",
    "tmp",
    "var/log",
    "var/cache/apt",
    "var/lib/apt/lists",
    "var/tmp",
)
BUILD_SECONDS = 1800


@dataclass(frozen=True)
class Base:
    """A Debian release kit can bootstrap as a base."""

    name: str  # the suite's code name, also the base's name
    release: str  # "Debian 12"
    glibc: str  # the glibc it ships (informational; the record measures it)
    libs: tuple  # packages a copied CPython loads, under this release's names


BASES = {
    "bookworm": Base(
        "bookworm", "Debian 12", "2.36", ("libssl3", "libreadline8", "libgdbm6", *_LIBS)
    ),
    "trixie": Base(
        "trixie", "Debian 13", "2.41", ("libssl3t64", "libreadline8t64", "libgdbm6t64", *_LIBS)
    ),
    "bullseye": Base(
        "bullseye", "Debian 11", "2.31", ("libssl1.1", "libreadline8", "libgdbm6", *_LIBS[:-1])
    ),
}
DEFAULT = "bookworm"


# a base named by its registry digest (where a registry is reachable): REF@sha256:HEX
DIGEST_REF = re.compile(r"([a-z0-9][a-z0-9._/:-]{0,200})@sha256:([0-9a-f]{64})")
DIGEST = "digest-"  # such a base's name: digest-HEX12 (NAME@digest-HEX12 its stack's)


def digest_name(ref: str) -> str:
    """The base name of a digest reference REF@sha256:HEX (Refused, for --base, when it is not one)."""
    m = DIGEST_REF.fullmatch(ref)
    if m is None:
        why = (
            f"{ref[:80]!r}: one of {', '.join(BASES)}, or an image named by its digest, "
            "REF@sha256:<64 hex digits>"
        )
        raise Refused(f"--base {why}", option="--base", reason=why)
    return f"{DIGEST}{m.group(2)[:12]}"


def is_digest(name: str) -> bool:
    return re.fullmatch(rf"{DIGEST}[0-9a-f]{{12}}", name) is not None


def base(name: str) -> Base:
    if is_digest(name):  # pulled by digest: what it is, its record says
        rec = record(name)
        if rec is None:
            raise NotFound(
                f"base {name} is not pulled here: `kit stacks build NAME --container "
                "--base REF@sha256:...` pulls it"
            )
        return Base(name, str(rec.get("release") or "?"), str(rec.get("glibc") or "?"), ())
    if name not in BASES:
        raise NotFound(f"unknown base {name!r}: one of {', '.join(BASES)}")
    return BASES[name]


def pull(rt: Runtime, ref: str, log=lambda msg: None) -> dict:
    """The base image named by its digest ``ref`` (REF@sha256:HEX), pulled (the one step of
    kit's container work that needs a registry) and recorded as ``digest-HEX12``: its id, the
    digest it was pulled by, and the release and glibc measured inside it. Failed, in one line,
    where no registry answers."""
    name = digest_name(ref)
    with file_lock(_records() / f".{name}.lock"):
        rec = record(name)
        if rec is not None and built(rt, name) is not None:
            return rec
        log(f"base {name}: pulling {ref}")
        proc = rt.call("pull", "--quiet", ref, timeout=BUILD_SECONDS)
        if proc.returncode != 0:
            why = last_line(proc.stderr or proc.stdout)
            raise Failed(
                f"cannot pull {ref[:100]}: {why} (a registry must be reachable; or use a "
                f"Debian base made here: --base {DEFAULT})",
                reason=why,
            )
        image = inspect(rt, ref)
        release = _inside(rt, image["id"], "sed -n 's/^PRETTY_NAME=//p' /etc/os-release")
        glibc = _inside(rt, image["id"], "ldd --version 2>&1 | head -1 | awk '{print $NF}'")
        rec = {
            "name": name,
            "ref": ref,
            "release": release.strip('"') or "?",
            "id": image["id"],
            "diff_ids": image["diff_ids"],
            "glibc": glibc or None,
            "packages": 0,
            "packages_sha256": None,
            "epoch": EPOCH,
        }
        write_bytes(_records() / f"{name}.json", json.dumps(rec, indent=1).encode())
        return rec


def _inside(rt: Runtime, image: str, script: str) -> str:
    """What ``script`` prints in ``image`` (no network, read-only), or "" where it cannot."""
    proc = rt.call(
        "run", "--rm", "--network=none", "--read-only", image, "/bin/sh", "-c", script, timeout=120
    )
    return one_line(proc.stdout.strip(), 80) if proc.returncode == 0 else ""


def tag(name: str) -> str:
    return f"localhost/kit-base:{name}"


def _records() -> Path:
    return subdir("containers") / "bases"


def record(name: str) -> dict | None:
    """What the build of base ``name`` recorded (None: not built, or not kit's record)."""
    try:
        doc = json.loads(read_small(_records() / f"{name}.json") or b"null")
    except ValueError:
        return None
    ok = (
        isinstance(doc, dict)
        and isinstance(doc.get("id"), str)
        and re.fullmatch(r"sha256:[0-9a-f]{64}", doc["id"]) is not None
    )
    return doc if ok else None


def package_list(name: str, sha256: str | None) -> list:
    """[[package, version]] of base ``name`` as recorded at its build, if that list hashes to
    ``sha256`` (else [], never another build's list)."""
    try:
        raw = read_small(_records() / f"{name}.packages") if name in BASES else None
    except OSError:
        raw = None
    if not raw or hashlib.sha256(raw).hexdigest() != sha256:
        return []
    return [
        line.split(" ", 1)
        for line in raw.decode(errors="replace").splitlines()
        if line.count(" ") == 1
    ]


def mirror() -> str | None:
    """The Debian mirror apt uses here (its sources), or None."""
    found = []
    for f in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        try:
            text = f.read_text()[: 1 << 20]
        except OSError:
            continue
        found += re.findall(
            r"(?:^deb\s+(?:\[[^\]]*\]\s+)?|^URIs:\s*)(https?://\S+/debian)/?\s",
            text + "\n",
            flags=re.M,
        )
    return found[0] if found else None


def unavailable(name: str) -> str | None:
    """Why base ``name`` cannot be made here, in one line (None: it can)."""
    if is_digest(name):
        return (
            None
            if record(name) is not None
            else (
                f"base {name} is not pulled here: `kit stacks build NAME --container --base "
                "REF@sha256:...` pulls it where a registry is reachable"
            )
        )
    base(name)
    if shutil.which("debootstrap") is None:
        return (
            "debootstrap is not installed (Debian: apt-get install debootstrap); on a Mac "
            "or without it, name a base image by digest: --base REF@sha256:..."
        )
    if os.geteuid() != 0:
        return (
            "debootstrap needs root to make a base (or name one by digest: --base REF@sha256:...)"
        )
    if mirror() is None:
        return "no Debian mirror is named in /etc/apt/sources.list*"
    return None


def built(rt: Runtime, name: str) -> dict | None:
    """The record of base ``name`` if its image is still in the runtime's store."""
    rec = record(name)
    if rec is None:
        return None
    proc = rt.call("image", "inspect", "--format", "{{.Id}}", rec["id"], timeout=60)
    return (
        rec if proc.returncode == 0 and proc.stdout.strip() in (rec["id"], rec["id"][7:]) else None
    )


def build(rt: Runtime, name: str, log=lambda msg: None, again: bool = False) -> dict:
    """Base ``name``'s image, bootstrapped and committed unless it is built already; returns
    its record. ``again``: bootstrapped anew from the mirror whatever is built, its record
    returned and not kept (``kit stacks verify`` does so in a store of its own)."""
    b = base(name)
    if is_digest(name):  # pulled, never bootstrapped: a verify holds it as pulled
        rec = built(rt, name)
        if rec is None and again:
            rec = record(name)
            if rec is not None:
                return pull(rt, rec["ref"], log)
        if rec is None:
            raise Failed(
                f"base {name} is no longer pulled here: `kit stacks build NAME "
                "--container --base REF@sha256:...` pulls it again"
            )
        return rec
    with file_lock(_records() / f".{name}.lock"):
        if not again:
            rec = built(rt, name)
            if rec is not None:
                return rec
        why = unavailable(name)
        if why:
            raise Failed(f"base {name}: {why}", reason=why)
        work = Path(tempfile.mkdtemp(dir=subdir("tmp"), prefix=f"base-{os.getpid()}-"))
        try:
            return _build(rt, b, work, log, again)
        finally:
            discard(work)


def _build(rt: Runtime, b: Base, work: Path, log, again: bool) -> dict:
    root = work / "root"
    log(f"base {b.name}: debootstrap --variant=minbase {b.name} from {mirror()}")
    proc = children.run(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(b.libs)}",
            b.name,
            str(root),
            mirror(),
        ],
        env=dict(os.environ, SOURCE_DATE_EPOCH=str(EPOCH)),
        timeout=BUILD_SECONDS,
    )
    if proc.returncode != 0:
        why = _debootstrap_error(proc.stdout + proc.stderr, root)
        raise Failed(f"base {b.name}: debootstrap failed: {why}", reason=why)
    packages = _packages(root)
    glibc = next((v for n, v in packages if n == "libc6"), None)
    _normalise(root)
    log(f"base {b.name}: writing its file system (glibc {glibc}, {len(packages)} packages)")
    context = work / "context"
    context.mkdir()
    _tar(root, context / "root.tar")
    (context / "Containerfile").write_text('FROM scratch\nADD root.tar /\nCMD ["/bin/sh"]\n')
    image = commit(rt, context, tag(b.name), f"base {b.name}")
    rec = {
        "name": b.name,
        "release": b.release,
        "id": image["id"],
        "diff_ids": image["diff_ids"],
        "glibc": glibc,
        "packages": len(packages),
        "packages_sha256": hashlib.sha256(
            "".join(f"{n} {v}\n" for n, v in packages).encode()
        ).hexdigest(),
        "mirror": mirror(),
        "epoch": EPOCH,
    }
    if again:
        return rec
    write_bytes(_records() / f"{b.name}.json", json.dumps(rec, indent=1).encode())
    write_bytes(
        _records() / f"{b.name}.packages", "".join(f"{n} {v}\n" for n, v in packages).encode()
    )
    return rec


def _debootstrap_error(text: str, root: Path) -> str:
    """debootstrap's own error line (E: ...), or its log's last line."""
    lines = [ln for ln in text.splitlines() if ln.startswith("E:")]
    if not lines:
        try:
            lines = (root / "debootstrap" / "debootstrap.log").read_text().splitlines()[-1:]
        except OSError:
            pass
    return one_line(lines[-1] if lines else last_line(text), 300)


def _packages(root: Path) -> list:
    """[(package, version)] of the root's dpkg database, read as a file (nothing runs in it)."""
    out = []
    name = None
    try:
        text = (root / "var/lib/dpkg/status").read_text(errors="replace")
    except OSError as e:
        raise Failed(f"the bootstrap left no dpkg database ({one_line(e)})") from None
    installed = False
    for line in text.splitlines() + [""]:
        if line.startswith("Package: "):
            name, installed = line[9:].strip(), False
        elif line.startswith("Status: "):
            installed = line.endswith(" installed")
        elif line.startswith("Version: ") and name and installed:
            out.append((name, line[9:].strip()))
    return sorted(out)


def _normalise(root: Path) -> None:
    """Leave out what says when or where the bootstrap ran; set /etc/shadow's days of last
    change to EPOCH's (they are the day of the build)."""
    for rel in _DROPPED:
        p = root / rel
        if p.is_file() or p.is_symlink():
            p.unlink()
    for rel in _EMPTIED:
        d = root / rel
        if d.is_dir() and not d.is_symlink():
            for child in d.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
    day = str(EPOCH // 86400)
    for rel in ("etc/shadow", "etc/shadow-", "etc/gshadow-", "etc/passwd-", "etc/group-"):
        p = root / rel
        if not p.is_file():
            continue
        if rel.endswith("-"):  # the tools' backups: the files themselves are kept
            p.unlink()
            continue
        rows = []
        for row in p.read_text().splitlines():
            f = row.split(":")
            if len(f) > 2 and f[2].isdigit():
                f[2] = day
            rows.append(":".join(f))
        p.write_text("".join(r + "\n" for r in rows))
    shutil.rmtree(root / "debootstrap", ignore_errors=True)


def _tar(root: Path, dest: Path) -> None:
    """``root`` as a tar whose bytes depend on its files alone: names sorted, times EPOCH,
    numeric owners kept, no user or group names."""

    def norm(ti: tarfile.TarInfo) -> tarfile.TarInfo:
        ti.mtime = EPOCH
        ti.uname = ti.gname = ""
        ti.pax_headers = {}
        return ti

    with tarfile.open(dest, "w", format=tarfile.GNU_FORMAT) as tar:
        for path in _walk(root):
            rel = path.relative_to(root).as_posix()
            tar.add(path, arcname=rel, recursive=False, filter=norm)


def _walk(root: Path):
    """Every path under ``root``, sorted by name at each level, links not followed."""
    todo = [root]
    while todo:
        d = todo.pop()
        entries = sorted(os.scandir(d), key=lambda e: e.name)
        for e in entries:
            yield Path(e.path)
        todo += [Path(e.path) for e in reversed(entries) if e.is_dir(follow_symlinks=False)]


def commit(rt: Runtime, context: Path, name: str, what: str, volumes=(), args=()) -> dict:
    """``podman build`` of ``context`` with no network and every time fixed, tagged ``name``;
    returns {"id", "diff_ids", "size"}. A build killed midway leaves no tag (podman tags only
    a finished image) and no container (buildah removes its own on the next build's start)."""
    vol = [a for src, dst, mode in volumes for a in ("-v", f"{src}:{dst}:{mode}")]
    with building(rt):
        # --layers=false: one commit of the whole recipe; with podman's layer cache the config
        # names the intermediate images (FROM <id>), and the id depends on what was cached
        proc = rt.call(
            "build",
            "--network=none",
            "--timestamp",
            str(EPOCH),
            "--pull=never",
            "--layers=false",
            *vol,
            *args,
            "-t",
            name,
            "-f",
            str(context / "Containerfile"),
            str(context),
            timeout=BUILD_SECONDS,
        )
    if proc.returncode != 0:
        why = last_line(proc.stderr or proc.stdout)
        raise Failed(f"{what}: the image build failed: {why}", reason=why)
    return inspect(rt, name)


def inspect(rt: Runtime, ref: str) -> dict:
    """{"id", "diff_ids", "size"} of an image in the runtime's store; NotFound if absent."""
    proc = rt.call("image", "inspect", ref, timeout=60)
    if proc.returncode != 0:
        raise NotFound(f"image {ref} is not in {rt.name}'s store")
    try:
        doc = json.loads(proc.stdout)[0]
        ident = doc["Id"]
        return {
            "id": ident if ident.startswith("sha256:") else f"sha256:{ident}",
            "diff_ids": list(doc.get("RootFS", {}).get("Layers") or []),
            "size": int(doc.get("Size") or 0),
        }
    except (ValueError, KeyError, IndexError, TypeError):
        raise KitError(f"{rt.name} image inspect {ref} answered what kit cannot read") from None
