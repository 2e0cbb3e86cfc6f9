"""Stacks a user brings: an interpreter that already exists, registered by name.

A cluster's PyTorch module, a GPU image's Python or a lab's conda environment cannot be rebuilt
from a lock file here (no internet, or no wheel for that build), yet it is exactly what needs
measuring. ``kit stacks add NAME PYTHON`` records its path; every use probes it again, so a
run's stack identity is what the interpreter holds at that moment, not what it held when added.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

from ..core.atomic import write_bytes
from ..core.errors import KitError
from ..core.paths import subdir
from ..core.small_files import read_home_json
from ..worker.names import unknown
from .catalogue import HOST, definitions
from .launch import fingerprint
from .probes import PREFIX as PROBE_PREFIX

# fullmatch: `$` also matches before a final newline ("x\n" was a plain name, #37)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_MIN_PYTHON = (3, 9)  # the worker's oldest syntax


def registry_path() -> Path:
    return subdir("stacks") / "external.json"


def registry() -> dict:
    """{name: {"python": path, "added": iso time, "facts": what the probe saw when added}}."""
    path = registry_path()
    try:
        return read_home_json(path) or {}
    except OSError as e:
        raise KitError(f"cannot read the external stacks in {path}: {e}") from e


def _fingerprint(python: str) -> dict:
    try:
        return fingerprint((python,))
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        raise KitError(
            f"{python} does not run kit's worker (it needs Python 3.9 or later with numpy): {e}"
        ) from e


def add(name: str, python: str) -> dict:
    """Probe ``python`` and register it as ``name``; returns the registry entry."""
    if not _NAME.fullmatch(name):
        raise KitError(
            f"stack name {name!r}: use letters, digits, '.', '_' and '-' "
            "(at most 64, starting with a letter or digit)"
        )
    if name.startswith(PROBE_PREFIX):  # a release scan's probe stack is found by such a name
        raise KitError(
            f"stack name {name!r}: names starting with {PROBE_PREFIX!r} are kept for "
            "the probe stacks of `kit explain`'s release scans; choose another"
        )
    if name == HOST or name in definitions():
        raise KitError(
            f"stack name {name!r} is taken (the host or a stack in kit's catalogue); choose another"
        )
    path = Path(python).expanduser()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise KitError(f"{python} is not an executable file")
    # absolute, but not resolved: a venv's python is a symlink whose target has no site-packages
    path = path.absolute()
    facts = _fingerprint(str(path))
    version = tuple(int(x) for x in facts["python"].split(".")[:2])
    if version < _MIN_PYTHON:
        raise KitError(f"{python} is Python {facts['python']}; the worker needs 3.9 or later")
    summary = _summary(facts)
    entry = {"python": str(path), "added": datetime.now(UTC).isoformat(), "facts": summary}
    if not uses(summary):
        raise KitError(
            f"{python} has numpy but neither scipy with scikit-learn (the pipeline) "
            "nor torch (the torch stage): no factor could run in it"
        )
    reg = registry()
    reg[name] = entry
    write_bytes(registry_path(), json.dumps(reg, indent=1, sort_keys=True).encode())
    _probe_python.cache_clear()
    return entry


def _known(reg: dict, name: str) -> None:
    """KitError, one line with the closest names, if ``name`` is no external stack."""
    if name not in reg:
        raise KitError(unknown("no external stack", name, reg, "; `kit stacks` lists them"))


def remove(name: str) -> None:
    reg = registry()
    _known(reg, name)
    del reg[name]
    write_bytes(registry_path(), json.dumps(reg, indent=1, sort_keys=True).encode())
    _probe_python.cache_clear()


def _summary(fp: dict) -> dict:
    """The facts that make an interpreter what it is (not its thread settings or this CPU)."""
    torch = fp.get("torch") or {}
    blas = sorted(
        {
            f"{p.get('internal_api')} {p.get('version')}"
            for p in fp.get("threadpools") or []
            if p.get("user_api") == "blas"
        }
    )
    devices = ["cpu"] + [
        d
        for d, ok in (("cuda", torch.get("cuda_available")), ("mps", torch.get("mps_available")))
        if ok
    ]
    return {
        "python": fp["python"],
        "implementation": fp["implementation"],
        "machine": fp["machine"],
        "os": fp["os"],
        "executable": fp["executable"],
        "packages": {k: v for k, v in fp["packages"].items() if v},
        "blas": blas,
        "torch": {k: torch.get(k) for k in ("version", "cuda", "cudnn")} if torch else None,
        "devices": devices,
    }


def uses(facts: dict) -> list:
    """What a registered interpreter can run: the pipeline, the torch stage, or both."""
    pk = facts.get("packages", {})
    out = []
    if all(pk.get(p) for p in ("numpy", "scipy", "scikit-learn")):
        out.append("pipeline")
    if facts.get("torch"):
        out.append("torch")
    return out


def probe(name: str) -> dict:
    """The interpreter's facts now: the identity of every run made in it."""
    reg = registry()
    _known(reg, name)
    python = reg[name]["python"]
    if not Path(python).exists():
        raise KitError(
            f"external stack {name}: {python} no longer exists "
            f"(`kit stacks remove {name}`, then add it again)"
        )
    return _probe_python(python)


@lru_cache(maxsize=16)
def _probe_python(python: str) -> dict:
    # once per process and path: planning asks for a stack's identity many times
    return _summary(_fingerprint(python))


def identity(facts: dict) -> str:
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()
