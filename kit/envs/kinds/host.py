"""The host stack: kit's own interpreter, always there, never built."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from importlib import metadata

from ...core.errors import KitError
from ..catalogue import HOST
from ..stacks import Stack
from .base import StackKind

_PACKAGES = ("numpy", "scipy", "scikit-learn", "threadpoolctl")


def _installed(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


class HostStack(StackKind):
    """kit's own interpreter (.venv): its runs are pipeline runs in this very Python."""

    kind = "host"

    def status(self, plat):
        return "built", None

    def uses(self):
        return ["pipeline"]

    def runnable(self):
        """kit's own interpreter, identified by its Python, machine and numeric package versions."""
        attrs = {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "os": sys.platform,
            **{p: _installed(p) for p in _PACKAGES},
        }
        ident = hashlib.sha256(json.dumps(attrs, sort_keys=True).encode()).hexdigest()
        return Stack(HOST, (sys.executable,), ident, attrs)

    def build(self, plat, log=lambda msg: None):
        raise KitError("the host stack is kit's own interpreter (.venv): there is nothing to build")
