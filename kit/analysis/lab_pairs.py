"""A lab pipeline's pairs as the store records them: the ones its plans made, and a bundle's host
pairs that `kit compare` made."""

from __future__ import annotations

from ..runs.store import Store


def pairs(store: Store, pipeline: str) -> list:
    """The stored pairs of pipeline ``pipeline``: (factor, run a, run b), sorted. A pair is what
    was planned (kit.runs.planning.lab, recorded by kit.app.lab.run_pairs) or what `kit compare`
    paired (a collaborator's run and its rerun here: host), never guessed again from the specs:
    two runs that happen to differ in one field were not necessarily planned as a pair (a
    seed:a pair at seeds 5 and 6 is not a `seed` pair against the run at 0)."""
    specs = store.specs(pipeline)
    # both runs this pipeline's (a bundle's pairs table is the collaborator's: checked anyway)
    return sorted({(p.factor, p.a, p.b) for p in store.pairs(pipeline)
                   if all(r in specs and specs[r].pipeline == pipeline for r in (p.a, p.b))})
