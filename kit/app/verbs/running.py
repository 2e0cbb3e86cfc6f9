"""`run` and `doctor`: what a command's words ask to run, planned (verbs.plan), run and read."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core import processes
from ...core.callbacks import QUIET, Busy, Confirm, Log, Progress
from ...core.errors import Failed, Refused
from ...core.paths import kit_home, subdir
from ...core.subject import DATASET, PIPELINE, Subject, of_dataset, of_pipeline
from ...core.sweeps import sweep_store
from ...data import load_dataset
from ...data.dataset import SYNTHETIC, SYNTHETIC_N
from ...data.pipelines import add_pipeline
from ...envs.platforms import detect
from ...runs.planning.options import PlanOptions, threads_problem
from ...runs.store import Store
from ..selection import opening_dataset, pipeline_or_dataset, select
from .planning import plan
from .records import BadOption, Clash, Doctor, Ran

if TYPE_CHECKING:  # the runner and the audit are imported only when runs are made
    from ...envs.platforms import Platform
    from ...runs.executing.runner import Executor
    from ..audit import Ask
from .records import kit_factor_names as _kit_factor_names


@dataclass(frozen=True)
class ToRun:
    """What `run` runs: its ``subject`` (``why`` that one) and the ``factors`` asked of it, and
    for kit's own pipeline the ``dataset`` loaded once (a pipeline file reads its own data)."""

    subject: Subject
    factors: tuple
    dataset: object = None


def to_run(
    store: Store,
    factors=(),
    dataset: str | None = None,
    n: int | None = None,
    pipeline: str | None = None,
) -> ToRun:
    """What a command's words ask to run: a pipeline's file (kept by its hash; or the hash
    prefix of one kept here), else the dataset asked for, else the one the user's most recent
    runs used, so that `kit budget` after `kit run` shows its runs. ``factors``: kit's own
    names are checked before a dataset is loaded (BadOption: one it has not); a pipeline's as
    its pairs are planned (seed:NAME for its own SEEDS)."""
    factors = tuple(factors)
    if pipeline:
        # the file reads its own data: a dataset named too would be silently ignored
        pipeline_or_dataset(pipeline, dataset, n)
        hexed = len(pipeline) >= 4 and all(c in "0123456789abcdef" for c in pipeline.lower())
        if Path(pipeline).expanduser().is_file() or not hexed:
            path = Path(pipeline).expanduser()
            info = add_pipeline(path)  # an edited file is another pipeline
            return ToRun(
                of_pipeline(info, "as asked", {**info, "given": pipeline, "file": str(path)}),
                factors,
            )
        return ToRun(select(store, pipeline=pipeline), factors)  # from the copy kept by its hash
    factors, why = _kit_factor_names(factors), ""
    if dataset is None and store.latest_dataset() is None:
        dataset = SYNTHETIC
    elif dataset is None:
        dataset, got_n = opening_dataset(store, SYNTHETIC_N)
        n, why = n or got_n, ", as your most recent runs; --dataset NAME [--n N] chooses"
    # a generated set is stored once a run uses it: a plan that fails first leaves nothing behind
    ds = load_dataset(dataset, n, save=False)
    return ToRun(of_dataset(ds.sha256, ds.summary(), why), factors, ds)


def run(
    store: Store,
    target: ToRun,
    options,
    *,
    stack: str = "host",
    jobs: int | str = "auto",
    executor: Executor | None = None,
    progress: Progress | None = None,
    confirm: Confirm[Ask] = lambda ask: True,
    chosen: Callable[[Subject], None] = lambda subject: None,
    should_stop: Callable[[], bool] | None = None,
    plat: Platform | None = None,
) -> Ran:
    """Plan ``target``'s factors (kit.app.verbs.plan, for either kind), run what the store
    lacks and return the budget after. ``chosen(subject)`` is told what is run before anything
    is planned; ``progress``, ``confirm`` and ``should_stop`` (asked before each run: the
    TUI's cancel; the runs made are kept) are kit.app.audit.run_audit's; ``plat`` is plan's."""
    chosen(target.subject)
    return _RUNS[target.subject.kind](
        store, target, options, stack, progress, jobs, executor, confirm, should_stop, plat
    )


def _planned(store, target, options, stack, executor, plat=None):
    """``target``'s plan (kit.app.verbs.plan), skipping what ``executor`` cannot make."""
    if executor is None:
        return plan(store, target, target.factors, options, stack=stack, plat=plat)
    return plan(
        store,
        target,
        target.factors,
        options,
        stack=stack,
        unfit=executor.unfit,
        refit=executor.refit,
        plat=plat,
    )


