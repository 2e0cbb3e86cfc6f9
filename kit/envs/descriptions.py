"""Factor descriptions with the versions filled in from the stack catalogue's pairs."""

from __future__ import annotations

from ..core import factors
from ..core.errors import KitError
from .catalogue import catalogue, definitions


class _Versions(dict):
    """A template's fields, read from ``pairs.<factor>`` of stacks/stacks.toml: ``{PACKAGE}``
    (python, numpy, scipy, scikit-learn) over both stacks of every pair, ``{a PACKAGE}`` or
    ``{b PACKAGE}`` over the first or second, ``... on PLATFORM`` over one platform's pairs;
    distinct versions in catalogue order, "n/a" where the catalogue pairs no such stacks."""

    def __init__(self, name: str):
        super().__init__()
        try:
            self._pairs, self._defs = catalogue().get("pairs", {}).get(name, {}), definitions()
        except KitError:  # an unreadable catalogue fails the commands that need it, not the help
            self._pairs, self._defs = {}, {}

    def __missing__(self, field: str) -> str:
        words, _, platform = field.partition(" on ")
        side, _, package = words.rpartition(" ")
        seen = []
        for plat, pairs in self._pairs.items():
            for pair in pairs if platform in ("", plat) else ():
                for i, name in enumerate(pair):
                    d = self._defs.get(name)
                    v = d and (d.python if package == "python" else d.versions.get(package))
                    if v and side in ("", "ab"[i]) and v not in seen:
                        seen.append(v)
        return ", ".join(seen) or "n/a"


def description(factor: factors.Factor) -> str:
    """One line: what changes between the two runs of a pair, with the catalogue's versions."""
    return factor.what.format_map(_Versions(factor.name))


def descriptions() -> dict:
    """{name: description} of every factor `kit run --factor` accepts, in table order."""
    return {f.name: description(f) for f in factors.table() if f.plannable}
