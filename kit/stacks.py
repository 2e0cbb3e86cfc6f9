"""Stacks: the interpreters a run can use. For now the host, i.e. kit's own interpreter."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from dataclasses import dataclass
from importlib import metadata

from .errors import KitError

HOST = "host"
_HOST_PACKAGES = ("numpy", "scipy", "scikit-learn", "threadpoolctl")


@dataclass(frozen=True)
class Stack:
    name: str
    python: str          # interpreter path
    identity: str        # hash of what the stack is; part of every RunSpec made in it
    attributes: dict     # python, numpy, scipy, scikit-learn, ... as declared or measured


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
    return Stack(HOST, sys.executable, ident, attrs)


def get_stack(name: str) -> Stack:
    if name == HOST:
        return host_stack()
    raise KitError(f"unknown stack {name!r}; only 'host' is available so far")