def _run_own(
    store, target, options, stack, progress, jobs, executor, confirm, should_stop, plat
) -> Ran:
    from ...analysis.budget import budget as kit_budget
    from ...runs.executing.runner import PlanIncomplete
    from ..audit import run_audit

    planned = _planned(store, target, options, stack, executor, plat)
    a = planned.work
    failure: Exception | None = None
    try:
        run_audit(
            a,
            store,
            confirm=confirm,
            progress=progress or QUIET,
            jobs=jobs,
            executor=executor,
            planned=not planned.stacks,
            should_stop=should_stop,
        )
    except PlanIncomplete as e:  # the budget of what was made, then the error
        failure = e
    if failure is None and a.skipped and not a.pairs:  # measured nothing: not a success
        failure = Failed(
            f"nothing of the plan could run: all {len(a.skipped)} pair(s) were skipped (why, above)"
        )
    # the factors it ran in the order given, then any its pairs were planned by besides (a
    # set's order changed between processes, and so did the "no pairs of ..." line)
    asked = tuple(dict.fromkeys([*planned.factors, *(p.factor for p in a.pairs)]))
    return Ran(planned.subject, kit_budget(store, a.dataset.sha256), asked, failure)


def _run_file(
    store, target, options, stack, progress, jobs, executor, confirm, should_stop, plat
) -> Ran:
    from ...analysis.budget import output_budget
    from ..audit import Ask, build_named, run_pairs

    progress = progress or QUIET
    planned = _planned(store, target, options, stack, executor, plat)
    if planned.stacks:  # asked and built as kit's own plan's are, then planned
        missing = list(planned.stacks)
        if confirm(Ask(None, store, stacks=missing)) is False:
            return Ran(planned.subject, output_budget(store, planned.subject), planned.factors)
        with progress.building(missing):
            build_named(
                [n for n, _ in missing], plat or detect(), log=progress.log, on_built=progress.built
            )
        planned = _planned(store, target, options, stack, executor, plat)
    info, factors = planned.work, planned.factors
    for line in planned.notes:  # a stack the file's REQUIRES cannot be had for: its pairs
        progress.noted(line)
    # a large plan is asked first, as kit's own: a no raises (or answers False: nothing ran)
    run_pairs(
        list(planned.pairs),
        info,
        store,
        jobs=jobs,
        executor=executor,
        progress=progress,
        confirm=confirm,
        should_stop=should_stop,
    )
    b = output_budget(store, of_pipeline(info))  # the file as run (kept by its hash again)
    failure: Exception | None = None
    if planned.notes:  # said above, one line each; the rest of the plan ran
        failure = Failed(
            f"{len(planned.notes)} stack(s) skipped: {info['name']}'s REQUIRES "
            "cannot be had there (uv's reason above)"
        )
    shapes = [s for s in b["shapes"] if s["factor"] in factors]
    if shapes:  # the user's mistake (docs/pipelines.md, Errors): said with the budget, then 1
        s = shapes[0]
        failure = Refused(
            f"{s['output']}'s shape changes with {s['factor']} ({len(shapes)} "
            f"output(s) in all, said above): make each output's shape independent "
            f"of the seeds and settings"
        )
    return Ran(planned.subject, b, tuple(factors), failure)


_RUNS = {DATASET: _run_own, PIPELINE: _run_file}  # one way of running per subject kind


@dataclass(frozen=True)
class Where:
    """Where ``run_at`` makes its runs: here (``fresh``: a worker process per run; ``timeout``:
    each run's deadline in seconds, None: kit's default) or on ``cluster`` (`kit run
    --cluster`'s value; ``hosts``: the node classes the host factor compares)."""

    cluster: str | None = None
    hosts: tuple[str, ...] = ()
    timeout: int | None = None
    fresh: bool = False


HERE = Where()


def check_where(where: Where, threads: tuple[int, ...] = ()) -> None:
    """The rules of where runs go, whichever front end asks, before anything starts: a
    cluster's jobs have their own walltime (Clash), --hosts names a cluster's node classes
    (Clash), and here thread counts are held to this machine's cores (BadOption --threads; a
    cluster's are its workers')."""
    if where.timeout and where.cluster:
        raise Clash(
            ("--timeout", "--cluster"),
            "--timeout bounds runs made on this machine; a cluster's jobs have their "
            "own walltime (docs/cluster.md)",
        )
    if where.hosts and not where.cluster:
        raise Clash(
            ("--hosts",), "--hosts names node classes of a cluster: add --cluster (docs/cluster.md)"
        )
    wrong = None if where.cluster else threads_problem(threads, processes.cores())
    if wrong:
        raise BadOption("--threads", wrong)


def options_for(where: Where, **fields: Any) -> PlanOptions:
    """The PlanOptions of runs made ``where`` says, its rules checked first (check_where, as
    a front end's words are read: before a setting's own checks); on a cluster the cores are
    its workers' (1: until they say)."""
    check_where(where, tuple(fields.get("threads", ())))
    return PlanOptions(**fields, cores=1 if where.cluster else 0)


