"""An audit: the factors a user chose, planned into runs of one subject, then run and stored.

Kit's own pipeline on a dataset goes through ``prepare`` and ``run_audit``, which orders the
steps (build the stacks, plan, run) and asks before building stacks and before more than
ASK_ABOVE runs; a lab's pipeline file through ``file_pairs`` and ``run_pairs``, which ask the
same question the same way (its file reads its own data and its stacks are the ones named).
Front ends only render the questions and the progress (kit.app.verbs.run and plan drive both).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from statistics import median

import numpy as np

from ..core import factors
from ..core.callbacks import Confirm, OnBuilt, OnDone, StackLog
from ..core.errors import KitError, Refused
from ..core.numbers import is_duration
from ..core.subject import of_pipeline
from ..data import Dataset, load_dataset, save_dataset
from ..data.dataset import find_stored
from ..data.pipelines import LabData, add_pipeline, pipeline_info, present
from ..envs.catalogue import HOST
from ..envs.kinds import stack_kind
from ..envs.platforms import Platform, detect
from ..runs.executing.runner import PlanIncomplete, run_all
from ..runs.executing.schedule import together
from ..runs.planning.options import PlanOptions
from ..runs.planning.plan import plan, plan_file, reference_embedding, required_stacks
from ..runs.store import Store
from .ahead import Ahead
from .selection import pipeline_runs

ASK_ABOVE = 200  # runs; a larger plan is confirmed first (`--yes` for scripts)


@dataclass
class Audit:
    dataset: Dataset
    factors: tuple
    options: PlanOptions
    stack: str = HOST
    platform: Platform = field(default_factory=detect)
    stacks: list = field(default_factory=list)  # stacks to build before planning
    pairs: list = field(default_factory=list)
    specs: list = field(default_factory=list)  # unique run specs, reference embedding first
    skipped: list = field(default_factory=list)  # [(pair, why)]: pairs the executor cannot make

    @property
    def needs_reference(self) -> bool:
        """Torch and perturb runs train on the reference run's embedding: it runs first."""
        return any(factors.FACTORS[f].needs_reference for f in self.factors)


@dataclass(frozen=True)
class Planned:
    """What a plan of either subject holds when its runs are counted: its pairs, their runs
    once each, and the pairs skipped with why (what Progress.planned is told)."""

    pairs: list
    specs: list
    skipped: list


def prepare(
    factors,
    dataset: str = "synthetic",
    n: int | None = None,
    options: PlanOptions = PlanOptions(),
    stack: str = HOST,
    plat: Platform | None = None,
) -> Audit:
    """Load the dataset and find the stacks the factors need (nothing runs yet)."""
    if not factors:
        raise KitError("choose at least one factor")
    # a generated set is stored once a run uses it: a plan that fails first leaves nothing behind
    return audit_of(load_dataset(dataset, n, save=False), factors, options, stack, plat)


def audit_of(
    dataset: Dataset,
    factors,
    options: PlanOptions = PlanOptions(),
    stack: str = HOST,
    plat: Platform | None = None,
) -> Audit:
    """The audit of ``factors`` on a loaded ``dataset``, with the stacks they need found."""
    if not factors:
        raise KitError("choose at least one factor")
    plat = plat or detect()
    a = Audit(dataset, tuple(factors), options, stack, plat)
    a.stacks = [s for s in required_stacks(a.factors, plat, stack, options) if s != HOST]
    return a


def stacks_to_build(audit: Audit) -> list:
    """[(name, download bytes or None)] of the stacks the audit needs that are not built here."""
    return unbuilt(audit.stacks, audit.platform)


def unbuilt(names, plat: Platform) -> list:
    """[(name, download bytes or None)] of the stacks ``names`` that are not built here: what
    a plan of either kind of subject asks before building."""
    out = []
    for name in names:
        kind = stack_kind(name)
        if kind.buildable and kind.status(plat)[0] in ("not built", "broken"):
            out.append((name, kind.download_bytes(plat)))
    return out


