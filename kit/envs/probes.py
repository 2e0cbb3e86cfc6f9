"""Probe stacks: a catalogue stack with one package's pin changed, resolved by uv under KIT_HOME.

``$KIT_HOME/probes/NAME/`` holds its pyproject.toml (the base stack's, one pin changed, this
platform's environment only: a probe is made here, for here), the uv.lock uv resolved from the
package index, probe.json (what it is) and venv/. Nothing is written into the repository's
stacks/. A locked probe is a stack like a catalogue one (kit.envs.kinds finds it by name and
builds it with uv, binary wheels only); a release uv cannot resolve is named with uv's last line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from ..core import children
from ..core.atomic import write_bytes
from ..core.errors import KitError
from ..core.locks import file_lock
from ..core.paths import subdir
from ..core.spools import spool
from .catalogue import StackDef, definitions
from .interpreters import find_python, uv_bin
from .platforms import Platform

PREFIX = "probe-"
META = "probe.json"
_NAME = re.compile(r"probe-[a-z0-9][a-z0-9._-]*", re.A)
_LONGEST = 100  # a folder name, well under any filesystem's 255 bytes
# a platform's uv environment marker: the only environment a probe's lock resolves for
_ENV = {
    "linux-x86_64": ("linux", "x86_64"),
    "macos-arm64": ("darwin", "arm64"),
    "macos-x86_64": ("darwin", "x86_64"),
}


@dataclass(frozen=True)
class ProbeDef(StackDef):
    """A stack definition whose lock folder and venv live under $KIT_HOME/probes/NAME: found
    from the name under today's KIT_HOME, so a home moved elsewhere keeps its probes."""

    base: str = ""
    package: str = ""
    version: str = ""

    def lock_dir(self) -> Path:
        return _folder(self.name)

    def venv(self) -> Path:
        return _folder(self.name) / "venv"


_FIELDS = {f.name for f in fields(ProbeDef)}


def probe_name(base: str, package: str, version: str) -> str:
    return f"{PREFIX}{base}-{package}-{version}".lower()


def _folder(name: str) -> Path:
    return subdir("probes") / name


def definition(name: str) -> ProbeDef | None:
    """The locked probe called ``name`` (None: there is none); a damaged probe.json, or one
    whose label disagrees with what its pyproject pins, is one KitError line."""
    if not is_name(name):  # no '/', no '..': a name is one folder under probes/
        return None
    path = _folder(name) / META
    text = locked_meta(path)
    if text is None:
        return None
    try:
        got = _probe_def(json.loads(text)["def"])
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        raise KitError(
            f"probe stack {name}: {path} is damaged ({type(e).__name__}: "
            f"{str(e)[:80]}); delete {path.parent} and `kit explain` locks it "
            "again"
        ) from None
    why = _mislabelled(got, name)
    if why is None:
        try:
            why = _unpinned(got, (path.parent / "pyproject.toml").read_text())
        except OSError:
            why = "its pyproject.toml cannot be read"
    if why:
        raise KitError(
            f"probe stack {name}: {path} {why}; delete {path.parent} and "
            "`kit explain` locks it again"
        )
    return got


def locked_meta(path: Path) -> str | None:
    """The text of a stack's meta file under KIT_HOME (probe.json, derived.json) when it and
    the uv.lock beside it are there (None: the stack is not locked here)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    return text if (path.parent / "uv.lock").exists() else None


def is_name(name) -> bool:
    """Whether ``name`` can be a probe's: one lowercase folder name (a case-insensitive disk
    would otherwise show one probe under two names), short enough for any filesystem."""
    return isinstance(name, str) and len(name) <= _LONGEST and bool(_NAME.fullmatch(name))


def _probe_def(d: dict) -> ProbeDef:
    """A ProbeDef from probe.json's "def", every field of the type it must have (ValueError)."""
    d = {k: v for k, v in d.items() if k in _FIELDS}  # an older one's absolute "folder" left out
    strings = ("name", "lock", "python", "kind", "base", "package", "version")
    if not (
        all(isinstance(d.get(k), str) for k in strings)
        and all(isinstance(d.get(k), dict) for k in ("versions", "blas"))
        and all(isinstance(k, str) and isinstance(v, str) for k, v in d["versions"].items())
        and all(
            isinstance(k, str) and isinstance(v, (str, type(None))) for k, v in d["blas"].items()
        )
        and isinstance(d.get("devices"), list)
        and all(isinstance(x, str) for x in d["devices"])
        and isinstance(d.get("arch"), (str, type(None)))
        and isinstance(d.get("needs_path"), (str, type(None)))
        and isinstance(d.get("needs_gpu"), bool)
    ):
        raise ValueError("a field is missing or of the wrong type")
    return ProbeDef(**{**d, "devices": tuple(d["devices"])})


