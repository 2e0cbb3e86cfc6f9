"""One interface for the three kinds of stack: the host, the catalogue's, and external ones.

``choose(name)`` picks the kind once (as pooch's ``choose_downloader`` picks a downloader), and
every caller asks the same questions of it: its status here, what it can run, which torch
devices it has, its runnable form, its row in `kit stacks`, and whether it can be built.
"""

from __future__ import annotations

from ..core.errors import KitError
from . import external
from .build import build as build_def
from .catalogue import HOST, StackDef, definitions, reference
from .platforms import Platform, detect
from .stacks import (Stack, _marker, built_stack, external_stack, external_status, host_stack,
                     status)
from .integrity import damage


class StackKind:
    """What every kind of stack answers."""

    kind = ""
    buildable = False

    def __init__(self, name: str):
        self.name = name

    def status(self, plat: Platform) -> tuple:
        """("built" | "broken" | "not built" | "unavailable", reason or None)."""
        raise NotImplementedError

    def uses(self) -> list:
        """What it can run: "pipeline", "torch" or both."""
        raise NotImplementedError

    def devices(self) -> list:
        """The torch devices its torch can use (none without torch)."""
        return []

    def runnable(self) -> Stack:
        """The interpreter and identity runs use; a KitError saying why not."""
        raise NotImplementedError

    def row(self, plat: Platform) -> dict | None:
        """Its row in `kit stacks` (None: not listed)."""
        return None

    def build(self, plat: Platform, log=lambda msg: None) -> bool:
        """Build it from its lock file (True) or find it built (False)."""
        return False

    def expected_blas(self, plat: Platform) -> str | None:
        return None


class HostStack(StackKind):
    """kit's own interpreter: always there, never built."""

    kind = "host"

    def status(self, plat):
        return "built", None

    def uses(self):
        return ["pipeline"]

    def runnable(self):
        return host_stack()

    def build(self, plat, log=lambda msg: None):
        raise KitError("the host stack is kit's own interpreter (.venv): there is nothing to build")


class CatalogueStack(StackKind):
    """A stack of stacks/stacks.toml, built with uv from its lock file."""

    kind = "catalogue"
    buildable = True

    def __init__(self, name: str, d: StackDef):
        super().__init__(name)
        self.d = d

    def status(self, plat):
        return status(self.d, plat)

    def uses(self):
        return [self.d.kind]

    def devices(self):
        return list(self.d.devices) if self.d.kind == "torch" else []

    def runnable(self):
        stack = built_stack(self.d)
        if stack is None:
            broken = _marker(self.d) and damage(self.d.venv())
            if broken:
                raise KitError(f"stack {self.name!r} is damaged ({broken}): `kit stacks build "
                               f"{self.name}` repairs it")
            raise KitError(f"stack {self.name!r} is not built: run `kit stacks build {self.name}`")
        return stack

    def row(self, plat):
        d = self.d
        st, reason = self.status(plat)
        return {"name": d.name, "lock": d.lock, "kind": d.kind, "uses": [d.kind],
                "devices": self.devices(), "platforms": list(d.platforms),
                "reference": d.name == reference(),
                "attributes": {"python": d.python, **d.versions,
                               "blas": d.blas.get(plat.key) or d.blas, "arch": d.arch or "native"},
                "status": st, "reason": reason, "venv": str(d.venv())}

    def build(self, plat, log=lambda msg: None):
        return build_def(self.d, plat, log)

    def expected_blas(self, plat):
        return self.d.blas.get(plat.key)


class ExternalStack(StackKind):
    """An interpreter a user registered (`kit stacks add`): run as it is, probed on each use."""

    kind = "external"

    def __init__(self, name: str, entry: dict):
        super().__init__(name)
        self.entry = entry

    def status(self, plat):
        return external_status(self.entry)

    def uses(self):
        return external.uses(self.entry["facts"])

    def devices(self):
        facts = external.probe(self.name)
        return facts["devices"] if facts["torch"] else []

    def runnable(self):
        return external_stack(self.name)

    def row(self, plat):
        st, reason = self.status(plat)
        f = self.entry["facts"]  # as seen when added: listing never starts an interpreter
        torch = f.get("torch") or {}
        return {"name": self.name, "lock": None, "kind": "external", "uses": external.uses(f),
                "devices": f["devices"] if torch else [], "platforms": [plat.key],
                "reference": False,
                "attributes": {"python": f["python"], **f["packages"],
                               **({"torch": torch["version"]} if torch else {}),
                               "blas": ", ".join(f["blas"]) or None, "arch": f["machine"]},
                "status": st, "reason": reason, "venv": self.entry["python"]}

    def build(self, plat, log=lambda msg: None):
        raise KitError(f"stack {self.name} is external: kit runs it as it is and never builds or "
                       "locks it")


def choose(name: str) -> StackKind:
    """The kind of the stack called ``name``; a KitError naming the fix when there is none."""
    if name == HOST:
        return HostStack(name)
    defs = definitions()
    if name in defs:
        return CatalogueStack(name, defs[name])
    ext = external.registry()
    if name in ext:
        return ExternalStack(name, ext[name])
    raise KitError(f"unknown stack {name!r}; `kit stacks` lists them")


def names() -> list:
    """Every listed stack: the catalogue's, then the external ones."""
    return list(definitions()) + list(external.registry())


def listing(plat: Platform | None = None) -> list:
    """Every stack with its attributes and status: what `kit stacks --json` prints."""
    plat = plat or detect()
    return [choose(n).row(plat) for n in names()]


# the questions callers ask by name
def stack_status(name: str, plat: Platform) -> tuple:
    return choose(name).status(plat)


def uses_of(name: str) -> list:
    return choose(name).uses()


def devices_of(name: str) -> list:
    return choose(name).devices()


def get_stack(name: str) -> Stack:
    return choose(name).runnable()


def build_named(name: str, plat: Platform | None = None, log=lambda msg: None) -> bool:
    return choose(name).build(plat or detect(), log)
