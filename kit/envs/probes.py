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
import tempfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from ..core.atomic import write_bytes
from ..core.errors import KitError
from ..core.locks import file_lock
from ..core.paths import subdir
from .catalogue import StackDef
from .interpreters import uv_bin
from .platforms import Platform

PREFIX = "probe-"
META = "probe.json"
_NAME = re.compile(r"probe-[A-Za-z0-9][A-Za-z0-9._-]*", re.A)
# a platform's uv environment marker: the only environment a probe's lock resolves for
_ENV = {"linux-x86_64": ("linux", "x86_64"), "macos-arm64": ("darwin", "arm64"),
        "macos-x86_64": ("darwin", "x86_64")}


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
    return f"{PREFIX}{base}-{package.lower()}-{version}"


def _folder(name: str) -> Path:
    return subdir("probes") / name


def definition(name: str) -> ProbeDef | None:
    """The locked probe called ``name`` (None: there is none); a damaged probe.json is one
    KitError line."""
    if not _NAME.fullmatch(name):  # no '/', no '..': a name is one folder under probes/
        return None
    path = _folder(name) / META
    try:
        text = path.read_text()
    except OSError:
        return None
    if not (path.parent / "uv.lock").exists():
        return None
    try:
        d = json.loads(text)["def"]
        # what an older probe.json holds beyond the fields (its absolute "folder") is left out
        d = {k: v for k, v in d.items() if k in _FIELDS}
        got = ProbeDef(**{**d, "devices": tuple(d["devices"])})
    except (ValueError, KeyError, TypeError) as e:
        raise KitError(f"probe stack {name}: {path} is damaged ({type(e).__name__}: "
                       f"{str(e)[:80]}); delete {path.parent} and `kit explain` locks it "
                       "again") from None
    if got.name != name:
        raise KitError(f"probe stack {name}: {path} describes {got.name!r}; delete "
                       f"{path.parent} and `kit explain` locks it again")
    return got


def locked() -> list:
    """The names of the probe stacks locked under KIT_HOME/probes/, sorted (a damaged one
    included: listing it says what is wrong)."""
    root = subdir("probes")
    return sorted(p.parent.name for p in root.glob(f"{PREFIX}*/{META}")
                  if _NAME.fullmatch(p.parent.name) and (p.parent / "uv.lock").exists())


PYTHON = "python"  # a probe of the interpreter: its minor version in the environment markers
_MARKER = re.compile(r"python_full_version >= '(\d+)\.(\d+)' and python_full_version < "
                     r"'(\d+)\.(\d+)'", re.A)


def _python_pinned(base: StackDef, text: str, version: str) -> str:
    """The pyproject's environments moved to Python ``version`` (a minor: 3.13)."""
    if not re.fullmatch(r"3\.\d+", version, re.A):
        raise KitError(f"Python {version}: a probe names a minor version (like 3.13)")
    if not _MARKER.search(text):
        raise KitError(f"stack {base.name} does not fix its Python minor in its environments "
                       "(python_full_version >= 'X.Y' and < ...): it cannot be scanned")
    nxt = f"3.{int(version.split('.')[1]) + 1}"
    return _MARKER.sub(f"python_full_version >= '{version}' and python_full_version < "
                       f"'{nxt}'", text)


def _no_interpreter(version: str) -> str:
    """uv's own line for a Python it cannot find here (downloads off: it fails at once), asked
    without pyenv's shims on PATH (uv cannot inspect a shim: its line would be about that)."""
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if not p.rstrip("/").endswith("shims"))
    proc = subprocess.run([uv_bin(), "python", "find", version], capture_output=True, text=True,
                          env=dict(os.environ, PATH=path, UV_PYTHON_DOWNLOADS="never"))
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    line = lines[0] if lines else f"no Python {version} interpreter found here"
    return re.sub(r"^error:\s*", "", line)


def pyproject(base: StackDef, package: str, version: str, plat: Platform) -> str:
    """The base stack's pyproject.toml with ``package`` pinned to ``version``, for this platform."""
    text = (base.lock_dir() / "pyproject.toml").read_text()
    if package == PYTHON:
        text = _python_pinned(base, text, version)
    else:
        pin = re.compile(r'"(%s)\s*==\s*[^"]*"' % re.escape(package), re.I)
        if len(pin.findall(text)) != 1:
            raise KitError(f"stack {base.name} does not pin {package} (its pyproject.toml has "
                           f'no "{package}==..." line): it cannot be scanned')
        text = pin.sub(lambda m: f'"{m.group(1)}=={version}"', text)
    system, machine = _ENV.get(plat.key, ("", ""))
    here = (f"sys_platform == '{system}'", f"platform_machine == '{machine}'")
    lines = [ln for ln in text.splitlines(keepends=True)
             if not ln.lstrip().startswith('"sys_platform') or all(h in ln for h in here)]
    if not any(ln.lstrip().startswith('"sys_platform') for ln in lines):
        raise KitError(f"stack {base.name} has no environment for {plat.key}: no probe of it "
                       "can be made here")
    return "".join(lines)