def _mislabelled(d: ProbeDef, name: str) -> str | None:
    """Why ``d`` is not the probe its name says (None: it is)."""
    if not (d.name == d.lock == name == probe_name(d.base, d.package, d.version)):
        return f"describes {d.name!r}, not the probe of {d.base} at {d.package} {d.version}"
    from .derived_names import base_of

    if d.base not in definitions() and base_of(d.base) is None:
        return f"changes stack {d.base}, which is not in the catalogue nor derived from it here"
    held = d.python if d.package == PYTHON else d.versions.get(d.package.lower(), d.version)
    if held != d.version:
        return f"says it holds {d.package} {held}, not {d.version}"
    return None


def _unpinned(d: ProbeDef, text: str) -> str | None:
    """Why the probe's pyproject does not pin what it is the probe of (None: it does)."""
    if d.package == PYTHON:
        m = _MARKER.search(text)
        ok = m is not None and f"{m.group(1)}.{m.group(2)}" == d.version
    else:
        pins = re.findall(rf'"{re.escape(d.package)}\s*==\s*([^"]*)"', text, re.I)
        ok = pins == [d.version]
    return None if ok else f"pyproject.toml does not pin {d.package} {d.version}"


def locked() -> list:
    """The names of the probe stacks locked under KIT_HOME/probes/, sorted (a damaged one
    included: listing it says what is wrong)."""
    root = subdir("probes")
    return sorted(
        p.parent.name
        for p in root.glob(f"{PREFIX}*/{META}")
        if is_name(p.parent.name) and (p.parent / "uv.lock").exists()
    )


PYTHON = "python"  # a probe of the interpreter: its minor version in the environment markers
_MARKER = re.compile(
    r"python_full_version >= '(\d+)\.(\d+)' and python_full_version < "
    r"'(\d+)\.(\d+)'",
    re.A,
)


def _python_pinned(base: StackDef, text: str, version: str) -> str:
    """The pyproject's environments moved to Python ``version`` (a minor: 3.13)."""
    if not re.fullmatch(r"3\.\d+", version, re.A):
        raise KitError(f"Python {version}: a probe names a minor version (like 3.13)")
    if not _MARKER.search(text):
        raise KitError(
            f"stack {base.name} does not fix its Python minor in its environments "
            "(python_full_version >= 'X.Y' and < ...): it cannot be scanned"
        )
    nxt = f"3.{int(version.split('.')[1]) + 1}"
    return _MARKER.sub(
        f"python_full_version >= '{version}' and python_full_version < '{nxt}'", text
    )


def _no_interpreter(version: str) -> str:
    """uv's own line for a Python it cannot find here (downloads off: it fails at once), asked
    without pyenv's shims on PATH (uv cannot inspect a shim: its line would be about that)."""
    path = os.pathsep.join(
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if not p.rstrip("/").endswith("shims")
    )
    proc = subprocess.run(
        [uv_bin(), "python", "find", version],
        capture_output=True,
        text=True,
        env=dict(os.environ, PATH=path, UV_PYTHON_DOWNLOADS="never"),
    )
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    line = lines[0] if lines else f"no Python {version} interpreter found here"
    return re.sub(r"^error:\s*", "", line)


def pyproject(base: StackDef, package: str, version: str, plat: Platform) -> str:
    """The base stack's pyproject.toml with ``package`` pinned to ``version``, for this platform."""
    text = (base.lock_dir() / "pyproject.toml").read_text()
    if package == PYTHON:
        text = _python_pinned(base, text, version)
    else:
        pin = re.compile(rf'"({re.escape(package)})\s*==\s*[^"]*"', re.I)
        if len(pin.findall(text)) != 1:
            raise KitError(
                f"stack {base.name} does not pin {package} (its pyproject.toml has "
                f'no "{package}==..." line): it cannot be scanned'
            )
        text = pin.sub(lambda m: f'"{m.group(1)}=={version}"', text)
    return for_here(base, text, plat, "probe")


def for_here(base: StackDef, text: str, plat: Platform, what: str) -> str:
    """A stack's pyproject ``text`` with this platform's environment alone: a ``what`` (a
    probe, a derived stack) is locked here, for here."""
    system, machine = _ENV.get(plat.key, ("", ""))
    if system and base.arch:  # a Rosetta stack (np1-sk191-x86): its interpreter's wheels
        machine = base.arch
    here = (f"sys_platform == '{system}'", f"platform_machine == '{machine}'")
    lines = [
        ln
        for ln in text.splitlines(keepends=True)
        if not ln.lstrip().startswith('"sys_platform') or all(h in ln for h in here)
    ]
    if not any(ln.lstrip().startswith('"sys_platform') for ln in lines):
        raise KitError(
            f"stack {base.name} has no environment for {plat.key}: no {what} of it can be made here"
        )
    return "".join(lines)


