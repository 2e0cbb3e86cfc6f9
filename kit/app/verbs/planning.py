"""`plan`: what a subject's factors would run, before anything runs, for either kind of subject."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...core import factors
from ...core.errors import KitError
from ...core.subject import DATASET, PIPELINE, Subject
from ...envs.catalogue import HOST, definitions
from ...envs.platforms import detect
from ...envs.stacks import Stack
from ...runs.planning.options import PlanOptions
from ...runs.store import Store
from ..selection import pipeline_info_of

if TYPE_CHECKING:
    from ..audit import Audit


@dataclass(frozen=True)
class Plan:
    """A subject's plan: ``pairs`` of ``factors``, their runs once each (``specs``) and those
    the store lacks (``todo``); ``notes`` say what the plan leaves out and why (pairs skipped,
    stacks to build before the pairs can be planned: ``stacks``, [(name, download bytes or
    None)]). ``estimate(at_once)``: seconds from past timings (None: none to go by), read only
    when asked (it reads every stored run)."""

    subject: Subject
    factors: tuple
    pairs: tuple
    specs: tuple
    todo: tuple
    notes: tuple = ()
    stacks: tuple = ()
    # what runs it (kit.app.audit): kit's own pipeline's Audit, or a pipeline file's info (the
    # two engines' one remaining seam: #55 makes them one)
    work: Audit | dict | None = field(default=None, compare=False, repr=False)
    seconds: Callable[[int], float | None] | None = field(default=None, compare=False, repr=False)

    def estimate(self, at_once: int = 1) -> float | None:
        return self.seconds(at_once) if self.seconds is not None else None


def plan(
    store: Store,
    subject,
    factor_names,
    opts: PlanOptions = PlanOptions(),
    *,
    stack: str = "host",
    unfit=lambda spec: None,
    refit=lambda pair: None,
    plat=None,
) -> Plan:
    """The pairs of ``factor_names`` for ``subject`` (a Subject as kit.app.verbs.to_run finds
    it: its ``subject`` and what running it reads) planned on ``stack``, and the runs ``store``
    lacks; ``unfit(spec)`` says why the executor has nowhere to make a run (such pairs are
    skipped, with why) unless ``refit(pair)`` moves it where it fits (a cluster's node class
    with the cores); ``plat``: the machine kit's own stacks are found for (None: this one,
    as detected). KitError, one line: a factor the subject does not take."""
    return _PLANS[subject.subject.kind](
        store, subject, tuple(factor_names), opts, stack, (unfit, refit), plat
    )


def _own(store, target, names, opts, stack, room, plat) -> Plan:
    """kit's own pipeline on a dataset: planned once its stacks are built (their identities are
    part of each run); before, the plan names the stacks and run_audit plans after building."""
    from .. import audit as au

    a = au.audit_of(target.dataset, names, opts, stack, plat)
    missing = au.stacks_to_build(a)
    if not missing:
        au.plan_runs(a, *room)  # (unfit, refit): where the executor can make each run
    notes = tuple(f"skipped {p.label}: {why}" for p, why in a.skipped)
    return Plan(
        target.subject,
        names,
        tuple(a.pairs),
        tuple(a.specs),
        tuple(au.todo(a, store)),
        notes,
        tuple(missing),
        a,
        lambda n: au.estimate_seconds(a, store, n),
    )


def _file(store, target, names, opts, stack, room, plat) -> Plan:
    """A lab's pipeline file: its file kept by its hash (an edited file is another pipeline),
    its pairs planned by its kind's planners on the stacks as named (``plat`` is not read);
    its estimate from its own runs alone."""
    from .. import audit as au

    subject = target.subject
    info = au.file_to_run(pipeline_info_of(subject), subject.summary.get("file"))

    plat = plat or detect()  # the stacks to build are found for this machine, as kit's own
    stacks = None
    notes: tuple[str, ...] = ()
    if info.get("requires"):  # each stack with the file's packages added: locked here first
        from ...envs.derived import for_plan

        if stack == HOST:  # the default --stack: the host takes no packages, a catalogue one does
            stack = _requires_base(plat)

        stacks, lost = for_plan(
            info["requires"], file_stacks(names, stack, plat, True, opts.built), plat
        )
        notes = tuple(
            f"skipped the pairs of stack {n}: {info['name']}'s REQUIRES cannot be had there ({why})"
            for n, why in lost.items()
        )
    missing = au.unbuilt(
        list(stacks.values())
        if stacks is not None
        else file_stacks(names, stack, plat, built=opts.built),
        plat,
    )
    if missing:  # a stack's identity is part of each run: planned once they are built
        return Plan(subject, names, (), (), (), notes, stacks=tuple(missing), work=info)
    pairs = au.file_pairs(info, names, opts, stack, stacks)
    specs, left = au.runs_of(pairs, store)
    return Plan(
        subject,
        names,
        tuple(pairs),
        tuple(specs),
        tuple(left),
        notes,
        work=info,
        seconds=lambda n: (au.file_estimate(info, left, store, n) or {}).get("seconds"),
    )


def _requires_base(plat) -> str:
    """The stack a REQUIRES file's single-stack factors run in when none is named: the host
    cannot take packages, so the catalogue's first stack this platform can have (built ones
    first), the same on every call."""
    from ...envs.kinds import stack_kind

    status = {n: stack_kind(n).status(plat)[0] for n in definitions()}
    can = [n for n, st in status.items() if st != "unavailable"]
    if not can:
        raise KitError(
            "no catalogue stack can be had on this platform: a pipeline's REQUIRES "
            "are added to catalogue stacks only (`kit stacks` says why)"
        )
    return ([n for n in can if status[n] == "built"] or can)[0]


_PLANS = {DATASET: _own, PIPELINE: _file}  # one planner per subject kind


def file_stacks(names, stack: str, plat, host: bool = False, built: bool = False) -> list:
    """The stacks a pipeline file's factors ``names`` run in: the stack factors' catalogue
    pairs (as for kit's own pipeline; ``built``: only those built here), and ``stack`` for
    every other factor; the host (kit's own interpreter, never built) only with ``host``."""
    from ...runs.planning.stack_pairs import stack_pairs

    out = []
    for name in names:
        f = factors.get(name)
        if f is not None and f.planned == factors.STACKS:
            out += [n for a, _, b, _, _ in stack_pairs(name, plat, stack, built) for n in (a, b)]
        else:
            out.append(stack)
    return [n for n in dict.fromkeys(out) if host or n != HOST]


def pairs_before_building(p: Plan) -> tuple | None:
    """The pairs kit's own plan ``p`` will have once its stacks are built: planned with each
    unbuilt stack standing for itself by name (pairs and their count only: a run's id needs the
    built stack's identity, so none of these runs is stored or run). None: a pipeline file's
    plan, or one a stack's planner cannot make before building (the summary names the stacks)."""
    from ...envs.kinds import stack_kind
    from ...runs.planning.plan import plan as plan_factor

    if not p.stacks or p.subject.kind != DATASET:
        return p.pairs if not p.stacks else None
    from ..audit import Audit

    a, unbuilt = p.work, {name for name, _ in p.stacks}
    if not isinstance(a, Audit):  # (a dataset's plan always holds its Audit)
        return None

    def get(name):
        if name in unbuilt:
            return Stack(name, (), f"unbuilt:{name}", {})
        return stack_kind(name).runnable()

    try:
        return tuple(
            pair
            for f in a.factors
            for pair in plan_factor(f, a.dataset.sha256, a.options, a.stack, a.platform, get=get)
        )
    except KitError:
        return None