def build_stacks(
    audit: Audit,
    log: StackLog = lambda name, msg: None,
    on_built: OnBuilt = lambda name, built: None,
) -> list:
    """Build every stack the audit needs that is not built yet; returns the ones built now."""
    return build_named(audit.stacks, audit.platform, log, on_built)


def build_named(
    names,
    plat: Platform,
    log: StackLog = lambda name, msg: None,
    on_built: OnBuilt = lambda name, built: None,
) -> list:
    """Build every stack of ``names`` not built yet; returns the ones built now. The host and
    external stacks are used as they are (an unavailable one says why here)."""
    built = []
    for name in names:
        kind = stack_kind(name)
        if not kind.buildable:
            st, why = kind.status(plat)
            if st != "built":
                raise KitError(f"stack {name}: {why}")
            continue
        made = kind.build(plat, log=lambda msg, _n=name: log(_n, msg))
        on_built(name, made)
        if made:
            built.append(name)
    return built


def plan_runs(audit: Audit, unfit=lambda spec: None, refit=lambda pair: None) -> Audit:
    """Plan the pairs (the stacks must be built: their identities are part of each run).

    ``unfit(spec)`` says why the executor has nowhere to make a run (a cluster whose workers
    offer fewer cores than its threads): such a pair goes where ``refit(pair)`` moves it (the
    smallest node class with the cores, both runs together), else it is skipped, with why."""
    pairs = [
        p
        for f in audit.factors
        for p in plan(f, audit.dataset.sha256, audit.options, audit.stack, audit.platform)
    ]
    audit.pairs, audit.skipped = [], []
    for p in pairs:
        why = unfit(p.a) or unfit(p.b)
        moved = refit(p) if why else None
        if moved is not None and not (unfit(moved.a) or unfit(moved.b)):
            p, why = moved, None
        if why:
            audit.skipped.append((p, why))
        else:
            audit.pairs.append(p)
    specs = (
        [reference_embedding(audit.dataset.sha256, where=audit.options.host)]
        if audit.needs_reference
        else []
    )
    specs += [s for p in audit.pairs for s in (p.a, p.b)]
    audit.specs = list({s.run_id: s for s in specs}.values())
    return audit


def todo(audit: Audit, store: Store) -> list:
    return [s for s in audit.specs if not store.has_run(s.run_id)]


def estimate_seconds(audit: Audit, store: Store, at_once: int = 1) -> float | None:
    """Time for the runs still to do, from the stored runs' wall times (None: no history),
    ``at_once`` of them at a time (at_once_here): their sum over it, never below the longest."""
    runs = [r for r in store.runs() if is_duration(r.manifest.get("wall_s"))]
    if not runs:
        return None
    sizes = {h: d.get("rows") for h, d in store.datasets().items()}
    each = []
    for s in todo(audit, store):
        same = [
            r.manifest["wall_s"]
            for r in runs
            if r.spec.dataset == s.dataset and r.spec.kind == s.kind
        ]
        if same:
            each.append(float(np.median(same)))
            continue
        # other datasets: scale by size (the pipeline is roughly linear in proteins here)
        timed = [
            (r.manifest["wall_s"], sizes.get(r.spec.dataset)) for r in runs if r.spec.kind == s.kind
        ]
        sized = [w * audit.dataset.n / rows for w, rows in timed if rows]
        if not sized:
            return None
        each.append(float(np.median(sized)))
    return max(sum(each) / max(1, at_once), max(each)) if each else 0.0


def at_once_here(left: list, jobs, executor) -> int:
    """How many of the runs ``left`` go at a time, as the CLI says it before they run
    (kit.runs.executing.schedule.together); 1 under dask, whose cluster decides."""
    if not left or (executor is not None and getattr(executor, "name", "") == "dask"):
        return 1
    return together(left, jobs)


