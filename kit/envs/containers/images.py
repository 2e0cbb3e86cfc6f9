"""Stack images: a catalogue stack's lock installed on a Debian base, built offline, recorded.

The recipe (``Containerfile``) is kit's and fixed: the base by its image id, the host's
interpreter copied at its own absolute path (its RUNPATH names it), ``uv sync --frozen
--no-build`` from the stack's lock with uv's cache mounted and no network, every time clamped to
``bases.EPOCH``. The same inputs give the same image id (tested); the record in
``$KIT_HOME/containers/images/STACK@BASE.json`` names the image by that id with its base's id,
its layers' diff_ids, the interpreter and the lock it holds, what ``verify`` compares.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from ...core import children
from ...core.atomic import write_bytes
from ...core.errors import Failed, NotFound, one_line
from ...core.locks import file_lock
from ...core.paths import subdir
from ...core.small_files import read_small
from ...core.spools import discard
from ..interpreters import uv_bin
from . import bases
from .pythons import PREFIX, Pin, asked, fetched
from .runtime import Runtime, last_line

VENV = "/opt/stack"  # the stack's environment inside every image
PYTHON = f"{VENV}/bin/python"
_LOCK = "/opt/kit-lock"  # the lock folder the image was synced from (kept: it is the recipe)
# what the build mounts: the interpreter, uv, uv's cache (never the network)
_PY, _UV, _CACHE = "/kit-build/python", "/kit-build/uv", "/kit-build/uv-cache"
_PY_ARCHIVE = "/kit-build/python.tar.gz"  # a fetched interpreter's archive (kit.envs...pythons)


def tag(stack: str, base: str) -> str:
    return f"localhost/kit-stack:{stack}-{base}"


def _records() -> Path:
    return subdir("containers") / "images"


def record_path(stack: str, base: str) -> Path:
    return _records() / f"{stack}@{base}.json"


def record(stack: str, base: str) -> dict | None:
    """What the last build of ``stack`` on ``base`` recorded (None: none, or not kit's)."""
    try:
        doc = json.loads(read_small(record_path(stack, base)) or b"null")
    except ValueError:
        return None
    return doc if well_formed(doc) else None


_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def well_formed(doc) -> bool:
    """Is ``doc`` a record kit writes: the ids it names reach podman's command line, and its
    interpreter a rebuild's recipe, so each is checked for its form."""
    if not isinstance(doc, dict):
        return False
    ids = [doc.get("id"), doc.get("base_id"), *(doc.get("diff_ids") or [None])]
    return (
        all(isinstance(i, str) and _DIGEST.fullmatch(i) for i in ids)
        and isinstance(doc.get("lock_sha256"), str)
        and re.fullmatch(r"[0-9a-f]{64}", doc["lock_sha256"]) is not None
        and isinstance(doc.get("interpreter"), str)
        and re.fullmatch(r"/[\w./+-]{1,500}", doc["interpreter"]) is not None
        and (doc.get("python_fetched") is None or Pin.from_dict(doc["python_fetched"]) is not None)
    )


def recorded() -> list:
    """[(stack, base)] of every image record kept, sorted."""
    out = []
    for f in sorted(_records().glob("*@*.json")):
        stack, _, base = f.name[:-5].rpartition("@")
        if stack and base:
            out.append((stack, base))
    return out


def recipe(
    lock_sha256: str, base_id: str, interpreter: str, prefix: str, pin: Pin | None = None
) -> str:
    """The Containerfile of a stack image: the whole recipe but the lock folder's bytes (and,
    for a fetched interpreter, its archive's, which the pin's sha256 names)."""
    env = (
        f"UV_OFFLINE=1 UV_NO_CONFIG=1 UV_LINK_MODE=copy UV_CACHE_DIR={_CACHE} "
        f"UV_PYTHON_DOWNLOADS=never SOURCE_DATE_EPOCH={bases.EPOCH} "
        f"UV_PROJECT_ENVIRONMENT={VENV}"
    )
    if pin is None:
        # the interpreter at its own path (its RUNPATH); the host's __pycache__ folders are not
        # copied (whatever ran on the host wrote them, so they differ from one build to the
        # next) but made again, hash-based: no time in them
        placed = f"mkdir -p {os.path.dirname(prefix.rstrip('/'))} && cp -a {_PY} {prefix}"
        named = ""
    else:  # python-build-standalone's archive (one top folder, python/), owned by root
        placed = (
            f"mkdir -p {prefix} && tar -xzf {_PY_ARCHIVE} -C {prefix} --strip-components=1 "
            "--no-same-owner"
        )
        named = f"# interpreter {pin.file} sha256 {pin.sha256}\n"
    return "\n".join(
        [
            f"# kit stack image: lock sha256 {lock_sha256}",
            f"{named}FROM {base_id}",
            # ldconfig's build-time cache dropped: it holds the build's time
            f"RUN {placed} && find {prefix} -name __pycache__ "
            f"-type d -prune -exec rm -rf {{}} + && {_compiled(interpreter, prefix + '/lib')} "
            "&& rm -f /var/cache/ldconfig/aux-cache",
            f"COPY lock/ {_LOCK}/",
            f"RUN cd {_LOCK} && {env} {_UV} venv --quiet --python {interpreter} {VENV} && "
            f"{env} {_UV} sync --frozen --no-build --no-install-project --quiet "
            f"--python {PYTHON} && {_compiled(interpreter, VENV)} "
            "&& rm -f /var/cache/ldconfig/aux-cache",
            "",
        ]
    )


# Bytecode is compiled in a fixed number of shards of the sorted file list, each shard by one
# process in order: marshal writes a shared object by reference or by value depending on what
# the process compiled before, so `compileall -j 0` (or uv's --compile-bytecode), which hands
# files to whichever worker is free, wrote other .pyc bytes under load (a rebuild in CI gave
# another stack layer id). The shard count is fixed, not the machine's core count, so that
# every machine makes the same bytes.
_SHARDS = 4


def _compiled(interpreter: str, folder: str) -> str:
    """The shell step that compiles every .py under ``folder`` hash-based (no time in a .pyc),
    deterministically; compileall's status is left out (the stdlib's own tests hold files
    that do not compile)."""
    shards = " ".join(
        f"(awk 'NR%{_SHARDS}=={k}' /tmp/kit-py.list | {interpreter} -m compileall -q "
        "--invalidation-mode unchecked-hash -i - >/dev/null || true) &"
        for k in range(_SHARDS)
    )
    return (
        f"(find {folder} -name '*.py' -type f | LC_ALL=C sort >/tmp/kit-py.list; {shards} "
        "wait; rm -f /tmp/kit-py.list)"
    )


def interpreter_prefix(python: str) -> str:
    """The installation folder of interpreter ``python`` (sys.base_prefix), resolved."""
    return str(Path(asked(python, "import sys; print(sys.base_prefix)")).resolve())


def build(
    rt: Runtime,
    stack: str,
    lock_dir: Path,
    lock_sha256: str,
    python: str,
    base: str,
    log=lambda msg: None,
    again: bool = False,
    pin: Pin | None = None,
) -> dict:
    """Build ``stack``'s image on ``base`` from its lock folder, offline; returns its record
    (written only when the image is whole and tagged). ``python``: the host interpreter
    copied in, which kit built the host venv of the same lock with (uv's cache then holds
    every wheel the lock names); ``pin``: a fetched interpreter in its place (kit...pythons).
    ``again``: everything made anew (the base bootstrapped again, no step cached) and no
    record kept: what ``verify`` compares, in a store of its own."""
    with file_lock(_records() / f".{stack}@{base}.lock"):
        started = time.monotonic()
        base_rec = bases.build(rt, base, log, again=again)
        if pin is None:
            prefix = interpreter_prefix(python)
            exe = str(Path(python).resolve())
            if not exe.startswith(prefix + "/"):
                raise Failed(f"stack {stack}: interpreter {exe} is not inside its prefix {prefix}")
            given = (prefix, _PY, "ro")
        else:
            prefix, exe = PREFIX, pin.executable
            given = (str(fetched(pin, log)), _PY_ARCHIVE, "ro")
        cache = _uv_cache()
        if pin is not None:
            _wheels_for(pin, lock_dir, cache, log)
        work = Path(tempfile.mkdtemp(dir=subdir("tmp"), prefix=f"image-{os.getpid()}-"))
        try:
            ctx = work / "context"
            shutil.copytree(
                lock_dir,
                ctx / "lock",
                ignore=shutil.ignore_patterns(".venv", "__pycache__", "*.pyc"),
            )
            (ctx / "Containerfile").write_text(
                recipe(lock_sha256, base_rec["id"], exe, prefix, pin)
            )
            log(f"{stack}@{base}: building its image on {base} ({base_rec['id'][7:19]}) offline")
            image = bases.commit(
                rt,
                ctx,
                tag(stack, base),
                f"stack {stack} on {base}",
                volumes=(given, (uv_bin(), _UV, "ro"), (cache, _CACHE, "rw")),
                args=("--no-cache",) if again else (),
            )
        finally:
            discard(work)
        rec = {
            "stack": stack,
            "base": base,
            "id": image["id"],
            "size": image["size"],
            "diff_ids": image["diff_ids"],
            "base_id": base_rec["id"],
            "base_diff_ids": base_rec["diff_ids"],
            "release": base_rec["release"],
            "glibc": base_rec["glibc"],
            "os_packages": base_rec["packages"],
            "os_packages_sha256": base_rec["packages_sha256"],
            "lock_sha256": lock_sha256,
            "interpreter": exe,
            "python_prefix": prefix,
            "python_fetched": pin.as_dict() if pin else None,
            "runtime": rt.as_dict(),
            "built": datetime.now(UTC).isoformat(),
            "build_s": round(time.monotonic() - started, 3),
        }
        if again:
            return rec
        write_bytes(record_path(stack, base), json.dumps(rec, indent=1).encode())
        return rec


def _uv_cache() -> str:
    """uv's cache folder on this machine (where the host venvs' wheels are)."""
    try:
        out = subprocess.run([uv_bin(), "cache", "dir"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Failed(f"uv does not start: {one_line(e)}") from None
    path = out.stdout.strip()
    if out.returncode != 0 or not path:
        raise Failed("uv cannot say where its cache is")
    Path(path).mkdir(parents=True, exist_ok=True)
    return path


def _wheels_for(pin: Pin, lock_dir: Path, cache: str, log=lambda msg: None) -> None:
    """Put the wheels the lock names for ``pin``'s platform (Linux, its architecture and
    CPython version) into uv's cache, hash-checked: the host venv put only the host's there (a
    Mac's are macOS wheels), and the build that follows reaches no network."""
    minor = ".".join(pin.version.split(".")[:2])
    log(f"fetching the lock's wheels for Linux {pin.arch}, CPython {minor}, into uv's cache")
    work = Path(tempfile.mkdtemp(dir=subdir("tmp"), prefix=f"wheels-{os.getpid()}-"))
    env = dict(os.environ, UV_CACHE_DIR=cache, UV_NO_CONFIG="1")
    try:
        steps = (
            ["export", "--frozen", "--format", "requirements-txt", "--no-emit-project"],
            [
                "pip",
                "install",
                "--python-platform",
                f"{pin.arch}-unknown-linux-gnu",
                "--python-version",
                minor,
                "--target",
                str(work / "target"),
                "--no-deps",
                "--require-hashes",
                "-r",
                str(work / "requirements.txt"),
                "--quiet",
            ],
        )
        for args in steps:
            proc = children.run(
                [uv_bin(), *args], cwd=lock_dir, env=env, stdout=subprocess.PIPE, text=True
            )
            if proc.returncode != 0:
                raise Failed(
                    f"the wheels for Linux {pin.arch}: uv {args[0]} failed: "
                    f"{last_line(proc.stderr)}"
                )
            if args[0] == "export":
                (work / "requirements.txt").write_text(proc.stdout)
        if not any((work / "target").glob("*.dist-info")):
            raise Failed(
                f"the lock names no wheel for Linux {pin.arch} with CPython {minor} (its "
                "environments leave that platform out): lock the stack for it first"
            )
    finally:
        discard(work)


def present(rt: Runtime, rec: dict) -> bool:
    """Is the image a record names still in the runtime's store, under that id?"""
    try:
        return bases.inspect(rt, rec["id"])["id"] == rec["id"]
    except NotFound:
        return False


def layer_difference(old: dict, new: dict) -> str:
    """Which layer of two builds of one recipe differs, in words (the ids differ)."""
    names = [
        "the base (Debian's packages)",
        "the stack (the interpreter and the environment installed from the lock)",
    ]
    a, b = old.get("diff_ids") or [], new.get("diff_ids") or []
    if old.get("base_id") != new.get("base_id"):
        return (
            f"the base differs ({old.get('base_id', '?')[7:19]} against "
            f"{new.get('base_id', '?')[7:19]}: Debian's packages changed on the mirror)"
        )
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            what = names[i] if i < len(names) else f"layer {i + 1}"
            return f"layer {i + 1} of {len(b)} differs: {what} ({x[7:19]} against {y[7:19]})"
    if len(a) != len(b):
        return f"the images have {len(a)} and {len(b)} layers"
    return "every layer is the same: only the image's configuration differs"


def recipe_difference(there: dict, here: dict) -> str:
    """What differs between the recipe of an image a bundle names and the image built here
    (their ids differ): the lock, the interpreter, Debian's packages, else the layer."""
    lock_a, lock_b = there.get("lock_sha256"), here.get("lock_sha256")
    if lock_a and lock_b and lock_a != lock_b:
        return (
            f"the stack's lock differs ({lock_a[:12]} there, {lock_b[:12]} here): another "
            "release of kit's catalogue, so other packages"
        )
    py_a, py_b = there.get("interpreter"), here.get("interpreter")
    if py_a and py_b and py_a != py_b:
        return f"the interpreter differs ({py_a} there, {py_b} here)"
    pin_a, pin_b = (Pin.from_dict(r.get("python_fetched")) for r in (there, here))
    if pin_a != pin_b:
        a, b = (
            f"{p.file} ({p.sha256[:12]})" if p else "the host's, copied" for p in (pin_a, pin_b)
        )
        return f"the interpreter differs ({a} there, {b} here)"
    if there.get("base_id") and here.get("base_id") and there["base_id"] != here["base_id"]:
        moved = _moved(
            there.get("os_packages"),
            bases.package_list(here.get("base", ""), here.get("os_packages_sha256")),
        )
        if moved:
            return (
                "the base differs: Debian's packages moved on the mirror since ("
                + "; ".join(moved)
                + ")"
            )
    return layer_difference(there, here)


def _moved(a, b, shown: int = 4) -> list:
    """'pkg v1 there, v2 here' of the packages two lists disagree on (the first few)."""
    if not isinstance(a, list) or not a or not b:
        return []
    x, y = dict(map(tuple, a)), dict(map(tuple, b))
    out = [
        f"{n} {x.get(n, 'absent')} there, {y.get(n, 'absent')} here"
        for n in sorted(set(x) | set(y))
        if x.get(n) != y.get(n)
    ]
    return out[:shown] + ([f"{len(out) - shown} more"] if len(out) > shown else [])


@contextmanager
def separate_store(rt: Runtime):
    """The runtime with an empty image store of its own under KIT_HOME, removed afterwards:
    a verify there builds under the same names with nothing cached and touches no kept
    image (an image's config names its base by the tag it was built from)."""
    folder = Path(tempfile.mkdtemp(dir=subdir("tmp"), prefix=f"store-{os.getpid()}-"))
    # podman refuses a runroot path of more than 50 characters: a short one in /tmp
    run = Path(tempfile.mkdtemp(prefix=f"kit-{os.getpid()}-", dir="/tmp"))
    own = replace(rt, options=(*rt.options, "--root", str(folder / "root"), "--runroot", str(run)))
    try:
        yield own
    finally:
        own.call("rmi", "-a", "-f", timeout=600)
        discard(folder)
        shutil.rmtree(run, ignore_errors=True)


# what a bundle carries of an image: its recipe and what names it, never this machine's runtime
# or build times (kit.app.bundle_schema.ImageRecipe reads it back)
_CARRIED = (
    "id",
    "diff_ids",
    "size",
    "base",
    "base_id",
    "base_diff_ids",
    "release",
    "glibc",
    "lock_sha256",
    "interpreter",
    "python_prefix",
    "python_fetched",
    "os_packages_sha256",
)


def carried(rec: dict) -> dict:
    """The recipe of the image a record names, as a bundle carries it (its base's package list
    included, so that the other end can say which package moved when its base differs)."""
    out = {k: rec[k] for k in _CARRIED if rec.get(k) is not None}
    out["os_packages"] = bases.package_list(rec.get("base", ""), rec.get("os_packages_sha256"))
    return out
