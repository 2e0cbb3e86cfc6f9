"""Build stack environments with uv from their lock files, and regenerate the lock files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone

from ..core.atomic import write_bytes
from ..core.errors import KitError
from ..core.locks import file_lock
from .interpreters import arch_prefix, find_python, probe, uv_bin
from .platforms import Platform, detect
from .catalogue import MARKER, StackDef
from .integrity import venv_python
from .stacks import built_stack, unavailable_reason


def _uv(args, cwd=None, env=None, what="uv"):
    proc = subprocess.run([uv_bin(), *args], cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise KitError(f"{what} failed: {last}")
    return proc


def build(d: StackDef, plat: Platform | None = None, log=lambda msg: None) -> bool:
    """Create the stack's venv from its lock (binary wheels only, hashes verified by uv).

    Idempotent: a complete build of the current lock is kept (returns False); anything else,
    including a venv left half-built by an interrupt, is deleted and built again (True).
    """
    plat = plat or detect()
    if built_stack(d, plat) is not None:
        return False
    with file_lock(d.venv().with_name(f".{d.venv().name}.lock")):
        return _build(d, plat, log)


def _build(d: StackDef, plat: Platform, log) -> bool:
    if built_stack(d, plat) is not None:  # built by whoever held the lock before us
        return False
    reason = unavailable_reason(d, plat, check_python=False)
    if reason:
        raise KitError(f"stack {d.name} cannot be built here: {reason}")
    python = find_python(d.python, d.arch, plat, install=True)
    if python is None:
        raise KitError(f"stack {d.name}: {unavailable_reason(d, plat) or 'no interpreter found'}")
    lock_sha = d.lock_sha256()
    venv = d.venv()
    if venv.exists():
        log(f"{d.name}: removing an incomplete or outdated environment")
        shutil.rmtree(venv)
    log(f"{d.name}: creating the environment with {python}")
    try:
        _uv(["venv", "--quiet", "--python", python, str(venv)], what=f"{d.name}: uv venv")
        log(f"{d.name}: installing {d.lock}/uv.lock")
        # --frozen: the lock as committed, never re-resolved; --no-build: wheels only
        _uv(["sync", "--frozen", "--no-build", "--no-install-project", "--compile-bytecode",
             "--quiet", "--python", str(venv_python(venv))], cwd=d.lock_dir(),
            env={"UV_PROJECT_ENVIRONMENT": str(venv)}, what=f"{d.name}: uv sync")
        got = probe(str(venv_python(venv)), arch_prefix(d.arch, plat))
        if got is None:
            raise KitError(f"stack {d.name}: the new environment's interpreter does not start")
        marker = {"lock_sha256": lock_sha, "python": got[0], "machine": got[1],
                  "interpreter": python, "built": datetime.now(timezone.utc).isoformat()}
        write_bytes(venv / MARKER, json.dumps(marker, indent=1).encode())
    except BaseException:
        shutil.rmtree(venv, ignore_errors=True)  # never leave a venv that looks usable
        raise
    return True


def download_bytes(d: StackDef, plat: Platform) -> int | None:
    """The wheels a build of ``d`` downloads here, summed from its uv.lock (None: unknown).

    uv.lock lists every platform's wheels with their sizes; the ones for this platform and the
    stack's Python are counted (the largest where several fit). A local wheel (no size) adds 0.
    """
    import tomllib

    try:
        doc = tomllib.loads((d.lock_dir() / "uv.lock").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return None
    minor = d.python.replace(".", "")
    arch = {"linux-x86_64": ("linux", "x86_64"), "macos-arm64": ("macosx", "arm64"),
            "macos-x86_64": ("macosx", "x86_64")}.get(plat.key)
    if arch is None:
        return None
    if d.arch == "x86_64":
        arch = (arch[0], "x86_64")
    total = 0
    for pkg in doc.get("package", []):
        sizes = [w.get("size", 0) for w in pkg.get("wheels", [])
                 if _fits(w.get("url") or w.get("path") or "", minor, arch)]
        total += max(sizes, default=0)
    return total


def _fits(url: str, minor: str, arch: tuple) -> bool:
    """Does a wheel's file name fit CPython ``minor`` ("312") on (system, machine)?"""
    name = url.rsplit("/", 1)[-1]
    if not name.endswith(".whl"):
        return False
    try:
        py, abi, plats = name[:-4].split("-")[-3:]
    except ValueError:
        return False
    py_ok = any(t in (f"cp{minor}", "py3", "py2.py3") or (abi == "abi3" and t.startswith("cp3")
                                                           and int(t[3:]) <= int(minor[1:]))
                for t in py.split("."))
    system, machine = arch
    plat_ok = plats == "any" or (system in plats and (machine in plats or "universal2" in plats))
    return py_ok and plat_ok


def lock(d: StackDef, upgrade: bool = False, python: str | None = None) -> None:
    """Re-resolve the stack's pyproject.toml into uv.lock for every platform it lists."""
    args = ["lock", "--quiet"] + (["--upgrade"] if upgrade else [])
    # any interpreter >= 3.9 can lock: the environment markers fix the Python minor version
    args += ["--python", python or sys.executable]
    _uv(args, cwd=d.lock_dir(), env={"UV_PYTHON_DOWNLOADS": "never"}, what=f"{d.lock}: uv lock")