def execute(
    audit: Audit,
    store: Store,
    jobs="auto",
    on_done: OnDone | None = None,
    should_stop=None,
    executor=None,
    keep_dataset: bool = True,
) -> list:
    """Run what is missing (reference embedding first), then record the pairs.

    While runs run, each finished one's verdicts and each pair whose runs are both stored are
    computed in the background (kit.app.ahead), so the budget afterwards mostly reads.
    ``should_stop()`` is asked before each run: a cancelled audit keeps every finished run,
    and executing it again resumes. ``keep_dataset=False``: a generated set is not stored (the
    doctor's scratch runs; a user's `--dataset` list stays theirs).
    """
    specs = audit.specs
    if (
        keep_dataset
        and specs
        and audit.dataset.synthetic
        and find_stored(audit.dataset.name) is None
    ):
        save_dataset(audit.dataset)  # the dataset runs are made on is one `--dataset` finds again
    before = [s.run_id for s in specs if store.has_run(s.run_id)]
    ahead = Ahead(store, audit.pairs)
    for run_id in before:  # runs stored before: their pairs are compared while the others run
        ahead.stored(run_id)

    def done(spec):
        ahead.stored(spec.run_id)
        if on_done:
            on_done(spec)

    try:
        if audit.needs_reference:
            run_all(
                specs[:1],
                audit.dataset,
                store,
                on_done=done,
                should_stop=should_stop,
                executor=executor,
            )
        finished = run_all(
            specs,
            audit.dataset,
            store,
            jobs=jobs,
            on_done=done,
            should_stop=should_stop,
            executor=executor,
        )
    except PlanIncomplete:  # the runs that were made are paired as in a whole plan
        ahead.close()
        _add_pairs(audit, store)
        raise
    except BaseException:
        ahead.close(wait=False)
        raise
    ahead.close()
    _add_pairs(audit, store)
    return finished


def _add_pairs(audit: Audit, store: Store) -> None:
    stored = {s.run_id for s in audit.specs if store.has_run(s.run_id)}
    store.add_pairs([p for p in audit.pairs if p.a.run_id in stored and p.b.run_id in stored])


@dataclass(frozen=True)
class Ask:
    """What an audit asks before it goes on: to build ``stacks`` [(name, download bytes or
    None)] first, or to do ``runs`` runs (more than ASK_ABOVE)."""

    audit: Audit | None  # None: a pipeline file's plan (its info is no Audit)
    store: Store
    stacks: list = field(default_factory=list)
    runs: int = 0
    seconds: float | None = None  # a pipeline file's plan: its own runs' (file_estimate)
    at_once: int = 1  # how many of the runs go at a time (at_once_here): the estimate counts it

    def estimate(self) -> float | None:
        """How long the runs take from past timings (read only when a renderer shows it); a
        pipeline file's plan, asked with no audit, brings its own (kit's timings are not its
        runs'), None before it has any."""
        if self.audit is None:
            return self.seconds
        return estimate_seconds(self.audit, self.store, self.at_once)


class Progress:
    """What an audit reports as it goes; a renderer overrides what it shows (here: nothing)."""

    def building(self, stacks: list):
        """Around building the stacks: ``stacks`` [(name, download bytes or None)] are the ones
        not built yet (maybe none)."""
        return nullcontext()

    def log(self, stack: str, line: str) -> None:
        """A line from building ``stack``."""

    def built(self, stack: str, made: bool) -> None:
        """``stack`` is ready (``made``: built just now)."""

    def noted(self, line: str) -> None:
        """What the plan leaves out, and why, in one line (a stack's pairs skipped)."""

    def planned(self, plan: Planned, todo: list) -> None:
        """The runs are planned; ``todo`` are the ones not stored yet."""

    def running(self, todo: list):
        """Around running the ``todo`` runs."""
        return nullcontext()

    def done(self, spec) -> None:
        """A run is stored."""


