"""Is a built environment whole? Every installed file at the size its package recorded."""

from __future__ import annotations

import glob
import os
from functools import lru_cache
from pathlib import Path


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def damage(venv: Path) -> str | None:
    """What is missing or changed in a built environment, in one line (None: it is whole).

    Every installed file is listed with its size in its package's RECORD; checking that each
    is present at that size finds a deleted library (numpy's .so, say) without importing it.
    """
    python = venv_python(venv)
    if not python.exists():  # resolves the symlink: the interpreter the venv was built on
        return f"its interpreter {python} (or the Python it links to) is gone"
    sites = list(venv.glob("lib/python*/site-packages")) or list(venv.glob("Lib/site-packages"))
    if not sites:
        return "it has no site-packages folder"
    return _record_damage(str(sites[0]), _mtime(venv / "kit-stack.json"))


def recheck() -> None:
    """Forget this process's integrity checks (a long-lived process: the TUI's Setup refresh)."""
    _record_damage.cache_clear()


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


@lru_cache(maxsize=64)
def _record_damage(site: str, _marker_mtime: int) -> str | None:
    bad, checked = [], 0
    stat = os.stat
    for record in glob.glob(os.path.join(glob.escape(site), "*.dist-info", "RECORD")):
        try:
            with open(record, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError:
            return f"{Path(record).parent.name}/RECORD is unreadable"
        for line in lines:
            # path,sha256=...,size ; a path with a comma is quoted (csv) and skipped here
            path, _, size = line.rpartition(",")
            if not size.isdigit() or path.startswith('"'):
                continue
            path = path.rpartition(",")[0]
            # metadata and bytecode are rewritten by installers (uv compiles .pyc; Intel's wheels
            # record other METADATA sizes than they ship): the code and libraries are what count
            if ".dist-info/" in path or path.endswith(".pyc"):
                continue
            checked += 1
            try:
                if stat(site + os.sep + path).st_size != int(size):
                    bad.append(f"{path} (changed)")
            except OSError:
                bad.append(f"{path} (missing)")
    if not checked:
        return "no installed package is recorded in it"
    if bad:
        return f"{len(bad)} installed file(s) missing or changed, e.g. {bad[0]}"
    return None
