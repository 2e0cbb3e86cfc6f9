"""Stacks: the pinned environments a run can use, from stacks/stacks.toml, and the host.

A stack definition names a lock folder, the versions it pins, the BLAS it is expected to link
per platform, and an architecture. Its status here is built, not built, or unavailable with a
one-line reason. ``get_stack`` turns a built one into what the runner needs: an argv prefix that
starts its interpreter and an identity that goes into every RunSpec made in it.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import platform
import sys
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from . import external
from ..core.errors import KitError
from .interpreters import arch_prefix, find_python
from ..core.paths import subdir
from .platforms import ROSETTA_HINT, Platform, detect

HOST = "host"
_HOST_PACKAGES = ("numpy", "scipy", "scikit-learn", "threadpoolctl")
MARKER = "kit-stack.json"  # written last: a venv without it is half-built and is rebuilt


@dataclass(frozen=True)
class Stack:
    """A runnable stack: how to start its interpreter and what it is."""

    name: str
    command: tuple       # argv prefix, e.g. ("/usr/bin/arch", "-x86_64", ".../bin/python")
    identity: str        # hash of what the stack is; part of every RunSpec made in it
    attributes: dict     # python, numpy, scipy, scikit-learn, ... as declared or measured


@dataclass(frozen=True)
class StackDef:
    """One entry of stacks/stacks.toml."""

    name: str
    lock: str
    python: str
    arch: str | None
    versions: dict
    blas: dict = field(default_factory=dict)  # platform key -> expected BLAS
    kind: str = "pipeline"                    # "torch": numpy + torch, for the torch stage
    devices: tuple = ("cpu",)
    needs_path: str | None = None             # a local wheel folder the lock points at
    needs_gpu: bool = False

    @property
    def platforms(self) -> tuple:
        return tuple(self.blas)

    def lock_dir(self) -> Path:
        return stacks_dir() / self.lock

    def lock_sha256(self) -> str:
        path = self.lock_dir() / "uv.lock"
        if not path.exists():
            raise KitError(f"stack {self.name}: {path} is missing; run `kit stacks lock {self.lock}`")
        return hashlib.sha256(path.read_bytes()).hexdigest()

    def venv(self) -> Path:
        return subdir("stacks") / self.name


def stacks_dir() -> Path:
    """The folder with stacks.toml and the lock folders (KIT_STACKS_DIR overrides)."""
    env = os.environ.get("KIT_STACKS_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "stacks"


@lru_cache(maxsize=4)
def _load(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise KitError(f"cannot read the stack catalogue {path}: {e}") from e


def catalogue() -> dict:
    return _load(stacks_dir() / "stacks.toml")


def definitions() -> dict:
    out = {}
    for name, d in catalogue().get("stack", {}).items():
        versions = {k: d[k] for k in ("numpy", "scipy", "scikit-learn", "torch") if k in d}
        out[name] = StackDef(name, d["lock"], d["python"], d.get("arch"), versions,
                             dict(d.get("blas", {})), d.get("kind", "pipeline"),
                             tuple(d.get("devices", ("cpu",))), d.get("needs_path"),
                             bool(d.get("needs_gpu", False)))
    return out


def reference() -> str:
    return catalogue().get("reference", HOST)


def torch_stack(plat: Platform, device: str = "cpu") -> str:
    """The torch stack for this platform (the CUDA one for --device cuda)."""
    table = catalogue().get("torch", {})
    name = table.get("cuda") if device == "cuda" else table.get(plat.key)
    if not name:
        raise KitError(f"no torch stack for {plat.key}" + (" with CUDA" if device == "cuda" else ""))
    return name


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
    return _record_damage(str(sites[0]), _mtime(venv / MARKER))


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


def _external_status(entry: dict) -> tuple:
    if not Path(entry["python"]).exists():
        return "unavailable", f"{entry['python']} no longer exists"
    return "built", None


def stack_status(name: str, plat: Platform) -> tuple:
    """status() for any stack name: the host, the catalogue's, or an external one."""
    if name == HOST:
        return "built", None
    defs = definitions()
    if name in defs:
        return status(defs[name], plat)
    ext = external.registry()
    if name in ext:
        return _external_status(ext[name])
    raise KitError(f"unknown stack {name!r}; `kit stacks` lists them")


def uses_of(name: str) -> list:
    """What a stack can run: "pipeline", "torch" or both (external ones: as probed when added)."""
    if name == HOST:
        return ["pipeline"]
    defs = definitions()
    if name in defs:
        return [defs[name].kind]
    ext = external.registry()
    return external.uses(ext[name]["facts"]) if name in ext else []


def devices_of(name: str) -> list:
    """The torch devices a stack's torch can use: declared in the catalogue, probed if external."""
    defs = definitions()
    if name in defs:
        return list(defs[name].devices) if defs[name].kind == "torch" else []
    if name in external.registry():
        facts = external.probe(name)
        return facts["devices"] if facts["torch"] else []
    return []


def listing(plat: Platform | None = None) -> list:
    """Every stack with its attributes and status: what `kit stacks --json` prints."""
    plat = plat or detect()
    ref = reference()
    out = []
    for d in definitions().values():
        st, reason = status(d, plat)
        out.append({"name": d.name, "lock": d.lock, "kind": d.kind, "uses": [d.kind],
                    "devices": devices_of(d.name),
                    "platforms": list(d.platforms),
                    "reference": d.name == ref,
                    "attributes": {"python": d.python, **d.versions,
                                   "blas": d.blas.get(plat.key) or d.blas,
                                   "arch": d.arch or "native"},
                    "status": st, "reason": reason, "venv": str(d.venv())})
    for name, e in external.registry().items():
        st, reason = _external_status(e)
        f = e["facts"]  # as seen when added: listing never starts an interpreter
        torch = f.get("torch") or {}
        out.append({"name": name, "lock": None, "kind": "external", "uses": external.uses(f),
                    "devices": f["devices"] if torch else [], "platforms": [plat.key],
                    "reference": False,
                    "attributes": {"python": f["python"], **f["packages"],
                                   **({"torch": torch["version"]} if torch else {}),
                                   "blas": ", ".join(f["blas"]) or None, "arch": f["machine"]},
                    "status": st, "reason": reason, "venv": e["python"]})
    return out


# -- runnable stacks --------------------------------------------------------------------------
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


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


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


def get_stack(name: str) -> Stack:
    if name == HOST:
        return host_stack()
    defs = definitions()
    if name not in defs:
        if name in external.registry():
            return external_stack(name)
        raise KitError(f"unknown stack {name!r}; `kit stacks` lists them")
    stack = built_stack(defs[name])
    if stack is None:
        broken = _marker(defs[name]) and damage(defs[name].venv())
        if broken:
            raise KitError(f"stack {name!r} is damaged ({broken}): `kit stacks build {name}` "
                           "repairs it")
        raise KitError(f"stack {name!r} is not built: run `kit stacks build {name}`")
    return stack