def run_audit(
    audit: Audit,
    store: Store,
    confirm: Confirm[Ask] = lambda ask: True,
    progress: Progress = Progress(),
    jobs="auto",
    should_stop=None,
    executor=None,
    planned: bool = False,
) -> list | None:
    """Build the stacks the audit needs, plan its runs, run what is missing; the ids of its
    runs now stored (None: ``confirm(Ask)`` said no, and nothing ran).

    ``confirm`` is asked before building stacks that are not built yet and before running more
    than ASK_ABOVE runs; it may also raise to refuse. ``should_stop`` is as for ``execute``.
    ``planned``: its pairs were planned just now with every stack built (kit.app.verbs.plan),
    for this executor: not planned again."""
    missing = [] if planned else stacks_to_build(audit)
    if missing and not confirm(Ask(audit, store, stacks=missing)):
        return None
    with progress.building(missing):
        if missing:  # else the planner checks the stacks as it reads them, with the fix
            build_stacks(audit, log=progress.log, on_built=progress.built)
    if not planned:
        if executor is None:
            plan_runs(audit)
        else:
            plan_runs(audit, executor.unfit, executor.refit)
    left = todo(audit, store)
    progress.planned(Planned(audit.pairs, audit.specs, audit.skipped), left)
    if len(left) > ASK_ABOVE and not confirm(
        Ask(audit, store, runs=len(left), at_once=(at_once_here(left, jobs, executor)))
    ):
        return None
    with progress.running(left):
        return execute(
            audit,
            store,
            jobs=jobs,
            on_done=progress.done,
            should_stop=should_stop,
            executor=executor,
        )


def run_file(
    path,
    factor_names,
    opts: PlanOptions,
    store: Store,
    stack: str = HOST,
    jobs="auto",
    executor=None,
    progress: Progress = Progress(),
    confirm=lambda ask: True,
) -> dict | None:
    """A pipeline file's audit end to end (`kit doctor --pipeline`'s): keep the file at
    ``path`` by its hash, plan ``factor_names``' pairs on ``stack``, run what ``store`` lacks,
    and return kit.analysis.budget.output_budget's numbers for every pair of the file stored there (None:
    ``confirm``, asked as run_audit asks before more than ASK_ABOVE runs, said no)."""
    from ..analysis.budget import output_budget

    info = add_pipeline(path)
    if info["requires"] and stack == HOST:  # its packages are added to catalogue stacks only
        raise Refused(
            f"{info['name']} has REQUIRES: kit doctor runs a file in kit's own "
            "environment, which kit adds no package to; `kit run --pipeline "
            f"{info['name']} --factor repeat,process --stack NAME` runs the same "
            "pairs in a stack with them"
        )
    if not run_pairs(
        file_pairs(info, factor_names, opts, stack),
        info,
        store,
        jobs=jobs,
        executor=executor,
        progress=progress,
        confirm=confirm,
    ):
        return None
    return output_budget(store, of_pipeline(info))


def file_pairs(
    info: dict, factor_names, opts: PlanOptions, stack: str = HOST, stacks: dict | None = None
) -> list:
    """The pairs of ``factor_names`` for pipeline file ``info``: what run_pairs runs and what a
    plan counts. ``stacks``: {stack: the stack its runs are made in} (a pipeline's derived
    stacks, kit.envs.derived.for_plan), a stack left out a stack whose pairs are skipped;
    None: every stack as named. KitError: one line (Refused: no factor, or one the file does
    not take; NotFound: no such factor)."""
    if not factor_names:
        raise Refused("choose at least one factor")
    if stacks is None:
        return [p for f in factor_names for p in plan_file(f, info, opts, stack)]

    def get(name):  # None: a stack the pipeline's packages cannot be had for
        return stack_kind(stacks[name]).runnable() if name in stacks else None

    # the factors run in ``stack`` alone, left out where it is lost (an unknown name is not
    # one: plan_file refuses it in its own line)
    single = [
        f
        for f in factor_names
        if f.startswith("seed:")
        or ((known := factors.get(f)) is not None and known.planned != factors.STACKS)
    ]
    for f in single:  # a misspelt seed:NAME is refused, even where its stack is lost
        if (
            stack not in stacks
            and f.partition(":")[2] not in (info.get("seeds") or ())
            and f.startswith("seed:")
        ):
            plan_file(f, info, opts, HOST)
    return [
        p
        for f in factor_names
        if stack in stacks or f not in single
        for p in plan_file(f, info, opts, stack, get=get)
    ]


