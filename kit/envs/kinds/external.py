"""The external kind: an interpreter a user registered (`kit stacks add`), run as it is.

It is probed on each use (kit.envs.external keeps the registry and the probe), so its identity
is what the interpreter holds now; kit never builds or locks it.
"""

from __future__ import annotations

from pathlib import Path

from ...core.errors import KitError
from .. import external
from ..stacks import Stack
from .base import StackKind


class ExternalStack(StackKind):
    """An interpreter a user registered: run as it is, probed on each use."""

    kind = "external"

    def __init__(self, name: str, entry: dict):
        super().__init__(name)
        self.entry = entry

    def status(self, plat):
        if not Path(self.entry["python"]).exists():
            return "unavailable", f"{self.entry['python']} no longer exists"
        return "built", None

    def uses(self):
        return external.uses(self.entry["facts"])

    def devices(self):
        facts = external.probe(self.name)
        return facts["devices"] if facts["torch"] else []

    def runnable(self):
        """The registered interpreter, identified by what it holds now."""
        facts = external.probe(self.name)
        python = external.registry()[self.name]["python"]
        attrs = {
            "python": facts["python"],
            "machine": facts["machine"],
            **facts["packages"],
            "external": python,
        }
        return Stack(self.name, (python,), external.identity(facts), attrs)

    def row(self, plat):
        st, reason = self.status(plat)
        f = self.entry["facts"]  # as seen when added: listing never starts an interpreter
        torch = f.get("torch") or {}
        return {
            "name": self.name,
            "lock": None,
            "kind": "external",
            "uses": external.uses(f),
            "devices": f["devices"] if torch else [],
            "platforms": [plat.key],
            "reference": False,
            "attributes": {
                "python": f["python"],
                **f["packages"],
                **({"torch": torch["version"]} if torch else {}),
                "blas": ", ".join(f["blas"]) or None,
                "arch": f["machine"],
            },
            "status": st,
            "reason": reason,
            "venv": self.entry["python"],
        }

    def build(self, plat, log=lambda msg: None):
        raise KitError(
            f"stack {self.name} is external: kit runs it as it is and never builds or locks it"
        )
