"""A lab's pipeline file run end to end: its pairs planned, run, stored, and its budget read."""

from __future__ import annotations

from types import SimpleNamespace

from ..analysis.lab_budget import lab_budget
from ..data.pipelines import LabData, add_pipeline
from ..envs.catalogue import HOST
from ..runs.executing.runner import run_all
from ..runs.planning.lab import lab_plan
from ..runs.planning.options import PlanOptions
from ..runs.store import Store
from .audit import Progress


def run_lab(path, factor_names, opts: PlanOptions, store: Store, stack: str = HOST,
            jobs="auto", executor=None, progress: Progress = Progress()) -> dict:
    """`kit run --pipeline` and `kit doctor --pipeline` alike: keep the file at ``path`` by its
    hash, plan ``factor_names``' pairs on ``stack``, run what ``store`` lacks, and return
    kit.analysis.lab_budget's numbers for every pair of the file stored there."""
    info = add_pipeline(path)
    run_pairs([p for f in factor_names for p in lab_plan(f, info, opts, stack)], info, store,
              jobs=jobs, executor=executor, progress=progress)
    return lab_budget(store, info)


def run_pairs(pairs, info: dict, store: Store, jobs="auto", executor=None,
              progress: Progress = Progress()) -> None:
    """Make the runs of ``pairs`` that ``store`` lacks and record the pairs whose two runs it
    holds, as kit's own audit does (also when some runs failed): the readers read the pairs
    that were planned, never pairs guessed again from the specs. ``progress`` is told as an
    audit's is: the plan's counts, then each run stored."""
    specs = list({s.run_id: s for p in pairs for s in (p.a, p.b)}.values())
    todo = [s for s in specs if not store.has_run(s.run_id)]
    progress.planned(SimpleNamespace(pairs=pairs, specs=specs, skipped=[]), todo)
    try:
        with progress.running(todo):
            run_all(specs, LabData(info), store, jobs=jobs, executor=executor,
                    on_done=progress.done)
    finally:
        store.add_pairs([p for p in pairs
                         if store.has_run(p.a.run_id) and store.has_run(p.b.run_id)])


def lab_doctor(path, store: Store) -> dict:
    """The null experiment alone: each thread count `kit run` uses, run twice, and a fresh
    worker against a warm one (state a module keeps between runs: a generator made at import);
    ``ok`` when every output of every such pair is identical, else ``loose`` names those that
    differ."""
    b = run_lab(path, ("repeat", "process"), PlanOptions(), store)
    rows = [b["factors"].get(f, {"outputs": {}, "pairs": 0}) for f in ("repeat", "process")]
    return {"pipeline": b["pipeline"], "name": b["name"], "pairs": sum(r["pairs"] for r in rows),
            "outputs": list(dict.fromkeys(n for r in rows for n in r["outputs"])),
            "factors": [f for f in ("repeat", "process") if f in b["factors"]],
            "loose": b["loose"], "loose_line": b["loose_line"], "ok": not b["loose"]}