def prepare(base: StackDef, package: str, version: str, plat: Platform) -> tuple:
    """(probe name, None) once ``base`` with ``package==version`` is locked here, or (None, why)
    when uv cannot resolve it (no such release, no wheel for this Python, a conflict); a lock
    made before from the same pyproject is kept (``lock_into``)."""
    name = probe_name(base.name, package, version)
    if not is_name(name):
        return (
            None,
            f"{name[:60]}...: not a probe name (over {_LONGEST} characters, or not one folder)",
        )
    text = pyproject(base, package, version, plat)
    # a probe of an interpreter: it must be had here, never downloaded
    if package == PYTHON and find_python(version, base.arch, plat) is None:
        return None, _no_interpreter(version)
    folder = _folder(name)
    versions = dict(base.versions)
    if package.lower() in ("numpy", "scipy", "scikit-learn", "torch") or package in versions:
        versions[package.lower()] = version
    python = version if package == PYTHON else base.python
    d = ProbeDef(
        name,
        name,
        python,
        base.arch,
        versions,
        {plat.key: base.blas.get(plat.key)},
        base.kind,
        tuple(base.devices),
        base.needs_path,
        base.needs_gpu,
        base.name,
        package,
        version,
    )
    why = lock_into(folder, text, META, asdict(d))
    if why:
        return None, why
    return name, None


def lock_into(folder: Path, text: str, meta: str, what: dict) -> str | None:
    """Lock pyproject ``text`` with uv into ``folder`` (a stack's lock folder under KIT_HOME)
    and write ``meta`` ({"pyproject_sha256", "def": what}) last; None once locked, else uv's
    own reason in one line (no such release, no wheel for this Python, a conflict).

    A lock made before from the same pyproject is kept: relocking could change it, and with it
    the stack's identity and every run made in it. A failed lock is tried again next time, and
    leaves the stack locked before (if any) as it was."""
    sha = hashlib.sha256(text.encode()).hexdigest()
    folder.mkdir(parents=True, exist_ok=True)
    with file_lock(folder / ".lock"):
        try:
            kept = json.loads((folder / meta).read_text())
        except (OSError, ValueError):
            kept = {}
        if kept.get("pyproject_sha256") == sha and (folder / "uv.lock").exists():
            return None
        # locked beside the stack, swapped in only once uv succeeds: a failed relock leaves a
        # cached stack, and every run stored under its name, as they were
        # (a folder locked as this process's: a killed lock's is swept by the next)
        with spool(folder.parent, f".{folder.name}.") as tmp:
            (tmp / "pyproject.toml").write_text(text)
            proc = children.run(
                [uv_bin(), "lock", "--quiet", "--python", sys.executable],
                cwd=tmp,
                env=dict(os.environ, UV_PYTHON_DOWNLOADS="never"),
            )
            if proc.returncode != 0 or not (tmp / "uv.lock").exists():
                return uv_reason(proc.stderr)
            # each file whole (os.replace); the meta file, which makes the lock a stack's, last
            os.replace(tmp / "uv.lock", folder / "uv.lock")
            os.replace(tmp / "pyproject.toml", folder / "pyproject.toml")
        write_bytes(
            folder / meta, json.dumps({"pyproject_sha256": sha, "def": what}, indent=1).encode()
        )
    return None


def uv_reason(stderr: str) -> str:
    """uv's own reason for a failed lock, in one line: its last line, without the arrow."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    last = (lines or ["uv lock gave no reason"])[-1]
    return re.sub(r"^(╰─▶|cause:|caused by:|error:)\s*", "", last, flags=re.I)


CARRIED = ("base", "package", "version")  # what a bundle carries of a probe: what it is


def carried(names) -> dict:
    """{probe name: {"base", "package", "version"}} of the locked probes among ``names`` (stack
    names), for a bundle: what each probe is, never its lock. A lock is code to install; the
    home that reads the bundle locks a probe from its own catalogue and index (``prepare``)."""
    out = {}
    for n in dict.fromkeys(names):
        d = definition(n) if is_name(n) else None
        if d is not None:
            out[n] = {"base": d.base, "package": d.package, "version": d.version}
    return out


def check_carried(name, what) -> None:
    """A bundle's probe (carried's form), or one KitError line when it is not the probe its
    name says: checked before anything of the bundle is written."""
    label = f"the bundle's probe stack {str(name)[:80]!r}"
    if not (
        is_name(name)
        and isinstance(what, dict)
        and set(what) == set(CARRIED)
        and all(isinstance(v, str) for v in what.values())
    ):
        raise KitError(
            f"{label} is malformed (a name like probe-STACK-PACKAGE-VERSION and "
            f"exactly {', '.join(CARRIED)} as text)"
        )
    if name != probe_name(what["base"], what["package"], what["version"]):
        raise KitError(
            f"{label} is not the probe of {what['base'][:40]} at "
            f"{what['package'][:40]} {what['version'][:20]}"
        )
