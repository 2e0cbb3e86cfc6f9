"""The catalogue's kind: a stack of stacks/stacks.toml, built with uv from its lock file.

Its status here (built, broken, not built, or unavailable with a one-line reason), its runnable
form, its row in `kit stacks`, its build, its lock and what a build downloads all live here.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path

from ...core import children
from ...core.atomic import write_bytes
from ...core.errors import Failed, KitError
from ...core.locks import file_lock
from ...core.spools import discard, sweep_trash
from ..catalogue import MARKER, StackDef, reference
from ..integrity import damage, venv_python
from ..interpreters import arch_prefix, find_python, probe, uv_bin
from ..platforms import ROSETTA_HINT, Platform, detect
from ..stacks import Stack
from .base import BuildableStack


def _uv(args, cwd=None, env=None, what="uv", stack=""):
    """Run uv; Failed (reason: what failed and uv's last line) when it exits non-zero."""
    # tethered: uv (and a build it runs) ends with kit, so a killed build never keeps writing
    # into the venv the next one removes (kit.core.children)
    proc = children.run([uv_bin(), *args], cwd=cwd, env=dict(os.environ, **(env or {})))
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise Failed(
            f"{stack}: {what} failed: {last}" if stack else f"{what} failed: {last}",
            reason=f"{what} failed: {last}",
        )
    return proc


class CatalogueStack(BuildableStack):
    """A stack of stacks/stacks.toml, built with uv from its lock file."""

    kind = "catalogue"
    buildable = True

    def __init__(self, d: StackDef):
        super().__init__(d.name)
        self.d = d

    # -- status ---------------------------------------------------------------------------
    def _marker(self) -> dict | None:
        d = self.d
        try:
            m = json.loads((d.venv() / MARKER).read_text())
        except (OSError, ValueError):
            return None
        try:
            current = d.lock_sha256()
        except KitError:
            return None
        return m if m.get("lock_sha256") == current else None

    def unavailable_reason(self, plat: Platform, check_python: bool = True) -> str | None:
        """Why this stack cannot exist here, in one line; None if it can."""
        d = self.d
        if plat.key not in d.platforms:
            where = " and ".join(d.platforms) or "no platform"
            return f"exists on {where} only (this is {plat.key})"
        if d.arch == "x86_64" and plat.apple_silicon and not plat.rosetta:
            return f"needs Rosetta 2 to run x86_64 Python; install it with: {ROSETTA_HINT}"
        if d.needs_gpu and not plat.cuda_devices:
            return "needs an NVIDIA GPU (none visible here); its CUDA wheels are ~3 GB"
        if d.needs_path and not Path(d.needs_path).exists():
            return (
                f"its lock installs from {d.needs_path}, which this machine lacks; see "
                f"stacks/{d.lock}/pyproject.toml"
            )
        if check_python and find_python(d.python, d.arch, plat) is None:
            if plat.downloads:
                return None  # uv will download it when the stack is built
            return (
                f"no Python {d.python} interpreter found (uv-managed, pyenv, PATH) and uv may "
                "not download one here (UV_PYTHON_DOWNLOADS=never or offline)"
            )
        return None

    def status(self, plat):
        reason = self.unavailable_reason(plat, check_python=False)
        if reason:
            return "unavailable", reason
        if self._marker():
            broken = damage(self.d.venv())
            if broken:
                return "broken", f"{broken}; `kit stacks build {self.name}` repairs it"
            return "built", None
        reason = self.unavailable_reason(plat)
        return ("unavailable", reason) if reason else ("not built", None)

    # -- what it is -----------------------------------------------------------------------
    def uses(self):
        return [self.d.kind]

    def devices(self):
        return list(self.d.devices) if self.d.kind == "torch" else []

    def built(self, plat: Platform | None = None) -> Stack | None:
        """The runnable form if it is (completely) built, else None."""
        d = self.d
        m = self._marker()
        if m is None or damage(d.venv()):
            return None
        plat = plat or detect()
        ident = hashlib.sha256(json.dumps([m["lock_sha256"], m["python"], m["machine"]]).encode())
        attrs = {"python": m["python"], "machine": m["machine"], **d.versions}
        return Stack(
            d.name,
            (*arch_prefix(d.arch, plat), str(venv_python(d.venv()))),
            ident.hexdigest(),
            attrs,
        )

    def runnable(self):
        stack = self.built()
        if stack is None:
            broken = self._marker() and damage(self.d.venv())
            if broken:
                raise KitError(
                    f"stack {self.name!r} is damaged ({broken}): `kit stacks build "
                    f"{self.name}` repairs it"
                )
            raise KitError(f"stack {self.name!r} is not built: run `kit stacks build {self.name}`")
        return stack

    def row(self, plat):
        d = self.d
        st, reason = self.status(plat)
        return {
            "name": d.name,
            "lock": d.lock,
            "kind": d.kind,
            "uses": [d.kind],
            "devices": self.devices(),
            "platforms": list(d.platforms),
            "reference": d.name == reference(),
            "attributes": {
                "python": d.python,
                **d.versions,
                "blas": d.blas.get(plat.key) or d.blas,
                "arch": d.arch or "native",
            },
            "status": st,
            "reason": reason,
            "venv": str(d.venv()),
        }

    def expected_blas(self, plat):
        return self.d.blas.get(plat.key)

    # -- build ----------------------------------------------------------------------------
    def build(self, plat=None, log=lambda msg: None):
        """Create the stack's venv from its lock (binary wheels only, hashes verified by uv).

        Idempotent: a complete build of the current lock is kept (returns False); anything
        else, including a venv left half-built by an interrupt, is deleted and built again.
        """
        plat = plat or detect()
        if self.built(plat) is not None:
            return False
        venv = self.d.venv()
        with file_lock(venv.with_name(f".{venv.name}.lock")):
            return self._build(plat, log)

    def _build(self, plat: Platform, log) -> bool:
        d = self.d
        if self.built(plat) is not None:  # built by whoever held the lock before us
            return False
        reason = self.unavailable_reason(plat, check_python=False)
        if reason:
            raise Failed(f"stack {d.name} cannot be built here: {reason}", reason=reason)
        python = find_python(d.python, d.arch, plat, install=True)
        if python is None:
            why = self.unavailable_reason(plat) or "no interpreter found"
            raise Failed(f"stack {d.name}: {why}", reason=why)
        lock_sha = d.lock_sha256()
        venv = d.venv()
        sweep_trash(venv.parent)  # what an earlier removal could not finish
        if venv.exists() or venv.is_symlink():
            # half-built (a killed build: no marker, or not the current lock's): renamed aside
            # and removed, however full it is; never an OSError "Directory not empty"
            log(f"{d.name}: removing an incomplete or outdated environment")
            discard(venv)
        log(f"{d.name}: creating the environment with {python}")
        started = time.monotonic()
        try:
            _uv(["venv", "--quiet", "--python", python, str(venv)], what="uv venv", stack=d.name)
            log(f"{d.name}: installing {d.lock}/uv.lock")
            # --frozen: the lock as committed, never re-resolved; --no-build: wheels only
            _uv(
                [
                    "sync",
                    "--frozen",
                    "--no-build",
                    "--no-install-project",
                    "--compile-bytecode",
                    "--quiet",
                    "--python",
                    str(venv_python(venv)),
                ],
                cwd=d.lock_dir(),
                env={"UV_PROJECT_ENVIRONMENT": str(venv)},
                what="uv sync",
                stack=d.name,
            )
            got = probe(str(venv_python(venv)), arch_prefix(d.arch, plat))
            if got is None:
                why = "the new environment's interpreter does not start"
                raise Failed(f"stack {d.name}: {why}", reason=why)
            # its size and time: the rate an estimate of the next builds reads (build_time)
            marker = {
                "lock_sha256": lock_sha,
                "python": got[0],
                "machine": got[1],
                "interpreter": python,
                "built": datetime.now(UTC).isoformat(),
                "build_s": round(time.monotonic() - started, 3),
                "download_bytes": self.download_bytes(plat) or 0,
            }
            write_bytes(venv / MARKER, json.dumps(marker, indent=1).encode())
        except BaseException:
            discard(venv)  # never leave a venv that looks usable
            raise
        return True

    def download_bytes(self, plat: Platform) -> int | None:
        """The wheels a build downloads here, summed from its uv.lock (None: unknown).

        uv.lock lists every platform's wheels with their sizes; the ones for this platform and
        the stack's Python are counted (the largest where several fit). A local wheel (no size
        in the lock) counts its file's size; None where that file is not here.
        """
        wheels = self.wheels(plat)
        if wheels is None or any(size is None for _, size in wheels):
            return None  # a local wheel not here: its size is not known, and no total is made up
        return sum(size for _, size in wheels)

    def wheels(self, plat: Platform) -> list | None:
        """[(url or path, size)] of the wheel of each package a build here installs, from its
        uv.lock (the largest where several fit); None: no lock to read, or no such platform."""
        d = self.d
        try:
            doc = tomllib.loads((d.lock_dir() / "uv.lock").read_text())
        except (OSError, tomllib.TOMLDecodeError):
            return None
        minor = d.python.replace(".", "")
        arch = {
            "linux-x86_64": ("linux", "x86_64"),
            "macos-arm64": ("macosx", "arm64"),
            "macos-x86_64": ("macosx", "x86_64"),
        }.get(plat.key)
        if arch is None:
            return None
        if d.arch == "x86_64":
            arch = (arch[0], "x86_64")
        out = []
        for pkg in doc.get("package", []):
            fit = [
                (_size(w, d.lock_dir()), w.get("url") or w.get("path") or "")
                for w in pkg.get("wheels", [])
                if _fits(w.get("url") or w.get("path") or "", minor, arch)
            ]
            if fit:
                size, where = max(fit, key=lambda f: (f[0] is not None, f[0] or 0))
                out.append((where, size))
        return out

    def build_record(self) -> dict | None:
        """What its build recorded (kit.envs.build_time reads its size and seconds): the
        marker of a whole build, else None."""
        return self._marker() if self.built() is not None else None

    def lock(self, upgrade: bool = False, python: str | None = None) -> None:
        """Re-resolve its pyproject.toml into uv.lock for every platform it lists."""
        args = ["lock", "--quiet"] + (["--upgrade"] if upgrade else [])
        # any interpreter >= 3.9 can lock: the environment markers fix the Python minor version
        args += ["--python", python or sys.executable]
        _uv(
            args,
            cwd=self.d.lock_dir(),
            env={"UV_PYTHON_DOWNLOADS": "never"},
            what=f"{self.d.lock}: uv lock",
        )


def _size(wheel: dict, lock_dir: Path) -> int | None:
    """A lock's wheel's bytes: the size uv.lock records for an index's wheel; a local wheel
    (`path`, no size: torch-linux-cpu's 183 MB torch from /opt/wheels) read from its file, so
    it is not counted as 0 (its stack was estimated at ~28 MB; a relative path is the lock's
    folder's, as uv reads it); None: that file is not here."""
    if "size" in wheel or "path" not in wheel:
        return wheel.get("size", 0)
    try:
        return os.path.getsize(Path(lock_dir, wheel["path"]))
    except OSError:
        return None


def _fits(url: str, minor: str, arch: tuple) -> bool:
    """Does a wheel's file name fit CPython ``minor`` ("312") on (system, machine)?"""
    name = url.rsplit("/", 1)[-1]
    if not name.endswith(".whl"):
        return False
    try:
        py, abi, plats = name[:-4].split("-")[-3:]
    except ValueError:
        return False
    py_ok = any(
        t in (f"cp{minor}", "py3", "py2.py3")
        or (abi == "abi3" and t.startswith("cp3") and int(t[3:]) <= int(minor[1:]))
        for t in py.split(".")
    )
    system, machine = arch
    plat_ok = plats == "any" or (system in plats and (machine in plats or "universal2" in plats))
    return py_ok and plat_ok
