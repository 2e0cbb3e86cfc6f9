"""The reading verbs: budget, verdicts, amplify, advise, homology, runs, tolerances and the
runs an export carries, each of one Subject."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...core import factors
from ...core.errors import KitError, NotFound, Refused
from ...core.subject import DATASET, PIPELINE, Subject
from ...data import load_dataset
from ...data.pipelines import add_pipeline
from ...envs.catalogue import HOST
from ...runs.store import Store
from ...worker.names import unknown
from ..selection import load_name, pipeline_runs
from .records import BadOption, Budget, Export, Reading, Runs, Verdicts
from .records import kit_factor_names as _kit_factor_names

if TYPE_CHECKING:
    from ...analysis.across_splits import AcrossSplits
    from ...analysis.records import HomologySummary


def known_factor(name: str, stored: set, option: str = "--factor") -> None:
    """A name no factor has (kit.core.factors' registry, or pairs an older kit stored): unknown,
    with the closest names, not "no pairs"."""
    known = factors.names() + tuple(sorted(stored - set(factors.names())))
    if name in known:
        return
    # the same usage error (exit 2) as `kit run --factor`: a mistyped option, not a refused reading
    raise BadOption(option, factors.unknown_factor(name, known))


def _output_readings(store: Store, subject: Subject, factor: str | None = None) -> tuple:
    """(budget, verdicts) of a pipeline, only ``factor``'s when given (NotFound: none stored)."""
    from ...analysis.budget import output_budget
    from ...analysis.verdicts import output_verdicts

    b, v = output_budget(store, subject), output_verdicts(store, subject)
    if factor:
        if factor not in b["factors"]:
            raise NotFound(
                unknown(
                    "no pairs of factor",
                    factor,
                    b["factors"],
                    f"; stored: {', '.join(b['factors']) or 'none'}",
                    f" of pipeline {subject.name}",
                )
            )
        b = {**b, "factors": {factor: b["factors"][factor]}}
        v = {**v, "factors": {k: r for k, r in v["factors"].items() if k == factor}}
    return b, v


def budget(store: Store, subject: Subject, factor: str | None = None) -> Budget:
    """The budget table of the subject's stored pairs; with ``factor``, that factor's pairs."""
    if subject.kind == PIPELINE:
        from ...analysis.budget import output_pair_details

        b, v = _output_readings(store, subject, factor)
        if factor:  # the pairs behind the row, as kit's own `kit budget --factor` lists them
            b["pairs"] = output_pair_details(store, subject, factor)
        return Budget(subject, b, factor, v)
    from ...analysis.budget import budget as kit_budget
    from ...analysis.budget import pair_details

    if factor:
        known_factor(factor, {p.factor for p in store.pairs()})
        rows = pair_details(store, subject.sha256, factor)
        if not rows:
            raise NotFound(
                f"no pairs of factor {factor!r} on dataset "
                f"{subject.summary.get('name', subject.short)}"
            )
        return Budget(subject, rows, factor)
    return Budget(subject, kit_budget(store, subject.sha256, dict(subject.summary)))


def pairs(store: Store, subject: Subject, factor: str | None = None) -> tuple:
    """Kit's own pairs of the subject's dataset, every measure of each (``factor``: its pairs
    alone; none stored: none), the rows `kit budget --factor` lists."""
    if subject.kind == PIPELINE:
        raise Refused(
            f"{subject.label()} declares outputs, not stages: its pairs by output are in "
            "kit budget --pipeline FILE.py --factor NAME"
        )
    from ...analysis.budget import pair_details

    return tuple(pair_details(store, subject.sha256, factor))


def verdicts(store: Store, subject: Subject, run_set: str | None = None) -> Verdicts:
    """The stability of the subject's verdicts (``run_set``: one set, or one factor's pairs)."""
    if subject.kind == PIPELINE:
        return Verdicts(subject, _output_readings(store, subject, run_set)[1])
    from ...analysis.verdicts import arrays_note, stability_report

    rep = stability_report(store, subject.sha256, run_set)
    return Verdicts(subject, rep, arrays_note(store, subject.sha256))


def amplify(store: Store, subject: Subject) -> Reading[dict]:
    """How each model amplifies a small perturbation of the embedding."""
    if subject.kind == PIPELINE:
        raise Refused(
            f"amplify reads perturbation curves (kit run --factor perturb), which "
            f"need an embedding stage the models are trained on: {subject.label()} "
            f"declares outputs, not stages; its budget: kit budget --pipeline"
        )
    from ...analysis.amplify import report
    from ...analysis.budget import budget as kit_budget

    return Reading(subject, report(kit_budget(store, subject.sha256)["rows"]))


def advise(store: Store, subject: Subject, plat=None) -> Reading[dict]:
    """What to pin first, from the measured budget (``plat``: the machine whose reasons explain
    the factors kit's own cannot measure on it; None: this one)."""
    if subject.kind == PIPELINE:
        from ...analysis.advice import output_advice

        return Reading(subject, output_advice(*_output_readings(store, subject)))
    from ...analysis.advice import advise as kit_advise
    from ...analysis.budget import budget as kit_budget

    sha = subject.sha256
    return Reading(
        subject, kit_advise(store, sha, kit_budget(store, sha, dict(subject.summary)), plat=plat)
    )


def homology(
    store: Store,
    subject: Subject,
    identity: float | None = None,
    coverage: float | None = None,
    data: str | None = None,
) -> Reading[dict | HomologySummary]:
    """Verdicts under a cluster bootstrap and accuracy with and without a train homolog
    (``data``: a pipeline's, the stored dataset whose clustering its protein ids are read in)."""
    if subject.kind == PIPELINE:
        return Reading(subject, _output_homology(store, subject, identity, coverage, data))
    if data:
        raise Refused("--data goes with --pipeline FILE.py (kit's own runs: --dataset NAME)")
    from ...analysis.homology import for_dataset

    h = for_dataset(store, subject.sha256, identity, coverage)
    if h is None:
        at = "".join(
            f" --{k} {v:g}"
            for k, v in (("identity", identity), ("coverage", coverage))
            if v is not None
        )
        raise NotFound(
            f"no homology clustering of this dataset{' at' + at if at else ''} yet: "
            f"`kit data homology {load_name(dict(subject.summary))}{at}` computes it "
            "(MMseqs2, about 20 s per 6,000 proteins)"
        )
    return Reading(subject, h)


def across_splits(
    store: Store, subject: Subject, against: str, paired: bool = False
) -> Reading[AcrossSplits]:
    """Each model's accuracy and each verdict on ``subject``'s dataset (a random split) beside
    ``against``, a homology-disjoint split of it, in split units (``paired``: ``against``
    beside random re-splits of its own proteins at its own sizes)."""
    from ...analysis.across_splits import across_splits as across

    if subject.kind == PIPELINE:
        raise Refused(
            "--against compares kit's own runs on two datasets: give --dataset NAME "
            "--against NAME-disjoint (a pipeline's runs: run it on each)"
        )

    other = load_dataset(against, generate=False)
    mine = (subject.sha256, subject.name, dict(subject.summary), load_name(dict(subject.summary)))
    theirs = (other.sha256, other.name, dict(other.meta), against)
    sizes = (other.n_train, other.n_test)
    return Reading(subject, across(store, mine, theirs, paired, sizes))


def _output_homology(store, subject, identity, coverage, data) -> dict:
    from ...analysis.homology import find_clustering, output_homology, protein_outputs

    if protein_outputs(subject.kinds)[0] is None:
        raise Refused(
            f'pipeline {subject.name} declares no "proteins" output: homology maps '
            f'each run\'s test protein ids (KINDS {{"ids": "proteins"}}, one per '
            f"truth row) into a clustering"
        )
    r = output_homology(store, subject, *find_clustering(store, subject, data, identity, coverage))
    h = r["summary"]
    if not h.runs:
        raise NotFound(
            f"no run of pipeline {subject.name} could be read in dataset "
            f"{r['dataset']}'s clustering: "
            + "; ".join(h.left_out[:1])
            + (f" (and {len(h.left_out) - 1} more)" if len(h.left_out) > 1 else "")
        )
    return r


def has_protein_ids(subject: Subject) -> bool:
    """Whether `kit homology` can read the subject's runs under a clustering of their own."""
    if subject.kind == DATASET:
        return True
    from ...analysis.homology import protein_outputs

    return protein_outputs(subject.kinds)[0] is not None


def runs(
    store: Store,
    subject: Subject | None = None,
    kind: str | None = None,
    stack: str | None = None,
    factors: tuple = (),
) -> Runs:
    """The stored runs of ``subject`` (None: every run), only those of run ``kind``, in
    ``stack`` or in pairs of ``factors`` when given."""
    if stack:
        _known_stack(store, stack)
    if subject is not None and subject.kind == PIPELINE:
        got = pipeline_runs(store, subject.sha256)
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


def _known_stack(store: Store, stack: str) -> None:
    """BadOption (--stack's usage error, with the closest names) for a name that is no stack:
    neither one kit knows (`kit stacks`) nor one a stored run was made in (an imported one's).
    A stack with no runs is a filter that matches none, as a factor's."""
    from ...envs.kinds import names, stack_kind

    stored = sorted({r.spec.stack for r in store.runs()})
    if stack in stored:
        return
    try:
        stack_kind(stack)
    except KitError:
        raise BadOption(
            "--stack",
            unknown("unknown stack", stack, [HOST, *names(), *stored], "; `kit stacks` lists them"),
        ) from None


def _pipeline_ids(store: Store, subject: Subject, factors=()) -> list:
    """The run ids of a pipeline (only those in pairs of ``factors``); NotFound: none stored."""
    sha = subject.sha256
    ids = [r.id for r in pipeline_runs(store, sha)]
    if not ids:
        raise NotFound(f"no runs of pipeline {sha[:12]} stored: kit run --pipeline FILE.py first")
    if factors:
        from ...analysis.by_kind import pairs

        found = pairs(store, subject, fit=False)
        stored = list(dict.fromkeys(f for f, _, _ in found))
        absent = [f for f in factors if f not in stored]
        if absent:
            raise NotFound(
                unknown(
                    "no pairs of factor",
                    absent[0],
                    stored,
                    f"; stored: {', '.join(stored) or 'none'}",
                    f" of pipeline {sha[:12]} stored",
                )
            )
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
            add_pipeline(Path(subject.summary["file"]))
        return Export(subject, tuple(dict.fromkeys(ids)))
    factors = _kit_factor_names(factors) if factors else ()
    if factors:
        from ...analysis.explain_stored import explain_runs

        pairs = [p for p in store.pairs(subject.sha256) if p.factor in factors]
        ids = [r for p in pairs for r in (p.a, p.b)] + explain_runs(store, pairs)
    else:
        ids = [r.id for r in store.runs(subject.sha256)]
    return Export(subject, tuple(dict.fromkeys(ids)))


def tolerances(store: Store, subject: Subject, pin=()) -> Reading[dict]:
    """Per output, the rtol/atol the measured environment factors need; ``pin``: the factors
    the lab will pin, left out (each a factor's name)."""
    from ...analysis.tolerances import tolerances as measured

    for name in pin:  # kit's own factor names only: they are written into a generated file
        known_factor(name, set(), "--pin")
    # a pipeline: the file as given, when it is one (a hash prefix chooses stored runs, not a file)
    path = (
        str(subject.summary.get("given", "FILE.py")) if subject.summary.get("file") else "FILE.py"
    )
    return Reading(subject, measured(store, subject, path, pin))
