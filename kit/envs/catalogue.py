"""The stack catalogue: stacks/stacks.toml's definitions, pairs and torch stacks, read once.

A stack definition names a lock folder, the versions it pins, the BLAS it is expected to link
per platform, and an architecture; ``HOST`` is kit's own interpreter, never in the catalogue.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..core.errors import KitError
from ..core.paths import subdir
from .platforms import Platform

HOST = "host"
MARKER = "kit-stack.json"  # written last: a venv without it is half-built and is rebuilt


@dataclass(frozen=True)
class StackDef:
    """One entry of stacks/stacks.toml."""

    name: str
    lock: str
    python: str
    arch: str | None
    versions: dict
    blas: dict = field(default_factory=dict)  # platform key -> expected BLAS
    kind: str = "pipeline"  # "torch": numpy + torch, for the torch stage
    devices: tuple = ("cpu",)
    needs_path: str | None = None  # a local wheel folder the lock points at
    needs_gpu: bool = False

    @property
    def platforms(self) -> tuple:
        return tuple(self.blas)

    def lock_dir(self) -> Path:
        return stacks_dir() / self.lock

    def lock_sha256(self) -> str:
        path = self.lock_dir() / "uv.lock"
        if not path.exists():
            raise KitError(
                f"stack {self.name}: {path} is missing; run `kit stacks lock {self.lock}`"
            )
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
        out[name] = StackDef(
            name,
            d["lock"],
            d["python"],
            d.get("arch"),
            versions,
            dict(d.get("blas", {})),
            d.get("kind", "pipeline"),
            tuple(d.get("devices", ("cpu",))),
            d.get("needs_path"),
            bool(d.get("needs_gpu", False)),
        )
    return out


def reference() -> str:
    return catalogue().get("reference", HOST)


def torch_stack(plat: Platform, device: str = "cpu") -> str:
    """The torch stack for this platform (the CUDA one for --device cuda)."""
    table = catalogue().get("torch", {})
    name = table.get("cuda") if device == "cuda" else table.get(plat.key)
    if not name:
        raise KitError(
            f"no torch stack for {plat.key}" + (" with CUDA" if device == "cuda" else "")
        )
    return name
