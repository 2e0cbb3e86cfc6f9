"""`Kit`: one KIT_HOME and kit's verbs as methods, what the CLI, the TUI and the notebook call."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from ..core.callbacks import QUIET_EXPLAIN, Busy, Confirm, ExplainProgress, Log, OnDone, Progress
from ..core.errors import KitError, NotFound
from ..core.paths import kit_home
from ..core.subject import Subject, of_dataset
from ..data import stored_datasets
from ..runs.planning.options import PlanOptions
from ..runs.store import Store
from ..worker.names import unknown
from . import selection, verbs
from .verbs.planning import Plan, pairs_before_building
from .verbs.records import Budget, Compared, Doctor, Explanation, Export, Ran, Reading, Runs
from .verbs.records import Verdicts as VerdictsRecord
from .verbs.reporting import Report, report_steps
from .verbs.running import HERE, ToRun, Where

__all__ = ["HERE", "Kit", "Store", "ToRun", "Where", "ask_above", "pairs_before_building"]

if TYPE_CHECKING:  # the audit and the platform are read only when a plan is run
    from ..analysis.across_splits import AcrossSplits
    from ..analysis.explain_stored import StoredExplanation
    from ..analysis.records import HomologySummary
    from ..envs.platforms import Platform
    from ..runs.store.records import StoredRun
    from .audit import Ask


class Kit:
    """One KIT_HOME's store and kit's verbs as methods (as DVC's ``Repo``): what every front end
    calls, each method thin over kit.app.verbs and returning its frozen record.

    ``Kit(home=None)``: the home KIT_HOME names (``home``: set as KIT_HOME, as if before Python
    started); its store is opened on first use, so a command checks its words first.

    What a verb is about, a ``Subject``: ``subject(dataset=, n=, pipeline=)`` (a command's words,
    the default the most recent run's dataset), ``scope(...)`` (None when no word names one),
    ``dataset(text)`` (a stored dataset by name or hash prefix, the notebook's words).

    Reading: ``budget``, ``pairs``, ``verdicts``, ``amplify``, ``advise``, ``homology``,
    ``across_splits``, ``runs``, ``tolerances``, ``explain``, ``report`` (``report_steps``),
    ``export_runs``; the store's own: ``stored_run(prefix)``, ``array(run, stage)``,
    ``stored_datasets()``. Running: ``to_run`` (what a command's words ask to run), ``plan``
    (``pairs_before_building``), ``run`` (``Where`` the runs go, under its rules: a Clash or
    BadOption before anything starts), ``doctor``, ``compare``. Data and stacks:
    ``dataset_names()`` (the datasets kept in the home), ``stacks(plat, probes)`` (every stack
    with its status, `kit stacks --json`'s rows).

    Progress and questions go through the Protocols of kit.core.callbacks (``Progress``,
    ``ExplainProgress``, ``Busy``, ``Confirm``, ``Log``); errors are KitError, one line, and
    ``BadOption`` names the option it is about (the command line's usage error)."""

    def __init__(self, home: str | os.PathLike[str] | None = None, *, store: Store | None = None):
        if home is not None:  # as if KIT_HOME had been set before Python started
            os.environ["KIT_HOME"] = str(home)
        self._store = store

    @property
    def store(self) -> Store:
        """The home's store, opened on first use (its index is safe to read from threads)."""
        if self._store is None:
            self._store = Store()
        return self._store

    def close(self) -> None:
        """Close the store, if it was opened."""
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> Kit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # what a verb is about

    def subject(
        self,
        dataset: str | None = None,
        n: int | None = None,
        pipeline: str | None = None,
        **kw: Any,
    ) -> Subject:
        """The Subject a command's words name (kit.app.selection.select; ``kw``: its
        ``clash``, ``only_with_pipeline`` and ``first``)."""
        return selection.select(self.store, dataset, n, pipeline, **kw)

    def scope(
        self, dataset: str | None = None, n: int | None = None, pipeline: str | None = None
    ) -> Subject | None:
        """The Subject named, or None when no word names one (every run)."""
        return selection.scope(self.store, dataset, n, pipeline)

    def dataset(self, text: str) -> Subject:
        """The stored dataset of kit's own runs named ``text`` or whose hash starts with it
        (KitError, one line, with the closest names: none, or more than one)."""
        known = selection.own_datasets(self.store)
        hits = [h for h, d in known.items() if d.get("name") == text or h.startswith(text)]
        if len(hits) != 1:
            names = [d.get("name", h[:12]) for h, d in known.items()]
            raise KitError(
                unknown(
                    f"{'no' if not hits else 'more than one'} stored dataset",
                    text,
                    names if not hits else (),
                    f" (stored: {', '.join(names) or 'none'})",
                )
            )
        sha = hits[0]
        return of_dataset(sha, self.store.datasets().get(sha) or known[sha], "as asked")

    def own_datasets(self) -> dict[str, dict[str, Any]]:
        """{sha256: summary} of the datasets kit's own pipeline ran on."""
        return selection.own_datasets(self.store)

    def opening(self, default_n: int) -> tuple[str, int]:
        """(dataset, n) a front end opens on: the most recent run's dataset, as the read
        commands show by default; on an empty store the built-in set at ``default_n``."""
        name, n = selection.opening_dataset(self.store, default_n)
        return name, n

    def has_dataset_runs(self) -> bool:
        """Whether any of kit's own runs is stored (a dataset's: the default subject)."""
        return self.store.latest_dataset() is not None

    # reading

    def budget(self, subject: Subject, factor: str | None = None) -> Budget:
        return verbs.budget(self.store, subject, factor)

    def pairs(self, subject: Subject, factor: str | None = None) -> tuple[Any, ...]:
        """Kit's own pairs of ``subject``'s dataset, every measure of each (``factor``: its
        pairs alone), as `kit budget --factor` lists them."""
        return verbs.pairs(self.store, subject, factor)

    def verdicts(self, subject: Subject, run_set: str | None = None) -> VerdictsRecord:
        return verbs.verdicts(self.store, subject, run_set)

    def amplify(self, subject: Subject) -> Reading[dict]:
        return verbs.amplify(self.store, subject)

    def advise(self, subject: Subject, plat: Platform | None = None) -> Reading[dict]:
        return verbs.advise(self.store, subject, plat)

    def homology(
        self,
        subject: Subject,
        identity: float | None = None,
        coverage: float | None = None,
        data: str | None = None,
    ) -> Reading[dict | HomologySummary]:
        return verbs.homology(self.store, subject, identity, coverage, data)

    def across_splits(
        self, subject: Subject, against: str, paired: bool = False
    ) -> Reading[AcrossSplits]:
        return verbs.across_splits(self.store, subject, against, paired)

    def has_protein_ids(self, subject: Subject) -> bool:
        """Whether ``homology`` can read the subject's runs under a clustering."""
        return verbs.has_protein_ids(subject)

    def runs(
        self,
        subject: Subject | None = None,
        kind: str | None = None,
        stack: str | None = None,
        factors: Sequence[str] = (),
    ) -> Runs:
        return verbs.runs(self.store, subject, kind, stack, tuple(factors))

    def factor_names(
        self,
        names: Sequence[str] | None,
        dataset: str | None = None,
        n: int | None = None,
        pipeline: str | None = None,
    ) -> tuple[str, ...]:
        """--factor's names checked against the words before anything is read (BadOption)."""
        return verbs.factor_names(names, dataset, n, pipeline)

    def tolerances(self, subject: Subject, pin: Sequence[str] = ()) -> Reading[dict]:
        return verbs.tolerances(self.store, subject, tuple(pin))

    def export_runs(self, subject: Subject, factors: Sequence[str] = ()) -> Export:
        return verbs.export_runs(self.store, subject, tuple(factors))

    def export_plan(self, ids: list[str], arrays: bool, images: bool = False) -> dict[str, Any]:
        """What an export of runs ``ids`` would write (kit.app.bundle.plan_export)."""
        from .bundle import plan_export

        return plan_export(self.store, ids, arrays, images)

    def export(
        self,
        ids: list[str],
        out: Any,
        arrays: bool,
        images: bool = False,
        log: Log = lambda msg: None,
    ) -> dict[str, Any]:
        """Write runs ``ids`` to the bundle ``out`` (kit.app.bundle.export); what was written."""
        from .bundle import export

        return export(self.store, ids, out, arrays, images, log=log)

    def import_bundle(self, path: Any) -> dict[str, Any]:
        """Merge the bundle at ``path`` into the store (idempotent); what was added."""
        from .bundle import import_bundle

        return import_bundle(self.store, path)

    def check_library(self, library: list[str] | None) -> None:
        """--library NAME A B checked before any run (Refused, one line)."""
        verbs.check_library(library)

    def explain(
        self,
        subject: Subject,
        factor: str,
        library: list[str] | None = None,
        ask_build: Confirm[list[Any]] = lambda stacks: True,
        ask_scan: Confirm[list[Any]] = lambda stacks: True,
        progress: ExplainProgress = QUIET_EXPLAIN,
        cluster: str | None = None,
    ) -> Explanation:
        return verbs.explain(
            self.store, subject, factor, library, ask_build, ask_scan, progress, cluster
        )

    def stored_explanation(
        self, subject: Subject, factor: str, rows: list[Any], level: str | None = None
    ) -> StoredExplanation:
        """What `kit explain FACTOR` stored of kit's own pairs ``rows`` (``level``: that
        level's alone); nothing is run."""
        from ..analysis.explain_stored import stored_explanation

        return stored_explanation(self.store, subject.sha256, factor, rows, level=level)

    def stored_output_explanations(self, subject: Subject) -> list[dict[str, Any]]:
        """A pipeline file's stored release scans, one per factor; nothing is run."""
        from ..analysis.explain_stored import stored_output_explanations

        return stored_output_explanations(self.store, subject.sha256)

    def report(
        self, subject: Subject, busy: Busy | None = None, step: Callable[[str], None] | None = None
    ) -> Report:
        return verbs.report(self.store, subject, busy=busy, step=step)

    def report_steps(self, subject: Subject) -> tuple[str, ...]:
        """The parts ``report`` tells its ``step``, in order."""
        return report_steps(subject)

    def stored_run(self, prefix: str) -> StoredRun:
        """The one stored run whose id starts with ``prefix`` (KitError: none, or two)."""
        hits = [r for r in self.store.runs() if r.id.startswith(prefix)]
        if len(hits) != 1:
            raise NotFound(f"{'no' if not hits else 'more than one'} run {prefix!r} stored")
        return hits[0]

    def array(self, run: str, stage: str) -> Any:
        """A stored array, verified as it is read."""
        return self.store.array(run, stage)

    def stored_datasets(self) -> dict[str, dict[str, Any]]:
        """{sha256: summary} of every dataset the store's runs name."""
        return self.store.datasets()

    # running

    def to_run(
        self,
        factors: Sequence[str] = (),
        dataset: str | None = None,
        n: int | None = None,
        pipeline: str | None = None,
    ) -> ToRun:
        return verbs.to_run(self.store, factors, dataset, n, pipeline)

    def plan(
        self,
        target: ToRun,
        options: PlanOptions = PlanOptions(),
        *,
        stack: str = "host",
        plat: Platform | None = None,
    ) -> Plan:
        """``target``'s plan here: its pairs, runs, those the store lacks, and the stacks to
        build first."""
        return verbs.plan(self.store, target, target.factors, options, stack=stack, plat=plat)

    def pairs_before_building(self, p: Plan) -> tuple[Any, ...] | None:
        """The pairs ``p`` will have once its stacks are built (None: not known before)."""
        return pairs_before_building(p)

    def options(self, where: Where = HERE, **fields: Any) -> PlanOptions:
        """PlanOptions (``fields``: threads, seeds, svd_iters, ...) for runs made ``where``
        says, under its rules (a Clash or BadOption first, as a command's words are read)."""
        return verbs.options_for(where, **fields)

    def run(
        self,
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
        """Plan ``target``, run what the store lacks ``where`` it says, under its rules
        (kit.app.verbs.run_at), and read the budget after."""
        return verbs.run_at(
            self.store,
            target,
            options,
            where,
            stack=stack,
            jobs=jobs,
            progress=progress,
            confirm=confirm,
            chosen=chosen,
            should_stop=should_stop,
            plat=plat,
            say=say,
        )

    def sharing(self, todo: list[Any], jobs: int | str) -> str | None:
        """How runs ``todo`` share this machine's cores at ``jobs`` (None: nothing to say)."""
        from ..runs.executing.schedule import note

        return note(todo, jobs)

    def deadline(self, timeout: int | None, todo: list[Any]) -> tuple[float, str]:
        """(seconds each run of ``todo`` may take here, why): ``timeout``, else from the
        subject's stored runs (kit.runs.executing.runner.run_deadline)."""
        from ..runs.executing.runner import run_deadline

        return run_deadline(timeout, self.store.runs(todo[0].dataset) if todo else [])

    def doctor(
        self,
        file: str | None = None,
        n: int = 200,
        busy: Busy = lambda what: nullcontext(),
        timeout: float | None = None,
    ) -> Doctor:
        """The machine's null experiment, or a pipeline file's in a store of its own."""
        return verbs.doctor(file, n, busy=busy, timeout=timeout)

    def compare(
        self,
        path: str,
        files: tuple[str, ...] = (),
        *,
        jobs: int = 1,
        log: Log = lambda msg: None,
        on_done: OnDone = lambda spec: None,
        confirm: Confirm[list[Any]] = lambda stacks: True,
        trust_image: bool = False,
        trust: Confirm[list[Any]] = lambda images: False,
        plat: Platform | None = None,
    ) -> Compared:
        return verbs.compare(
            self.store,
            path,
            files,
            jobs=jobs,
            log=log,
            on_done=on_done,
            confirm=confirm,
            trust_image=trust_image,
            trust=trust,
            plat=plat,
        )

    def check_store(self, repair: bool = False) -> dict[str, Any]:
        """`kit store check`: every stored array and dataset file hashed, read-only unless
        ``repair`` (damage moved aside); the home's store is opened for it alone."""
        from ..runs.store.check import check_store, opened

        store, moved = opened(kit_home(writing=False), repair)
        return check_store(store, repair=repair, set_aside=moved)

    # data and stacks

    def dataset_names(self) -> list[str]:
        """The datasets kept in the home (`kit data import`, `kit data fetch`), by name."""
        return stored_datasets()

    def stacks(self, plat: Platform | None = None, probes: bool = False) -> list[dict[str, Any]]:
        """Every stack with its attributes and status (`kit stacks --json`'s rows; ``probes``:
        the release scans' probe stacks and the pipelines' derived stacks too)."""
        from ..envs.kinds import listing

        return listing(plat, probes)

    def __repr__(self) -> str:
        where = self._store.root if self._store is not None else "(not opened)"
        return f"<kit.Kit {where}>"


def ask_above() -> int:
    """The runs above which a plan is confirmed first (kit.app.audit.ASK_ABOVE)."""
    from .audit import ASK_ABOVE

    return ASK_ABOVE
