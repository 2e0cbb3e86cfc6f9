"""What a subject can be audited for: each factor the registry applies to it, described for it,
with whether it can run here and why not (the Plan tab's rows, kit's own and a file's alike)."""

from __future__ import annotations

from dataclasses import dataclass

from ...core import factors
from ...core.subject import Subject
from ...envs.platforms import Platform
from .availability import availability

# why a factor cannot run for a subject that lacks what it needs (kit.core.factors.NEEDS_*)
_LACKS = {
    factors.NEEDS_SEEDS: "its SEEDS are (): there is no seed to vary",
    factors.NEEDS_DTYPE: "its run takes no dtype: define run(seeds, dtype)",
}


@dataclass(frozen=True)
class Offer:
    """One factor a subject takes: its name, what it changes for this subject, whether it can
    run here, and the one-line reason when not."""

    factor: str
    description: str
    available: bool = True
    reason: str | None = None

    def to_json(self) -> dict:
        return {
            "factor": self.factor,
            "description": self.description,
            "available": self.available,
            "reason": self.reason,
        }


def offered(subject: Subject, plat: Platform | None = None, rows: list | None = None) -> list:
    """[Offer] for every factor that applies to ``subject``, in the registry's order for its
    kind (a pipeline file's seed:NAME for each of its SEEDS after seed). ``rows``: kit's own
    availability here (kit.runs.planning.availability), read when not given."""
    here = {r["factor"]: r for r in (availability(plat) if rows is None else rows)}
    out = []
    for name in factors.for_kind(subject.kind, subject.seeds):
        row = here.get(name)
        use = factors.use(name, subject.kind, subject.seeds)
        if use is None:  # for_kind names only the factors that apply
            continue
        what = factors.described(
            name, subject.kind, subject.seeds, own=row["description"] if row else None
        )
        available, reason = (row["available"], row["reason"]) if row else (True, None)
        lacks = [
            why for need, why in _LACKS.items() if need in use.needs and not _has(subject, need)
        ]
        if available and lacks:
            available, reason = False, lacks[0]
        out.append(Offer(name, what, available, reason))
    return out


def _has(subject: Subject, need: str) -> bool:
    return bool(subject.seeds) if need == factors.NEEDS_SEEDS else bool(subject.dtype)
