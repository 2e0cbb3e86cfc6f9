"""`run` and `doctor`: what a command's words ask to run, planned, run and read."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import Refused
from ...core.subject import Subject
from ...runs.store import Store
from .records import Doctor, Ran, info_of as _info, kit_factor_names as _kit_factor_names


@dataclass(frozen=True)
class ToRun:
    """What `run` runs: a pipeline's ``subject``, or kit's own pipeline on the dataset
    ``dataset`` at ``n`` (loaded once, when the audit is prepared: its Subject comes with the
    answer), ``why`` that one."""
    subject: Subject | None = None
    dataset: str | None = None
    n: int | None = None
    why: str = ""


def to_run(store: Store, dataset: str | None = None, n: int | None = None,
           pipeline: str | None = None) -> ToRun:
    """What a command's words ask to run: a pipeline's file (kept by its hash; or the hash
    prefix of one kept here), else the dataset asked for, else the one the user's most recent
    runs used, so that `kit budget` after `kit run` shows its runs."""
    from ...data.dataset import SYNTHETIC, SYNTHETIC_N
    from ..selection import opening_dataset, pipeline_or_dataset, select

    if pipeline:
        # the file reads its own data: a dataset named too would be silently ignored
        pipeline_or_dataset(pipeline, dataset, n)
        hexed = len(pipeline) >= 4 and all(c in "0123456789abcdef" for c in pipeline.lower())
        if Path(pipeline).expanduser().is_file() or not hexed:
            from ...core.subject import of_pipeline
            from ...data.pipelines import add_pipeline

            path = Path(pipeline).expanduser()
            info = add_pipeline(path)  # an edited file is another pipeline
            return ToRun(of_pipeline(info, "as asked", {**info, "given": pipeline,
                                                        "file": str(path)}))
        return ToRun(select(store, pipeline=pipeline))  # run from the copy kept by its hash
    if dataset is not None:
        return ToRun(None, dataset, n)
    name, got_n = opening_dataset(store, SYNTHETIC_N)
    if store.latest_dataset() is None:
        return ToRun(None, SYNTHETIC, n)
    return ToRun(None, name, n or got_n, ", as your most recent runs; --dataset NAME [--n N] "
                 "chooses")


def plannable(target: ToRun, names) -> tuple:
    """``names`` as the factors ``target`` can plan: kit's own names (BadOption: one it has
    not), or a pipeline's (checked as its pairs are planned: seed:NAME for its own SEEDS)."""
    names = tuple(names)
    return names if target.subject is not None else _kit_factor_names(names)


def run(store: Store, target: ToRun, factors: tuple, options, *, stack: str = "host",
        jobs="auto", executor=None, progress=None, confirm=lambda ask: True,
        chosen=lambda subject: None) -> Ran:
    """Plan ``factors``' pairs (plannable's) of ``target`` (kit.app.audit, or the lab's
    planner), run what the store lacks and return the budget after. ``chosen(subject)`` is told
    what is run before anything runs; ``progress`` and ``confirm`` are run_audit's."""
    from ..audit import Progress

    progress = progress or Progress()
    if target.subject is not None:
        return _run_lab(store, target.subject, factors, options, stack, jobs, executor,
                        progress, confirm, chosen)
    from ...analysis.budget import budget as kit_budget
    from ...core.subject import of_dataset
    from ...runs.executing.runner import PlanIncomplete
    from .. import audit as au

    a = au.prepare(factors, target.dataset, target.n, options, stack)
    subject = of_dataset(a.dataset.sha256, a.dataset.summary(), target.why)
    chosen(subject)
    failure = None
    try:
        au.run_audit(a, store, confirm=confirm, progress=progress, jobs=jobs, executor=executor)
    except PlanIncomplete as e:  # the budget of what was made, then the error
        failure = e
    # the factors it ran in the order given, then any its pairs were planned by besides (a
    # set's order changed between processes, and so did the "no pairs of ..." line)
    asked = tuple(dict.fromkeys([*factors, *(p.factor for p in a.pairs)]))
    return Ran(subject, kit_budget(store, a.dataset.sha256), asked, failure)


def _run_lab(store, subject, factors, options, stack, jobs, executor, progress, confirm,
             chosen) -> Ran:
    from ...analysis.budget import output_budget
    from ...core.subject import of_pipeline
    from ..lab import lab_pairs, lab_to_run, run_pairs

    chosen(subject)
    info = lab_to_run(_info(subject), subject.summary.get("file"))
    # a large plan is asked first, as kit's own: a no raises (or answers False: nothing ran)
    run_pairs(lab_pairs(info, factors, options, stack), info, store, jobs=jobs,
              executor=executor, progress=progress, confirm=confirm)
    b = output_budget(store, of_pipeline(info))  # the file as run (kept by its hash again)
    failure = None
    shapes = [s for s in b["shapes"] if s["factor"] in factors]
    if shapes:  # the user's mistake (docs/pipelines.md, Errors): said with the budget, then 1
        s = shapes[0]
        failure = Refused(f"{s['output']}'s shape changes with {s['factor']} ({len(shapes)} "
                          f"output(s) in all, said above): make each output's shape independent "
                          f"of the seeds and settings")
    return Ran(subject, b, tuple(factors), failure)


def doctor(file: str | None = None, n: int = 200, busy=lambda what: nullcontext()) -> Doctor:
    """The machine's null experiment, thread probe and BLAS; with ``file``, that pipeline
    file's null experiment alone, in a store of its own made afresh each time (the user's
    store is never changed by it, and a doctor that read old runs again would tell nothing
    after the user seeded a generator outside the file). ``busy(what)``: around the work."""
    if file is None:
        from ...envs.platforms import detect
        from ..doctor import machine_doctor

        with busy("null experiment, thread probe, BLAS"):
            return Doctor(None, machine_doctor(detect(), n))
    import os
    import shutil
    import tempfile
    from contextlib import closing

    from ...core.paths import subdir
    from ...core.subject import of_pipeline
    from ..lab import lab_doctor

    # named as the runner's temporary folders are: a kill -9's leftover is swept
    root = Path(tempfile.mkdtemp(prefix=f"tmp-{os.getpid()}-doctor-", dir=subdir("tmp")))
    try:
        with closing(Store(root)) as store, busy(f"null experiment of {file}"):
            rep = lab_doctor(file, store)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return Doctor(of_pipeline({"sha256": rep["pipeline"], "name": rep["name"]}, "as asked"), rep)
