"""Find a Python interpreter of a given minor version and architecture, never a pyenv shim."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import threading
from functools import cache
from pathlib import Path

from ..core import children
from ..core.errors import KitError
from .platforms import Platform

_PROBE = (
    "import json, platform, sys; print(json.dumps([platform.python_version(), platform.machine()]))"
)


def uv_bin() -> str:
    """The uv that kit depends on (the PyPI package ships the binary), else the one on PATH."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if not found:
            raise KitError("uv is not installed: run ./bootstrap.sh (or pip install uv)") from None
        return found


def arch_prefix(arch: str | None, plat: Platform) -> tuple:
    """argv prefix that runs an x86_64 binary under Rosetta on Apple silicon."""
    if arch == "x86_64" and plat.apple_silicon:
        return ("/usr/bin/arch", "-x86_64")
    return ()


def probe(python: str, prefix: tuple = ()) -> tuple | None:
    """(version, machine) that an interpreter reports, or None if it does not run."""
    try:
        out = subprocess.run(
            [*prefix, python, "-c", _PROBE], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    version, machine = json.loads(out.stdout)
    return version, machine


def _pyenv_candidates(minor: str) -> list:
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = glob.glob(os.path.join(root, "versions", f"{minor}.*", "bin", f"python{minor}"))
    # highest patch release first
    return sorted(
        found,
        key=lambda p: [int(x) for x in Path(p).parts[-3].split(".") if x.isdigit()],
        reverse=True,
    )


def _path_candidates(minor: str) -> list:
    exe = shutil.which(f"python{minor}")
    return [exe] if exe and f"{os.sep}shims{os.sep}" not in exe else []


def _uv_find(request: str) -> list:
    try:
        out = subprocess.run(
            [uv_bin(), "python", "find", "--managed-python", request],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ, UV_PYTHON_DOWNLOADS="never"),
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [out.stdout.strip()] if out.returncode == 0 and out.stdout.strip() else []


def _request(minor: str, arch: str | None, plat: Platform) -> str:
    if arch and plat.system == "darwin":
        return f"cpython-{minor}-macos-{'x86_64' if arch == 'x86_64' else 'aarch64'}"
    return minor


_searches: dict = {}  # {(minor, arch, plat): a lock}: one search for each at a time
_searches_lock = threading.Lock()


def find_python(minor: str, arch: str | None, plat: Platform, install: bool = False) -> str | None:
    """An interpreter path for Python ``minor`` on ``arch`` (default: native), or None.

    Looks at uv-managed interpreters, pyenv's versions folder and PATH (shims excluded); with
    ``install`` and downloads allowed, asks uv to download one (the only way on a new Mac).
    Found once a process (``find_python.cache_clear()`` forgets); threads asking at once (the
    TUI's tabs, reading as it starts) wait for the one search instead of each making it.
    """
    with _searches_lock:
        search = _searches.setdefault((minor, arch, plat), threading.Lock())
    with search:
        return _found(minor, arch, plat, install)


@cache
def _found(minor: str, arch: str | None, plat: Platform, install: bool = False) -> str | None:
    want_machine = arch or plat.machine
    prefix = arch_prefix(arch, plat)
    request = _request(minor, arch, plat)
    candidates = _uv_find(request)
    if not prefix:  # pyenv and PATH interpreters are native
        candidates += _pyenv_candidates(minor) + _path_candidates(minor)
    for python in candidates:
        got = probe(python, prefix)
        if got and got[0].startswith(minor + ".") and _same_machine(got[1], want_machine):
            return python
    if install and plat.downloads:
        # tethered: a download kit no longer waits for ends with it (kit.core.children)
        try:
            children.run([uv_bin(), "python", "install", request], text=False, timeout=900)
        except (OSError, subprocess.SubprocessError):
            pass  # not installed: found or not below, as before
        _found.cache_clear()
        return _found(minor, arch, plat, install=False)
    return None


# mypy has no type for an attribute set on a function (python/mypy#2087); tests forget with it
find_python.cache_clear = _found.cache_clear  # type: ignore[attr-defined]


def _same_machine(a: str, b: str) -> bool:
    norm = {"aarch64": "arm64", "amd64": "x86_64"}
    return norm.get(a, a) == norm.get(b, b)