def prepare(base: StackDef, package: str, version: str, plat: Platform) -> tuple:
    """(probe name, None) once ``base`` with ``package==version`` is locked here, or (None, why)
    when uv cannot resolve it (no such release, no wheel for this Python, a conflict).

    A lock made before from the same pyproject is kept: relocking could change it, and with it
    the probe's identity and every run made in it. A failed lock is tried again next time, and
    leaves the probe locked before (if any) as it was.
    """
    name = probe_name(base.name, package, version)
    text = pyproject(base, package, version, plat)
    if package == PYTHON:  # a probe of an interpreter: it must be had here, never downloaded
        from .interpreters import find_python

        if find_python(version, base.arch, plat) is None:
            return None, _no_interpreter(version)
    sha = hashlib.sha256(text.encode()).hexdigest()
    folder = _folder(name)
    folder.mkdir(parents=True, exist_ok=True)
    with file_lock(folder / ".lock"):
        try:
            meta = json.loads((folder / META).read_text())
        except (OSError, ValueError):
            meta = {}
        if meta.get("pyproject_sha256") == sha and (folder / "uv.lock").exists():
            return name, None
        # locked beside the probe, swapped in only once uv succeeds: a failed relock leaves a
        # cached probe, and every run stored under its name, as they were
        with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{name}.") as tmp:
            tmp = Path(tmp)
            (tmp / "pyproject.toml").write_text(text)
            proc = subprocess.run([uv_bin(), "lock", "--quiet", "--python", sys.executable],
                                  cwd=tmp, capture_output=True, text=True,
                                  env=dict(os.environ, UV_PYTHON_DOWNLOADS="never"))
            if proc.returncode != 0 or not (tmp / "uv.lock").exists():
                lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
                last = (lines or ["uv lock gave no reason"])[-1]
                return None, re.sub(r"^(╰─▶|cause:|caused by:|error:)\s*", "", last, flags=re.I)
            # each file whole (os.replace); probe.json, which makes the lock a probe's, last
            os.replace(tmp / "uv.lock", folder / "uv.lock")
            os.replace(tmp / "pyproject.toml", folder / "pyproject.toml")
        versions = dict(base.versions)
        if package.lower() in ("numpy", "scipy", "scikit-learn", "torch") or package in versions:
            versions[package.lower()] = version
        python = version if package == PYTHON else base.python
        d = ProbeDef(name, name, python, base.arch, versions, {plat.key: base.blas.get(plat.key)},
                     base.kind, tuple(base.devices), base.needs_path, base.needs_gpu, base.name, package, version)
        write_bytes(folder / META, json.dumps({"pyproject_sha256": sha, "def": asdict(d)},
                                              indent=1).encode())
    return name, None


CARRIED = ("pyproject.toml", "uv.lock", META)  # what a bundle carries of a probe: its lock


def carried(names) -> dict:
    """{probe name: {file: text}} of the locked probes among ``names`` (stack names), for a
    bundle: another KIT_HOME then knows each probe's lock and can build it to rerun its runs."""
    out = {}
    for n in dict.fromkeys(names):
        if definition(n) is not None:
            out[n] = {f: (_folder(n) / f).read_text() for f in CARRIED}
    return out


def check_carried(name, files) -> None:
    """A bundle's probe (carried's form), or one KitError line when its files do not hold
    together: checked before anything of the bundle is written."""
    what = f"the bundle's probe stack {str(name)[:80]!r}"
    if not (isinstance(name, str) and _NAME.fullmatch(name) and isinstance(files, dict)
            and set(files) == set(CARRIED) and all(isinstance(v, str) for v in files.values())):
        raise KitError(f"{what} is malformed (a name like probe-STACK-PACKAGE-VERSION and "
                       f"exactly {', '.join(CARRIED)} as text)")
    try:
        meta = json.loads(files[META])
        d = {k: v for k, v in meta["def"].items() if k in _FIELDS}
        got = ProbeDef(**{**d, "devices": tuple(d["devices"])})
        sha = hashlib.sha256(files["pyproject.toml"].encode()).hexdigest()
        assert got.name == got.lock == name and meta["pyproject_sha256"] == sha
    except (ValueError, KeyError, TypeError, AttributeError, AssertionError):
        raise KitError(f"{what} does not hold together (its probe.json does not describe "
                       "that name and pyproject.toml)") from None


def adopt(name: str, files: dict) -> str | None:
    """Lock a bundle's probe (checked by check_carried) here as it came (None), unless one of
    that name is locked here already: kept, since this home's runs were made in it (the line
    says so when the two locks differ)."""
    check_carried(name, files)
    if definition(name) is not None:
        same = (_folder(name) / "uv.lock").read_text() == files["uv.lock"]
        return None if same else (f"probe stack {name}: the bundle's lock differs from the one "
                                  "here; kept this one")
    folder = _folder(name)
    folder.mkdir(parents=True, exist_ok=True)
    with file_lock(folder / ".lock"):
        for f in CARRIED:  # probe.json, which makes the folder a probe's, last
            write_bytes(folder / f, files[f].encode())
    return None