def runs_of(pairs, store: Store) -> tuple:
    """(the runs of ``pairs``, each once; those ``store`` lacks)."""
    specs = list({s.run_id: s for p in pairs for s in (p.a, p.b)}.values())
    return specs, [s for s in specs if not store.has_run(s.run_id)]


def file_estimate(info: dict, todo: list, store: Store, at_once: int = 1) -> dict | None:
    """How long the runs ``todo`` of pipeline file ``info`` take, ``at_once`` at a time
    (at_once_here), from the wall times of its runs ``store`` holds: {"seconds": their median x
    the rounds of at_once, "median", "runs": how many it is the median of, "warm": whether those
    are warm runs alone, "at_once"}; None when it holds none. Only this file's runs count:
    kit's own estimate scales other datasets' times by their size, and another file's times
    say nothing of it."""
    runs = [
        r for r in pipeline_runs(store, info["sha256"]) if is_duration(r.manifest.get("wall_s"))
    ]
    # a worker's first run imports the file and its libraries (4-8 s against 0.8 s after, in
    # drive 35): a plan's runs mostly go to warm workers, so their times are the ones to scale
    warm = [
        r
        for r in runs
        if isinstance(r.manifest.get("runs_before"), int) and r.manifest["runs_before"] > 0
    ]
    walls = [r.manifest["wall_s"] for r in warm or runs]
    if not walls:
        return None
    each, n = float(median(walls)), max(1, at_once)
    return {
        "seconds": each * -(-len(todo) // n),
        "median": each,
        "runs": len(walls),
        "warm": bool(warm),
        "at_once": n,
    }


def file_to_run(info: dict, path=None) -> dict:
    """The pipeline file to run for a choice of ``info``: the file at ``path`` kept by its
    hash again (an edited file is another pipeline), else the copy this KIT_HOME keeps of
    ``info``'s hash. KitError, one line, when it keeps none: running needs the file."""
    if path is not None:
        return add_pipeline(path)
    if present(info["sha256"]):
        return pipeline_info(info["sha256"])
    raise KitError(
        f"running pipeline {info['name']} ({info['sha256'][:12]}) needs its file, "
        f"which is not on this machine: choose FILE.py on the Setup tab"
    )


def run_pairs(
    pairs,
    info: dict,
    store: Store,
    jobs="auto",
    executor=None,
    progress: Progress = Progress(),
    should_stop=None,
    confirm=lambda ask: True,
) -> bool:
    """Make the runs of a pipeline file's ``pairs`` that ``store`` lacks and record the pairs
    whose two runs it holds, as ``execute`` does (also when some runs failed or
    ``should_stop()`` said stop): the readers read the pairs that were planned, never pairs
    guessed again from the specs. ``progress`` is told as run_audit's is: the plan's counts,
    then each run stored. More than ASK_ABOVE runs to do: ``confirm(Ask)`` first, as run_audit
    asks (False: nothing ran)."""
    specs, left = runs_of(pairs, store)
    progress.planned(Planned(pairs, specs, []), left)
    n = at_once_here(left, jobs, executor)
    if len(left) > ASK_ABOVE and not confirm(
        Ask(
            None,
            store,
            runs=len(left),
            at_once=n,
            seconds=(file_estimate(info, left, store, n) or {}).get("seconds"),
        )
    ):
        return False
    try:
        with progress.running(left):
            run_all(
                specs,
                LabData(info),
                store,
                jobs=jobs,
                executor=executor,
                on_done=progress.done,
                should_stop=should_stop,
            )
    finally:
        store.add_pairs(
            [p for p in pairs if store.has_run(p.a.run_id) and store.has_run(p.b.run_id)]
        )
    return True