def run_at(
    store: Store,
    target: ToRun,
    options: PlanOptions,
    where: Where = HERE,
    *,
    stack: str = "host",
    jobs: int | str = "auto",
    progress: Progress | None = None,
    confirm: Confirm[Ask] = lambda ask: True,
    chosen: Callable[[Subject], None] = lambda subject: None,
    should_stop: Callable[[], bool] | None = None,
    plat: Platform | None = None,
    say: Log = lambda line: None,
) -> Ran:
    """``run`` where ``where`` says, under its rules (check_where: a Clash or BadOption before
    anything starts): on a cluster its node classes decide the plan (the class runs go to is
    said), and a plan whose runs are all stored starts no job where the cluster's settings name
    every class; here the executor ``where`` asks (fresh workers, a timeout). ``say(line)``:
    what kit says of the cluster, one line each."""
    check_where(where, options.threads)
    # on a cluster, the cores are its workers' (1: until they say)
    opts = replace(options, cores=1 if where.cluster else 0)
    with placed(store, target, opts, where, stack, say) as (ex, opts):
        return run(
            store,
            target,
            opts,
            stack=stack,
            jobs=jobs,
            executor=ex,
            progress=progress,
            confirm=confirm,
            chosen=chosen,
            should_stop=should_stop,
            plat=plat,
        )


@contextmanager
def placed(
    store: Store, target: ToRun, opts: PlanOptions, where: Where, stack: str, say: Log
) -> Iterator[tuple[Executor | None, PlanOptions]]:
    """(the executor, the options planned with) where ``where`` says: none here unless fresh
    workers or a timeout are asked; a cluster's, started only when its plan has runs to make,
    with its node classes in the options. What the cluster submitted again is said last."""
    with _stored_already(store, target, opts, where, stack, say) or _executor(where, say) as ex:
        if ex is not None and ex.remote:  # a cluster: its node classes decide the plan
            opts = replace(
                opts, host=ex.default_host(), hosts=ex.resolve(where.hosts), cores=ex.fewest_cores()
            )
            classes = ex.classes()
            say(
                f"runs go to node class {opts.host} of {where.cluster}"
                + (
                    f" (it also has {', '.join(list(classes)[1:])}; --factor host --hosts "
                    "compares classes)"
                    if len(classes) > 1 and not where.hosts
                    else ""
                )
            )
        try:
            yield ex, opts
        finally:
            retried = ex.retried_text() if ex is not None and ex.remote else None
            if retried:
                say(retried)


def _stored_already(store, target, opts, where, stack, say):
    """On a cluster whose settings name every node class: the unstarted cluster (as a
    context) when every run of the plan is stored, so no job is submitted; else None."""
    from ...runs.executing.unstarted import unstarted

    ex = unstarted(where.cluster) if where.cluster else None
    if ex is None:
        return None
    known = replace(
        opts, host=ex.default_host(), hosts=ex.resolve(where.hosts), cores=ex.fewest_cores()
    )
    p = plan(store, target, target.factors, known, stack=stack, unfit=ex.unfit, refit=ex.refit)
    if p.stacks or p.todo or not p.specs:
        return None
    say(
        f"every run of the plan is stored ({len(p.specs)} on node class "
        f"{known.host}): no job of {where.cluster} started"
    )
    return nullcontext(ex)


def _executor(where: Where, say: Log):
    """The cluster's executor when ``where`` names one (closed when the runs end), the local
    one for fresh workers or a timeout, else none (the runner's own warm workers)."""
    if not where.cluster:
        if where.fresh or where.timeout:
            from ...runs.executing.runner import LocalExecutor

            return closing(LocalExecutor(fresh=where.fresh, timeout=where.timeout))
        return nullcontext()
    from ...runs.executing.dask_executor import DaskExecutor

    return DaskExecutor(where.cluster, log=say)


def doctor(
    file: str | None = None,
    n: int = 200,
    busy: Busy = lambda what: nullcontext(),
    timeout: float | None = None,
) -> Doctor:
    """The machine's null experiment, thread probe and BLAS; with ``file``, that pipeline
    file's null experiment alone, in a store of its own made afresh each time (the user's
    store is never changed by it, and a doctor that read old runs again would tell nothing
    after the user seeded a generator outside the file). ``busy(what)``: around the work;
    ``timeout``: seconds each of the file's runs may take (--timeout)."""
    if file is None:
        from ..doctor import machine_doctor

        with busy("null experiment, thread probe, BLAS"):
            return Doctor(None, machine_doctor(detect(), n))

    from ..doctor import file_doctor

    sweep_store(kit_home())  # as every command that opens the store: its runs go elsewhere
    # named as the runner's temporary folders are: a kill -9's leftover is swept
    root = Path(tempfile.mkdtemp(prefix=f"tmp-{os.getpid()}-doctor-", dir=subdir("tmp")))
    try:
        with closing(Store(root)) as store, busy(f"null experiment of {file}"):
            rep = file_doctor(file, store, timeout)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return Doctor(of_pipeline({"sha256": rep["pipeline"], "name": rep["name"]}, "as asked"), rep)
