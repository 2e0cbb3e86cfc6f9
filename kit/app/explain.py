"""`kit explain`'s steps: the cross-fed runs a factor's pairs need, their stacks, then the runs.

The runs are ordinary feed runs (kit.analysis.explain plans them) made by the normal runner:
stored, resumable, listed by `kit runs` and exported in bundles. Stacks that are not built
are asked about first, as `kit run` asks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.budget import budget
from ..analysis.explain import explain_factor, feeds_needed
from ..core import factors
from ..core.callbacks import Confirm, Log, OnDone
from ..core.errors import KitError
from ..data import Dataset, load_dataset
from ..data.dataset import SYNTHETIC
from ..envs.kinds import stack_kind
from ..envs.platforms import detect
from ..runs.executing.runner import run_all
from ..runs.store import Store
from ..runs.store.hosts import host_id
from .selection import Selection


@dataclass
class ExplainPlan:
    factor: str
    selection: Selection
    feeds: list = field(default_factory=list)  # feed RunSpecs not stored yet
    stacks: list = field(default_factory=list)  # [(name, download bytes or None)] to build
    stored: int = 0  # feed runs already stored


def plan_explain(store: Store, factor: str, sel: Selection, cluster: bool = False) -> ExplainPlan:
    """The feed runs that explain ``factor``'s stored pairs on the selected dataset, each made
    where its b run was: of the pairs made here, and (``cluster``) of those made on a
    cluster's node class, whose runs a cluster makes."""
    stored = {p.factor for p in store.pairs()}
    if factors.get(factor) is None and factor not in stored:
        raise KitError(factors.unknown_factor(factor, (*factors.names(), *sorted(stored))))
    pairs = [p for p in store.pairs(sel.sha256) if p.factor == factor]
    if not pairs:
        raise KitError(
            f"no pairs of factor {factor!r} stored on dataset "
            f"{sel.summary.get('name', sel.sha256[:12])}: run `kit run --factor "
            f"{factor}` first"
        )
    where = (host_id(), *(_on_nodes(store, pairs) if cluster else ()))
    feeds = feeds_needed(store, pairs, where)
    todo = [s for s in feeds if not store.has_run(s.run_id)]
    plat = detect()
    stacks = []
    for name in dict.fromkeys(s.stack for s in todo):
        kind = stack_kind(name)
        if kind.buildable and kind.status(plat)[0] in ("not built", "broken"):
            stacks.append((name, kind.download_bytes(plat)))
    return ExplainPlan(factor, sel, todo, stacks, len(feeds) - len(todo))


def _on_nodes(store: Store, pairs: list) -> set:
    """The node classes the pairs' b runs were made on, of those a cluster's node made."""
    runs = [store.run(p.b) for p in pairs]
    return {r.spec.host for r in runs if isinstance(r.manifest.get("node"), dict)}


def working_dataset(sel: Selection) -> Dataset:
    """The stored dataset a selection names, whole (its stages are rerun)."""
    s = sel.summary
    name = SYNTHETIC if s.get("source") == SYNTHETIC else str(s.get("name", "")).split("[:")[0]
    for n in (s.get("rows"), None):
        try:
            ds = load_dataset(name, n, generate=name == SYNTHETIC, save=False)
        except KitError:
            continue
        if ds.sha256 == sel.sha256:
            return ds
    raise KitError(
        f"dataset {s.get('name', sel.sha256[:12])} is not stored here (only its runs "
        "are): cross-feeding reruns its stages, so it needs the proteins"
    )


def run_explain(
    p: ExplainPlan,
    store: Store,
    confirm: Confirm[list] = lambda stacks: True,
    log: Log = lambda m: None,
    on_done: OnDone | None = None,
    jobs="auto",
    executor=None,
) -> list:
    """Build the stacks (if ``confirm(stacks)`` says yes) and make the feed runs not stored:
    those of this machine here, those of a cluster's node classes on ``executor``; returns why
    each run that cannot be made was left out (one line each)."""
    if not p.feeds:
        return []
    if p.stacks:
        if not confirm(p.stacks):
            raise KitError("not started; nothing was run")
        for name, _ in p.stacks:
            stack_kind(name).build(detect(), log=lambda msg, _n=name: log(f"{_n}: {msg}"))
    here, left, fit = host_id(), [], []
    for s in p.feeds:
        kind = stack_kind(s.stack)
        st, why = kind.status(detect())
        if st != "built":
            left.append(f"stack {s.stack}: {why}")
        elif kind.runnable().identity != s.stack_id:
            left.append(
                f"stack {s.stack} changed since its pair was run: b cannot be rerun as it was"
            )
        elif s.host != here and executor.unfit(s):  # its class lacks b's cores now
            left.append(executor.unfit(s))
        else:
            fit.append(s)
    for runs, where in (
        ([s for s in fit if s.host == here], None),
        ([s for s in fit if s.host != here], executor),
    ):
        if runs:
            run_all(
                runs,
                working_dataset(p.selection),
                store,
                jobs=jobs,
                on_done=on_done,
                executor=where,
            )
    return list(dict.fromkeys(left))


def explanation(store: Store, factor: str, sel: Selection) -> dict:
    """The factor's explanation from what is stored (the perturbation curves from the budget)."""
    rows = budget(store, sel.sha256)["rows"]
    return explain_factor(store, sel.sha256, factor, rows)
