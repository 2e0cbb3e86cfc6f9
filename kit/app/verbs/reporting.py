"""The report verb: what `kit report` shows of a subject, computed once from the store."""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass, field

from ...core.errors import KitError
from ...core.subject import PIPELINE, Subject
from ...runs.store import Store
from ..selection import pipeline_runs


@dataclass(frozen=True)
class Report:
    """What the report of ``subject`` shows (kit.views.report lays it out, computing nothing).

    ``budget``, ``verdicts``, ``advice``: as the budget, verdicts and advise verbs read them.
    Kit's own: ``per_level`` each power-iteration level's (and the converged solver's)
    comparisons, ``explained`` the explanations `kit explain` stored, ``environments`` every
    run's (stack, measured environment). A pipeline's: ``homology`` its reading under homology
    (None: no clustering holds its runs' protein ids), ``sizes`` {output: its elements}."""

    subject: Subject
    budget: dict
    verdicts: dict
    advice: dict
    per_level: dict = field(default_factory=dict)
    explained: tuple = ()
    environments: tuple = ()
    homology: dict | None = None
    sizes: dict = field(default_factory=dict)


# the parts report() reads, in order, each told to its ``step`` as it begins (the TUI's
# progress bar counts them: report_steps)
OWN_STEPS = (
    "the budget",
    "the power iterations' pairs",
    "the measured environments",
    "the verdicts' stability (bootstrap)",
    "the advice",
    "the stored explanations",
)
PIPELINE_STEPS = (
    "the budget by output",
    "the verdicts",
    "the outputs' sizes",
    "the reading under homology",
    "the advice",
)


def report_steps(subject: Subject) -> tuple:
    """The parts ``report`` reads for ``subject``, in the order it tells them."""
    return PIPELINE_STEPS if subject.kind == PIPELINE else OWN_STEPS


def teller(step, names: tuple):
    """A function telling ``step`` the next of ``names`` at each call (nothing without one)."""
    left = iter(names)
    return lambda: step(next(left)) if step else None


def report(store: Store, subject: Subject, busy=None, step=None) -> Report:
    """The report's numbers of ``subject`` (``busy(what)``: a context around the work, the
    bootstrap verdicts taking seconds; ``step(what)``: told as each part begins, the parts
    report_steps names)."""
    busy = busy or (lambda what: nullcontext())
    tell = teller(step, report_steps(subject))
    with busy("writing the report (bootstrap verdicts are computed once)"):
        return (_of_outputs if subject.kind == PIPELINE else _of_stages)(store, subject, tell)


def _of_stages(store: Store, subject: Subject, tell) -> Report:
    """Kit's own pipeline: its budget by stage, with what only its stages offer."""
    from ...analysis.advice import advise
    from ...analysis.budget import budget, pair_details
    from ...analysis.explain_stored import stored_explanations
    from ...analysis.verdicts import stability_report

    sha = subject.sha256
    tell()
    b = budget(store, sha)
    tell()
    per_level: dict = {}
    for f in ("svd-iters", "svd-solver"):
        for p in pair_details(store, sha, f):
            per_level.setdefault(p["level"] or f, []).append(p["comparison"])
    tell()
    # every measured environment once (explain's cross-fed runs are none of their own), with
    # the image a container run ran in beside what its worker measured (None: a venv)
    envs = tuple(
        (r.spec.stack, {**r.manifest["env"], "image": (r.manifest.get("image") or {}).get("id")})
        for r in store.runs(sha)
        if r.spec.kind != "feed"
    )
    tell()
    verdicts = stability_report(store, sha)
    tell()
    advice = advise(store, sha, b)
    tell()
    return Report(
        subject,
        b,
        verdicts,
        advice,
        per_level,
        tuple(stored_explanations(store, sha, b["rows"])),
        envs,
    )


def _of_outputs(store: Store, subject: Subject, tell) -> Report:
    """A pipeline file: its outputs by their kinds, and under homology where its ids can be."""
    from ...analysis.advice import output_advice
    from ...analysis.budget import output_budget
    from ...analysis.verdicts import output_verdicts

    tell()
    b = output_budget(store, subject)
    tell()
    v = output_verdicts(store, subject)
    tell()
    sizes: dict = {}
    for r in pipeline_runs(store, subject.sha256):
        for name, s in r.stages.items():
            sizes.setdefault(name, math.prod(s.shape))
    tell()
    homology = _homology(store, subject)
    tell()
    return Report(subject, b, v, output_advice(b, v), homology=homology, sizes=sizes)


def _homology(store: Store, subject: Subject) -> dict | None:
    """`kit homology --pipeline`'s reading, for a pipeline with protein ids whose runs a stored
    clustering holds (None otherwise: the report leaves the section out)."""
    from ...analysis.homology import find_clustering, output_homology, protein_outputs

    if protein_outputs(subject.kinds)[0] is None:
        return None
    try:
        r = output_homology(store, subject, *find_clustering(store, subject))
    except KitError:  # no clustering holds the runs' ids: `kit homology --pipeline` says why
        return None
    return r if r["summary"].runs else None
