"""The verbs every front end calls: a Subject and options in, a frozen record out.

Each verb reads (or runs) what one Subject (kit.core.subject) is of: kit's own pipeline on a
dataset, or a lab's pipeline file. Inside a verb the two may still go to their own analysis
(kit.analysis.budget or lab_budget, until the twins merge); above this module nothing asks
which kind a subject is. A verb that cannot answer for a kind raises Refused, one line, saying
what it needs. Progress and questions go through callbacks, as kit.app.audit.run_audit's do.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import NotFound, Refused
from ..core.subject import DATASET, PIPELINE, Subject
from ..runs.store import Store
from .selection import as_selection, lab_runs, pipeline_info_of


class BadOption(Refused):
    """An option's value the subject does not take (an unknown factor of kit's own): said as
    the command line's usage error for ``option``."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


@dataclass(frozen=True)
class Budget:
    """``data``: the budget (--json's object); kit's own with ``factor``: its pairs' rows.
    ``verdicts``: a pipeline's verdicts, shown beside its budget."""
    subject: Subject
    data: object
    factor: str | None = None
    verdicts: dict | None = None


@dataclass(frozen=True)
class Verdicts:
    subject: Subject
    data: dict
    note: str | None = None  # kit's own: the runs whose arrays are not stored


@dataclass(frozen=True)
class Reading:
    """One verb's answer that is its numbers alone: amplify, advise, homology, tolerances."""
    subject: Subject
    data: dict


@dataclass(frozen=True)
class Runs:
    subject: Subject | None  # None: every stored run
    runs: tuple
    datasets: dict = field(default_factory=dict)
    filtered: bool = False


@dataclass(frozen=True)
class Explanation:
    """``result``: kit.app.releases.explained's, with ``unscanned`` the notes of scans not made
    (``declined``: the reason the release scan was skipped, for the front end to say how to
    run it); ``not_run``: why each cross-fed run that cannot be made here was left out."""
    subject: Subject
    result: dict
    declined: str | None = None
    not_run: tuple = ()


@dataclass(frozen=True)
class Ran:
    """`kit run`'s answer: the budget after the runs (``asked``: the factors this command ran),
    and ``failure``, the error to raise once the budget is shown (runs that failed, or a
    pipeline's output whose shape changed), else None."""
    subject: Subject
    budget: dict
    asked: tuple
    failure: Exception | None = None


@dataclass(frozen=True)
class Doctor:
    """`kit doctor`: the machine's null experiment and probes, or a pipeline file's alone."""
    subject: Subject | None  # None: the machine's
    data: dict

    @property
    def ok(self) -> bool:
        return bool(self.data["ok"])


@dataclass(frozen=True)
class Export:
    """The runs an export of the subject carries (in order, each once)."""
    subject: Subject
    ids: tuple


def _info(subject: Subject) -> dict:
    return pipeline_info_of(subject)


def _kit_factor_names(names) -> tuple:
    """``names`` as kit's own factor names; BadOption as --factor's type says it."""
    from ..core import factors

    bad = [f for f in names if f not in factors.plannable()]
    if bad or not names:
        hint = factors.suggest(bad[0]) if bad else None
        raise BadOption("--factor", f"unknown factor {', '.join(bad) or ','.join(names)!r}"
                        + (f" (did you mean {hint}?)" if hint else "")
                        + f"; choose from {', '.join(factors.plannable())}")
    return tuple(names)


def _known_factor(name: str, stored: set) -> None:
    """A name no factor has (kit.core.factors' registry, or pairs an older kit stored): unknown,
    with the closest names, not "no pairs"."""
    import difflib

    from ..core import factors

    known = set(factors.names()) | stored
    if name in known:
        return
    close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.5)
    raise Refused(f"unknown factor {name!r}: " + (f"did you mean {' or '.join(close)}?" if close
                                                  else "choose from " + ", ".join(factors.names())))


def _lab_readings(store: Store, subject: Subject, factor: str | None = None) -> tuple:
    """(budget, verdicts) of a pipeline, only ``factor``'s when given (NotFound: none stored)."""
    from ..analysis.lab_budget import lab_budget
    from ..analysis.lab_verdicts import lab_verdicts

    info = _info(subject)
    b, v = lab_budget(store, info), lab_verdicts(store, info)
    if factor:
        if factor not in b["factors"]:
            raise NotFound(f"no pairs of factor {factor!r} of pipeline {info['name']}; stored: "
                           f"{', '.join(b['factors']) or 'none'}")
        b = {**b, "factors": {factor: b["factors"][factor]}}
        v = {**v, "factors": {k: r for k, r in v["factors"].items() if k == factor}}
    return b, v


