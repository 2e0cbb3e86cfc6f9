"""A lab pipeline's pairs as the store records them: the ones its plans made, and a bundle's host
pairs that `kit compare` made."""

from __future__ import annotations

import numpy as np

from ..runs.store import Store
from ..worker.kinds import kind_problem


def unfit(store: Store, pipeline: str, kinds: dict) -> dict:
    """{run: one line} of the pipeline's runs whose outputs do not fit what its file's KINDS
    declare: a bundle's runs imported before the file was known here were never checked
    against it, and a reader comparing them by kind would fail on a forged shape."""
    out = {}
    for run_id, spec in store.specs(pipeline).items():
        if spec.pipeline != pipeline:
            continue
        for name, st in store.run(run_id).stages.items():
            why = kind_problem(kinds.get(name, "array"), len(st.shape), np.dtype(st.dtype).kind)
            if why:
                out[run_id] = (f"run {run_id[:12]}: its output {name[:40]!r} is declared "
                               f"{kinds.get(name, 'array')} by the pipeline's file, which must "
                               f"be {why}")
                break
    return out


def pairs(store: Store, pipeline: str, kinds: dict | None = None) -> list:
    """The stored pairs of pipeline ``pipeline``: (factor, run a, run b), sorted. A pair is what
    was planned (kit.runs.planning.lab, recorded by kit.app.lab.run_pairs) or what `kit compare`
    paired (a collaborator's run and its rerun here: host), never guessed again from the specs:
    two runs that happen to differ in one field were not necessarily planned as a pair (a
    seed:a pair at seeds 5 and 6 is not a `seed` pair against the run at 0). ``kinds``: the
    file's KINDS, whose unfit runs' pairs are left out."""
    specs = store.specs(pipeline)
    bad = unfit(store, pipeline, kinds) if kinds is not None else {}
    # both runs this pipeline's (a bundle's pairs table is the collaborator's: checked anyway)
    return sorted({(p.factor, p.a, p.b) for p in store.pairs(pipeline)
                   if all(r in specs and specs[r].pipeline == pipeline and r not in bad
                          for r in (p.a, p.b))})
