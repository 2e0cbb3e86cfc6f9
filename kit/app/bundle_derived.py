"""What a bundle could claim but kit derives itself: each pair's factor and level from its specs."""

from __future__ import annotations

from ..core import factors
from ..core.errors import KitError
from ..core.spec import RunSpec
from ..runs.planning.stack_pairs import listed_pairs


def check_derived(doc: dict, path) -> None:
    """Refuse (one line) a bundle whose pair labels are not what their specs show: a pair's
    factor decides how the importer's own budget, advice and tolerances read it, so a seed
    pair labelled ``repeat`` would fail this machine's null experiment."""
    specs = {r["id"]: RunSpec.from_dict(r["spec"]) for r in doc["runs"]}  # checked by read()
    stacks: dict = {}
    for p in doc["pairs"]:
        a, b, factor = specs[p["a"]], specs[p["b"]], p["factor"]
        name = f"{path}: pair {p['label'][:40]!r}"
        if not _differs(factor, a, b, stacks):
            raise KitError(f"{name} is labelled {factor[:40]!r}, but its specs show "
                           f"{_shown(a, b, stacks)}; refusing the bundle")
        want = factors.level(factor, a, b)
        if p["level"] != want:
            raise KitError(f"{name} is labelled level {p['level'][:20]!r} of {factor}, but its "
                           f"specs make it level {want!r}; refusing the bundle")


def _differs(factor: str, a: RunSpec, b: RunSpec, stacks: dict) -> bool:
    f = factors.get(factor)
    if f is not None and f.planned == factors.STACKS and factor not in stacks:
        stacks[factor] = listed_pairs(factor)  # this kit's own catalogue, never the bundle's
    return factors.differs(factor, a, b, stacks.get(factor, ()))


def _shown(a: RunSpec, b: RunSpec, stacks: dict) -> str:
    """The factor(s) a pair's specs show, or what differs when no factor of this kit's does."""
    lab = [f"seed:{k}" for k in a.seed_dict] if a.pipeline else []
    found = [n for n in (*factors.names(), *lab) if _differs(n, a, b, stacks)]
    if found:
        return " or ".join(dict.fromkeys(found))
    da, db = vars(a), vars(b)
    moved = [k for k in da if da[k] != db[k]]
    return (f"no factor this kit knows (they differ in {', '.join(moved) or 'nothing'})")