def budget(store: Store, subject: Subject, factor: str | None = None) -> Budget:
    """The budget table of the subject's stored pairs; with ``factor``, that factor's pairs."""
    if subject.kind == PIPELINE:
        from ..analysis.lab_budget import lab_pair_details

        b, v = _lab_readings(store, subject, factor)
        if factor:  # the pairs behind the row, as kit's own `kit budget --factor` lists them
            b["pairs"] = lab_pair_details(store, _info(subject), factor)
        return Budget(subject, b, factor, v)
    from ..analysis.budget import budget as kit_budget, pair_details

    if factor:
        _known_factor(factor, {p.factor for p in store.pairs()})
        rows = pair_details(store, subject.sha256, factor)
        if not rows:
            raise NotFound(f"no pairs of factor {factor!r} on dataset "
                           f"{subject.summary.get('name', subject.short)}")
        return Budget(subject, rows, factor)
    return Budget(subject, kit_budget(store, subject.sha256, dict(subject.summary)))


def verdicts(store: Store, subject: Subject, run_set: str | None = None) -> Verdicts:
    """The stability of the subject's verdicts (``run_set``: one set, or one factor's pairs)."""
    if subject.kind == PIPELINE:
        return Verdicts(subject, _lab_readings(store, subject, run_set)[1])
    from ..analysis.verdicts import arrays_note, stability_report

    rep = stability_report(store, subject.sha256, run_set)
    return Verdicts(subject, rep, arrays_note(store, subject.sha256))


def amplify(store: Store, subject: Subject) -> Reading:
    """How each model amplifies a small perturbation of the embedding."""
    if subject.kind == PIPELINE:
        raise Refused(f"amplify reads perturbation curves (kit run --factor perturb), which "
                      f"need an embedding stage the models are trained on: {subject.label()} "
                      f"declares outputs, not stages; its budget: kit budget --pipeline")
    from ..analysis.amplify import report
    from ..analysis.budget import budget as kit_budget

    return Reading(subject, report(kit_budget(store, subject.sha256)["rows"]))


def advise(store: Store, subject: Subject) -> Reading:
    """What to pin first, from the measured budget."""
    if subject.kind == PIPELINE:
        from ..analysis.lab_advice import lab_advise

        return Reading(subject, lab_advise(*_lab_readings(store, subject)))
    from ..analysis.advice import advise as kit_advise
    from ..analysis.budget import budget as kit_budget

    sha = subject.sha256
    return Reading(subject, kit_advise(store, sha, kit_budget(store, sha, dict(subject.summary))))


def homology(store: Store, subject: Subject, identity: float | None = None,
             coverage: float | None = None, data: str | None = None) -> Reading:
    """Verdicts under a cluster bootstrap and accuracy with and without a train homolog
    (``data``: a pipeline's, the stored dataset whose clustering its protein ids are read in)."""
    if subject.kind == PIPELINE:
        return Reading(subject, _lab_homology(store, subject, identity, coverage, data))
    if data:
        raise Refused("--data goes with --pipeline FILE.py (kit's own runs: --dataset NAME)")
    from ..analysis.homology import for_dataset
    from .selection import load_name

    h = for_dataset(store, subject.sha256, identity, coverage)
    if h is None:
        at = "".join(f" --{k} {v:g}" for k, v in (("identity", identity),
                                                   ("coverage", coverage)) if v is not None)
        raise NotFound(f"no homology clustering of this dataset{' at' + at if at else ''} yet: "
                       f"`kit data homology {load_name(dict(subject.summary))}{at}` computes it "
                       "(MMseqs2, about 20 s per 6,000 proteins)")
    return Reading(subject, h)


def _lab_homology(store, subject, identity, coverage, data) -> dict:
    from ..analysis.lab_homology import find_clustering, lab_homology, protein_outputs

    info = _info(subject)
    if protein_outputs(info)[0] is None:
        raise Refused(f"pipeline {info['name']} declares no \"proteins\" output: homology maps "
                      f"each run's test protein ids (KINDS {{\"ids\": \"proteins\"}}, one per "
                      f"truth row) into a clustering")
    r = lab_homology(store, info, *find_clustering(store, info, data, identity, coverage))
    h = r["summary"]
    if not h.runs:
        raise NotFound(f"no run of pipeline {info['name']} could be read in dataset "
                       f"{r['dataset']}'s clustering: " + "; ".join(h.left_out[:1])
                       + (f" (and {len(h.left_out) - 1} more)" if len(h.left_out) > 1 else ""))
    return r


