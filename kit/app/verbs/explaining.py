"""`explain`: the cross-fed runs and release scan a factor's pairs need, then where each
difference starts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...core.callbacks import QUIET_EXPLAIN, Confirm, ExplainProgress
from ...core.errors import Refused
from ...core.subject import PIPELINE, Subject
from ...data.pipelines import LabData
from ...envs.releases import check_name, is_final
from ...runs.store import Store
from ...runs.store.hosts import host_id
from ..selection import as_selection, pipeline_info_of
from .reading import known_factor
from .records import Explanation

if TYPE_CHECKING:
    from ...data.dataset import Dataset


def check_library(library) -> None:
    """--library NAME A B: a name the index takes, final releases (Refused, one line), said
    before the name goes into the index's URL, and before any run."""
    if library:
        check_name(library[0])
    for v in (library or [])[1:]:
        if not is_final(v):
            raise Refused(f"--library {library[0]} {v}: give final releases (like 1.6.0)")


def explain(
    store: Store,
    subject: Subject,
    factor: str,
    library=None,
    ask_build: Confirm[list] = lambda stacks: True,
    ask_scan: Confirm[list] = lambda stacks: True,
    progress: ExplainProgress = QUIET_EXPLAIN,
    cluster: str | None = None,
) -> Explanation:
    """Where each of ``factor``'s differences starts, stage by stage: the cross-fed runs it
    needs made (``ask_build(stacks)`` first when stacks are to be built; it may raise to
    refuse; a pair made on a cluster's node class has them made there, on ``cluster``, as
    `kit run --cluster` names one), then the release scan of ``library`` (``ask_scan(stacks)``:
    False skips the scan alone, and the answer says so)."""
    from ..explain import explanation, plan_explain, working_dataset
    from ..releases import LIBRARY

    check_library(library)

    # a mistyped name is the command line's usage error, with the closest names (as budget's)
    known_factor(factor, {p.factor for p in store.pairs()}, "FACTOR")
    if subject.kind == PIPELINE and cluster:
        raise Refused(
            "--cluster makes the cross-fed runs of kit's own pipeline; a pipeline "
            "file's pairs have none (its release scan runs here)"
        )
    if subject.kind == PIPELINE:
        # a file declares outputs, not stages: nothing to cross-feed, and what explains an
        # output's difference is the release of a library at which it changes
        if not library and factor not in LIBRARY:
            raise Refused(
                f"{subject.label()} declares outputs, not stages: explain scans the "
                f"releases between a library's two versions ({', '.join(LIBRARY)}, "
                f"or --library NAME A B); where {factor}'s differences reach: "
                f"kit budget --pipeline"
            )
        from ...analysis.explain import explain_outputs
        from ..audit import file_to_run

        info = pipeline_info_of(subject)
        left, found = [], lambda: explain_outputs(store, subject.sha256, factor)
        # the file kept here is asked for only when the scan has runs to make
        data: Callable[[], Dataset | LabData] = lambda: LabData(file_to_run(info))  # noqa: E731
    else:
        sel = as_selection(subject)
        plan = plan_explain(store, factor, sel, cluster=bool(cluster))
        progress.planned(plan)
        with progress.running("cross-fed runs", len(plan.feeds)) as done:
            left = _cross_fed(plan, store, cluster, ask_build, progress, done)
        found, data = lambda: explanation(store, factor, sel), lambda: working_dataset(sel)
    return _scanned(store, subject, factor, library, found, data, left, ask_scan, progress)


def _cross_fed(plan, store, cluster, ask_build, progress, done) -> list:
    """Make the plan's cross-fed runs: here, and those of pairs made on a cluster's node
    class on ``cluster``, which starts only when it has runs to make; what it submitted again
    is said last. Why each run that cannot be made was left out, one line each."""
    from ..explain import run_explain

    go = dict(confirm=ask_build, log=progress.log, on_done=done)
    if not cluster or all(s.host == host_id() for s in plan.feeds):
        return run_explain(plan, store, **go)
    from ...runs.executing.dask_executor import DaskExecutor

    with DaskExecutor(cluster, log=progress.log) as ex:
        try:
            return run_explain(plan, store, executor=ex, **go)
        finally:
            said = ex.retried_text()
            if said:
                progress.log(said)


def _scanned(store, subject, factor, library, found, data, left, ask_scan, progress) -> Explanation:
    """The release scan of the factor's pairs, then the explanation ``found()`` gives with each
    scanned pair's releases (``data()``: what the scan's runs read, asked only to make runs)."""
    from ..releases import Declined, explained, plan_scans, run_scans, scan_runs, to_build

    pairs = [p for p in store.pairs(subject.sha256) if p.factor == factor]
    scans, notes = plan_scans(store, factor, pairs, tuple(library) if library else None)
    n = scan_runs(scans, store)
    if scans:
        progress.scanning(scans, len(to_build(scans)), n)
    declined = None
    with progress.running("release scan", n) as done:
        try:
            left += run_scans(scans, store, data, confirm=ask_scan, log=progress.log, on_done=done)
        except Declined as e:
            declined = str(e)
            scans = [s for s in scans if any(r.built for r in s.releases)]
    result = explained(found(), scans, store)
    result["unscanned"] = [w for w in notes if w]
    return Explanation(subject, result, declined, tuple(left), len(scans))
