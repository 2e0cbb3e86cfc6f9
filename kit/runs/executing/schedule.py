"""How local runs share this machine: as many at once as the cores allow given each run's
threads (``threads x runs <= cores``), the largest first so that the last to finish are short.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from statistics import median

from ...core.processes import cores

AUTO = "auto"
_KIND_WEIGHT = {
    "pipeline": 3,
    "feed": 2,
    "perturb": 2,
    "torch": 1,
}  # no history: a pipeline is longest


def at_once(specs, jobs) -> int:
    """Runs at a time: ``jobs`` as asked, or for "auto" as many as the cores hold at the
    smallest thread count of the plan (the core budget keeps larger runs within the cores)."""
    if jobs != AUTO:
        return max(1, int(jobs))
    fewest = min((s.threads for s in specs), default=1)
    return max(1, cores() // max(1, fewest))


def together(specs, jobs) -> int:
    """How many of ``specs`` run at a time: at_once, and no more than there are (what `note`
    says, and what a plan's time estimate divides by)."""
    specs = list(specs)
    return max(1, min(at_once(specs, jobs), len(specs)))


def note(specs, jobs) -> str | None:
    """What the user should know about how the plan shares the cores (None: nothing special)."""
    specs = list(specs)
    if len(specs) < 2:
        return None
    n, c = together(specs, jobs), cores()
    alone = sum(s.threads >= c for s in specs)
    parts = [f"up to {n} run(s) at once on {c} core(s) (threads x runs never exceed the cores)"]
    if alone:
        parts.append(f"{alone} run(s) use every core and run alone")
    return "; ".join(parts)


def _key(spec) -> tuple:
    return (spec.kind, spec.dataset, spec.stack, spec.threads, spec.svd_iters, spec.embedding)


def largest_first(specs, history: list) -> list:
    """``specs`` ordered by the core-seconds they are expected to hold, largest first: threads
    times the median wall time of past runs of the same kind, dataset, stack, threads and SVD
    settings, else times a weight by kind and iterations.

    The widest runs thus start first and the one-core runs fill the cores at the end: a wide
    run queued behind narrow ones would keep cores idle while it waits for enough of them, and
    the last runs to finish are the short, narrow ones."""
    past: dict = {}
    for r in history:
        past.setdefault(_key(r.spec), []).append(r.manifest.get("wall_s", 0.0))

    def size(s):
        seen = past.get(_key(s))
        return s.threads * (
            median(seen) if seen else _KIND_WEIGHT.get(s.kind, 0) * 100 + s.svd_iters
        )

    # measured runs and unmeasured ones are ranked apart: seconds and weights do not compare
    known = sorted((s for s in specs if past.get(_key(s))), key=lambda s: -size(s))
    unknown = sorted((s for s in specs if not past.get(_key(s))), key=lambda s: -size(s))
    return unknown + known  # the unmeasured first: they may be the largest


class CoreBudget:
    """A counting semaphore of cores: a run of t threads holds t of them while it runs."""

    def __init__(self, total: int | None = None):
        self.total = total or cores()
        self.free = self.total
        self._cond = threading.Condition()

    @contextmanager
    def hold(self, threads: int):
        need = min(max(1, threads), self.total)  # a run wider than the machine runs alone
        with self._cond:
            self._cond.wait_for(lambda: self.free >= need)
            self.free -= need
        try:
            yield
        finally:
            with self._cond:
                self.free += need
                self._cond.notify_all()