def has_protein_ids(subject: Subject) -> bool:
    """Whether `kit homology` can read the subject's runs under a clustering of their own."""
    if subject.kind == DATASET:
        return True
    from ..analysis.lab_homology import protein_outputs

    return protein_outputs(_info(subject))[0] is not None


def runs(store: Store, subject: Subject | None = None, kind: str | None = None,
         stack: str | None = None, factors: tuple = ()) -> Runs:
    """The stored runs of ``subject`` (None: every run), only those of run ``kind``, in
    ``stack`` or in pairs of ``factors`` when given."""
    if subject is not None and subject.kind == PIPELINE:
        got = lab_runs(store, subject.sha256)
        if got and factors:
            keep = set(_pipeline_ids(store, subject, factors))
            got = [r for r in got if r.id in keep]
        if stack:
            got = [r for r in got if r.spec.stack == stack]
        return Runs(subject, tuple(got))
    factors = _kit_factor_names(factors) if factors else ()
    ds = subject.sha256 if subject is not None else None
    got = store.runs(ds)
    if kind:
        got = [r for r in got if r.spec.kind == kind]
    if stack:
        got = [r for r in got if r.spec.stack == stack]
    if factors:
        ids = {x for p in store.pairs(ds) if p.factor in factors for x in (p.a, p.b)}
        got = [r for r in got if r.id in ids]
    return Runs(subject, tuple(got), store.datasets(), bool(kind or stack or factors))


def _pipeline_ids(store: Store, subject: Subject, factors=()) -> list:
    """The run ids of a pipeline (only those in pairs of ``factors``); NotFound: none stored."""
    sha = subject.sha256
    ids = [r.id for r in lab_runs(store, sha)]
    if not ids:
        raise NotFound(f"no runs of pipeline {sha[:12]} stored: kit run --pipeline FILE.py first")
    if factors:
        from ..analysis.lab_budget import pairs

        found = pairs(store, sha)
        stored = list(dict.fromkeys(f for f, _, _ in found))
        absent = [f for f in factors if f not in stored]
        if absent:
            raise NotFound(f"no pairs of factor {absent[0]!r} of pipeline {sha[:12]} stored; "
                           f"stored: {', '.join(stored) or 'none'}")
        keep = {x for f, a, b in found if f in factors for x in (a, b)}
        ids = [i for i in ids if i in keep]
    return ids


def export_runs(store: Store, subject: Subject, factors: tuple = ()) -> Export:
    """The runs a bundle of the subject carries: all of them, or those of ``factors``' pairs
    (kit's own: with the cross-fed and probe runs `kit explain` made for them, so that read
    elsewhere the pairs explain as they do here). A pipeline's file is kept to travel along."""
    if subject.kind == PIPELINE:
        ids = _pipeline_ids(store, subject, factors)
        if subject.summary.get("file"):  # the file itself (the runs' own: they hash to it)
            from ..data.pipelines import add_pipeline

            add_pipeline(Path(subject.summary["file"]))
        return Export(subject, tuple(dict.fromkeys(ids)))
    factors = _kit_factor_names(factors) if factors else ()
    if factors:
        from ..analysis.explain_stored import explain_runs

        pairs = [p for p in store.pairs(subject.sha256) if p.factor in factors]
        ids = [r for p in pairs for r in (p.a, p.b)] + explain_runs(store, pairs)
    else:
        ids = [r.id for r in store.runs(subject.sha256)]
    return Export(subject, tuple(dict.fromkeys(ids)))


def tolerances(store: Store, subject: Subject) -> Reading:
    """Per output, the rtol/atol the measured environment factors need."""
    from ..analysis.tolerances import kit_tolerances, lab_tolerances

    if subject.kind == PIPELINE:
        # the file as given, when it is one (a hash prefix chooses stored runs, not a file)
        path = subject.summary.get("given") if subject.summary.get("file") else "FILE.py"
        return Reading(subject, lab_tolerances(store, _info(subject), path))
    return Reading(subject, kit_tolerances(store, subject.sha256))


class ExplainProgress:
    """What `explain` reports as it goes; a front end overrides what it shows (here: nothing)."""

    def planned(self, plan) -> None:
        """The cross-fed runs are planned (``plan.feeds`` to make, ``plan.stored`` stored)."""

    def scanning(self, scans: list, builds: int, runs: int) -> None:
        """The release scan is planned: ``builds`` probe stacks to build, ``runs`` runs."""

    def running(self, what: str, total: int):
        """Around ``total`` runs of ``what`` ("cross-fed runs", "release scan"): a context
        whose value is called once per run stored."""
        return nullcontext(lambda spec: None)

    def log(self, line: str) -> None:
        """A line from building a stack."""


