"""The interface every kind of stack answers: status, uses, devices, runnable form, row, build."""

from __future__ import annotations

from ...core.errors import KitError
from ..platforms import Platform
from ..stacks import Stack


class StackKind:
    """What every kind of stack answers (one subclass per kind, one module each)."""

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

    def build(self, plat: Platform | None, log=lambda msg: None) -> bool:
        """Build it from its lock file (True) or find it built (False)."""
        return False

    def expected_blas(self, plat: Platform) -> str | None:
        return None

    def download_bytes(self, plat: Platform) -> int | None:
        """What building it downloads here, in bytes (None: unknown, or a kind not built)."""
        return None

    def verify(self, log=lambda msg: None) -> dict:
        """Rebuild it from the same inputs and compare (a container stack's image)."""
        raise KitError(
            f"{self.name} is not a container stack: kit stacks verify checks an "
            "image (kit stacks verify NAME --container)"
        )


class BuildableStack(StackKind):
    """A kind kit builds from a lock file (a catalogue stack, its image): found built, and
    locked again."""

    buildable = True

    def built(self, plat: Platform | None = None) -> Stack | None:
        """The stack as built here (None: not built, or built from another lock)."""
        raise NotImplementedError

    def lock(self, upgrade: bool = False, python: str | None = None) -> None:
        """Lock it again (``upgrade``: to the newest versions its pins allow); a KitError
        where its lock is another stack's."""
        raise NotImplementedError
