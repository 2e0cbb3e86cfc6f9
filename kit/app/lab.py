"""A lab's pipeline file run end to end: its pairs planned, run, stored, and its budget read."""

from __future__ import annotations

from statistics import median
from types import SimpleNamespace

from ..analysis.lab_budget import lab_budget
from ..core.errors import KitError, Refused
from ..core.numbers import is_duration
from ..data.pipelines import LabData, add_pipeline, pipeline_info, present
from ..envs.catalogue import HOST
from ..envs.platforms import Platform
from ..runs.executing.runner import run_all
from ..runs.planning.plan import plan_file as lab_plan
from ..runs.planning.options import PlanOptions
from ..runs.store import Store
from .audit import ASK_ABOVE, Ask, Progress, at_once_here
from .selection import lab_runs


def run_lab(path, factor_names, opts: PlanOptions, store: Store, stack: str = HOST,
            jobs="auto", executor=None, progress: Progress = Progress(),
            confirm=lambda ask: True) -> dict | None:
    """`kit run --pipeline` and `kit doctor --pipeline` alike: keep the file at ``path`` by its
    hash, plan ``factor_names``' pairs on ``stack``, run what ``store`` lacks, and return
    kit.analysis.lab_budget's numbers for every pair of the file stored there (None:
    ``confirm``, asked as kit's own audit asks before more than ASK_ABOVE runs, said no)."""
    info = add_pipeline(path)
    if not run_pairs(lab_pairs(info, factor_names, opts, stack), info, store, jobs=jobs,
                     executor=executor, progress=progress, confirm=confirm):
        return None
    return lab_budget(store, info)


def lab_pairs(info: dict, factor_names, opts: PlanOptions, stack: str = HOST) -> list:
    """The pairs of ``factor_names`` for pipeline ``info``: what run_lab runs and what the
    TUI's Plan tab counts. KitError: one line (Refused: no factor, or one the file does not
    take; NotFound: no such factor)."""
    if not factor_names:
        raise Refused("choose at least one factor")
    return [p for f in factor_names for p in lab_plan(f, info, opts, stack)]


def lab_todo(pairs, store: Store) -> tuple:
    """(the runs of ``pairs``, each once; those ``store`` lacks)."""
    specs = list({s.run_id: s for p in pairs for s in (p.a, p.b)}.values())
    return specs, [s for s in specs if not store.has_run(s.run_id)]


def lab_estimate(info: dict, todo: list, store: Store, at_once: int = 1) -> dict | None:
    """How long the runs ``todo`` of pipeline ``info`` take, ``at_once`` at a time
    (kit.app.audit.at_once_here), from the wall times of its runs ``store`` holds:
    {"seconds": their median x the rounds of at_once, "median", "runs": how many it is the
    median of, "warm": whether those are warm runs alone, "at_once"}; None when it holds none.
    Only this pipeline's runs count: kit's own estimate scales other datasets' times by their
    size, and another file's times say nothing of it."""
    runs = [r for r in lab_runs(store, info["sha256"]) if is_duration(r.manifest.get("wall_s"))]
    # a worker's first run imports the file and its libraries (4-8 s against 0.8 s after, in
    # drive 35): a plan's runs mostly go to warm workers, so their times are the ones to scale
    warm = [r for r in runs if isinstance(r.manifest.get("runs_before"), int)
            and r.manifest["runs_before"] > 0]
    walls = [r.manifest["wall_s"] for r in warm or runs]
    if not walls:
        return None
    each, n = float(median(walls)), max(1, at_once)
    return {"seconds": each * -(-len(todo) // n), "median": each, "runs": len(walls),
            "warm": bool(warm), "at_once": n}


def lab_to_run(info: dict, path=None) -> dict:
    """The pipeline to run for a choice of ``info``: the file at ``path`` kept by its hash
    again (an edited file is another pipeline), else the copy this KIT_HOME keeps of
    ``info``'s hash. KitError, one line, when it keeps none: running needs the file."""
    if path is not None:
        return add_pipeline(path)
    if present(info["sha256"]):
        return pipeline_info(info["sha256"])
    raise KitError(f"running pipeline {info['name']} ({info['sha256'][:12]}) needs its file, "
                   f"which is not on this machine: choose FILE.py on the Setup tab")


def lab_factors(info: dict, plat: Platform | None = None) -> list:
    """The factors pipeline ``info`` takes, as kit's own are listed (kit.runs.planning.
    offers): [{factor, description, available, reason}], seed:NAME for each of its SEEDS,
    precision only runnable when its run takes a dtype, the stack factors as here."""
    from ..core.subject import of_pipeline
    from ..runs.planning.offers import offered

    return [o.to_json() for o in offered(of_pipeline(info), plat)]


def run_pairs(pairs, info: dict, store: Store, jobs="auto", executor=None,
              progress: Progress = Progress(), should_stop=None, confirm=lambda ask: True) -> bool:
    """Make the runs of ``pairs`` that ``store`` lacks and record the pairs whose two runs it
    holds, as kit's own audit does (also when some runs failed or ``should_stop()`` said stop):
    the readers read the pairs that were planned, never pairs guessed again from the specs.
    ``progress`` is told as an audit's is: the plan's counts, then each run stored. More than
    ASK_ABOVE runs to do: ``confirm(Ask)`` first, as run_audit asks (False: nothing ran)."""
    specs, todo = lab_todo(pairs, store)
    progress.planned(SimpleNamespace(pairs=pairs, specs=specs, skipped=[]), todo)
    n = at_once_here(todo, jobs, executor)
    if len(todo) > ASK_ABOVE and not confirm(Ask(None, store, runs=len(todo), at_once=n, seconds=(
            lab_estimate(info, todo, store, n) or {}).get("seconds"))):
        return False
    try:
        with progress.running(todo):
            run_all(specs, LabData(info), store, jobs=jobs, executor=executor,
                    on_done=progress.done, should_stop=should_stop)
    finally:
        store.add_pairs([p for p in pairs
                         if store.has_run(p.a.run_id) and store.has_run(p.b.run_id)])
    return True


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