def check_library(library) -> None:
    """--library NAME A B: a name the index takes, final releases (Refused, one line), said
    before the name goes into the index's URL, and before any run."""
    from ..envs.releases import check_name, is_final

    if library:
        check_name(library[0])
    for v in (library or [])[1:]:
        if not is_final(v):
            raise Refused(f"--library {library[0]} {v}: give final releases (like 1.6.0)")


def explain(store: Store, subject: Subject, factor: str, library=None,
            ask_build=lambda stacks: True, ask_scan=lambda stacks: True,
            progress: ExplainProgress = ExplainProgress()) -> Explanation:
    """Where each of ``factor``'s differences starts, stage by stage: the cross-fed runs it
    needs made (``ask_build(stacks)`` first when stacks are to be built; it may raise to
    refuse), then the release scan of ``library`` (``ask_scan(stacks)``: False skips the scan
    alone, and the answer says so)."""
    if subject.kind == PIPELINE:
        raise Refused(f"explain cross-feeds one run's stage outputs into the other's next stage: "
                      f"{subject.label()} declares outputs, not stages; where its differences "
                      f"reach: kit budget --pipeline")
    from .explain import explanation, plan_explain, run_explain, working_dataset
    from .releases import Declined, explained, plan_scans, run_scans, scan_runs, to_build

    check_library(library)
    sel = as_selection(subject)
    plan = plan_explain(store, factor, sel)
    progress.planned(plan)
    with progress.running("cross-fed runs", len(plan.feeds)) as done:
        left = run_explain(plan, store, confirm=ask_build, log=progress.log, on_done=done)
    pairs = [p for p in store.pairs(subject.sha256) if p.factor == factor]
    scans, notes = plan_scans(store, factor, pairs, tuple(library) if library else None)
    n = scan_runs(scans, store)
    if scans:
        progress.scanning(scans, len(to_build(scans)), n)
    declined = None
    with progress.running("release scan", n) as done:
        try:
            left += run_scans(scans, store, lambda: working_dataset(sel), confirm=ask_scan,
                              log=progress.log, on_done=done)
        except Declined as e:
            declined = str(e)
            scans = [s for s in scans if any(r.built for r in s.releases)]
    result = explained(explanation(store, factor, sel), scans, store)
    result["unscanned"] = [w for w in notes if w]
    return Explanation(subject, result, declined, tuple(left))


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
    from ..data.dataset import SYNTHETIC, SYNTHETIC_N
    from .selection import opening_dataset, pipeline_or_dataset, select

    if pipeline:
        # the file reads its own data: a dataset named too would be silently ignored
        pipeline_or_dataset(pipeline, dataset, n)
        hexed = len(pipeline) >= 4 and all(c in "0123456789abcdef" for c in pipeline.lower())
        if Path(pipeline).expanduser().is_file() or not hexed:
            from ..core.subject import of_pipeline
            from ..data.pipelines import add_pipeline

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
    from .audit import Progress

    progress = progress or Progress()
    if target.subject is not None:
        return _run_lab(store, target.subject, factors, options, stack, jobs, executor,
                        progress, confirm, chosen)
    from ..analysis.budget import budget as kit_budget
    from ..core.subject import of_dataset
    from ..runs.executing.runner import PlanIncomplete
    from . import audit as au

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
    from ..analysis.lab_budget import lab_budget
    from .lab import lab_pairs, lab_to_run, run_pairs

    chosen(subject)
    info = lab_to_run(_info(subject), subject.summary.get("file"))
    # a large plan is asked first, as kit's own: a no raises (or answers False: nothing ran)
    run_pairs(lab_pairs(info, factors, options, stack), info, store, jobs=jobs,
              executor=executor, progress=progress, confirm=confirm)
    b = lab_budget(store, info)
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
        from ..envs.platforms import detect
        from .doctor import machine_doctor

        with busy("null experiment, thread probe, BLAS"):
            return Doctor(None, machine_doctor(detect(), n))
    import os
    import shutil
    import tempfile
    from contextlib import closing

    from ..core.paths import subdir
    from ..core.subject import of_pipeline
    from .lab import lab_doctor

    # named as the runner's temporary folders are: a kill -9's leftover is swept
    root = Path(tempfile.mkdtemp(prefix=f"tmp-{os.getpid()}-doctor-", dir=subdir("tmp")))
    try:
        with closing(Store(root)) as store, busy(f"null experiment of {file}"):
            rep = lab_doctor(file, store)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return Doctor(of_pipeline({"sha256": rep["pipeline"], "name": rep["name"]}, "as asked"), rep)
