"""Stacks as the runner needs them: status here, and the runnable form (interpreter + identity).

A catalogue stack is built, broken, not built, or unavailable with a one-line reason; the host
is kit's own interpreter; an external one is an interpreter a user registered. ``Stack`` is what
the runner needs: an argv prefix that starts the interpreter and an identity that goes into
every RunSpec made in it. kit.envs.kinds puts the three kinds behind one interface.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from . import external
from ..core.errors import KitError
from .catalogue import HOST, MARKER, StackDef
from .integrity import damage, venv_python
from .interpreters import arch_prefix, find_python
from .platforms import ROSETTA_HINT, Platform, detect

_HOST_PACKAGES = ("numpy", "scipy", "scikit-learn", "threadpoolctl")


@dataclass(frozen=True)
class Stack:
    """A runnable stack: how to start its interpreter and what it is."""

    name: str
    command: tuple       # argv prefix, e.g. ("/usr/bin/arch", "-x86_64", ".../bin/python")
    identity: str        # hash of what the stack is; part of every RunSpec made in it
    attributes: dict     # python, numpy, scipy, scikit-learn, ... as declared or measured


# -- status -----------------------------------------------------------------------------------
def _marker(d: StackDef) -> dict | None:
    try:
        m = json.loads((d.venv() / MARKER).read_text())
    except (OSError, ValueError):
        return None
    try:
        current = d.lock_sha256()
    except KitError:
        return None
    return m if m.get("lock_sha256") == current else None


def unavailable_reason(d: StackDef, plat: Platform, check_python: bool = True) -> str | None:
    """Why this stack cannot exist here, in one line; None if it can."""
    if plat.key not in d.platforms:
        where = " and ".join(d.platforms) or "no platform"
        return f"exists on {where} only (this is {plat.key})"
    if d.arch == "x86_64" and plat.apple_silicon and not plat.rosetta:
        return f"needs Rosetta 2 to run x86_64 Python; install it with: {ROSETTA_HINT}"
    if d.needs_gpu and not plat.cuda_devices:
        return "needs an NVIDIA GPU (none visible here); its CUDA wheels are ~3 GB"
    if d.needs_path and not Path(d.needs_path).exists():
        return (f"its lock installs from {d.needs_path}, which this machine lacks; see "
                f"stacks/{d.lock}/pyproject.toml")
    if check_python and find_python(d.python, d.arch, plat) is None:
        if plat.downloads:
            return None  # uv will download it when the stack is built
        return (f"no Python {d.python} interpreter found (uv-managed, pyenv, PATH) and uv may not "
                "download one here (UV_PYTHON_DOWNLOADS=never or offline)")
    return None


def status(d: StackDef, plat: Platform) -> tuple:
    """("built" | "broken" | "not built" | "unavailable", reason or None)."""
    reason = unavailable_reason(d, plat, check_python=False)
    if reason:
        return "unavailable", reason
    if _marker(d):
        broken = damage(d.venv())
        if broken:
            return "broken", f"{broken}; `kit stacks build {d.name}` repairs it"
        return "built", None
    reason = unavailable_reason(d, plat)
    return ("unavailable", reason) if reason else ("not built", None)


def external_status(entry: dict) -> tuple:
    if not Path(entry["python"]).exists():
        return "unavailable", f"{entry['python']} no longer exists"
    return "built", None


def _installed(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def host_stack() -> Stack:
    """kit's own interpreter, identified by its Python, machine and numeric package versions."""
    attrs = {"python": platform.python_version(), "machine": platform.machine(),
             "os": sys.platform, **{p: _installed(p) for p in _HOST_PACKAGES}}
    ident = hashlib.sha256(json.dumps(attrs, sort_keys=True).encode()).hexdigest()
    return Stack(HOST, (sys.executable,), ident, attrs)


def built_stack(d: StackDef, plat: Platform | None = None) -> Stack | None:
    """The runnable form of a built stack, or None if it is not (completely) built."""
    m = _marker(d)
    if m is None or damage(d.venv()):
        return None
    plat = plat or detect()
    ident = hashlib.sha256(json.dumps([m["lock_sha256"], m["python"], m["machine"]]).encode())
    attrs = {"python": m["python"], "machine": m["machine"], **d.versions}
    return Stack(d.name, (*arch_prefix(d.arch, plat), str(venv_python(d.venv()))),
                 ident.hexdigest(), attrs)


def external_stack(name: str) -> Stack:
    """A registered interpreter, identified by what it holds now."""
    facts = external.probe(name)
    python = external.registry()[name]["python"]
    attrs = {"python": facts["python"], "machine": facts["machine"], **facts["packages"],
             "external": python}
    return Stack(name, (python,), external.identity(facts), attrs)
