"""Explain: where each stage's difference in a pair starts, found by cross-feeding stored runs.

A stage of pair (a, b) that differs is ``inherited`` when b's stack and settings, fed a's
upstream arrays (a feed run), give a's output bit for bit: it differs only because its inputs
did; otherwise it ``originates``. The cross-fed runs are ordinary runs (kind "feed"), planned
here and made by the runner; everything below reads them from the store, like a budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypedDict

from ..core import factors
from ..core.spec import RunSpec
from ..runs.store import Store
from ..runs.store.hosts import host_id
from ..runs.store.records import StoredPair
from ..worker.pipeline import MODELS
from . import amplify
from .budget import TORCH_YARDSTICK, YARDSTICK, ratio
from .compare import STAGES, compare_runs, has_arrays
from .records import BudgetRow

# display stages, in pipeline order, and the feed run that reruns each on a's inputs
# (one feed per group: the stages of a group all start from the same stored arrays)
ORDER = ("kmer", "tfidf", "svd_rand", "svd_arpack", "kmeans", "knn", *MODELS)
GROUP = {
    "tfidf": "tfidf",
    "svd_rand": "svd",
    "svd_arpack": "svd",
    "kmeans": "models",
    "knn": "models",
    **{m: "models" for m in MODELS},
}
READINGS = {
    "magnitude": "about what noise gives",
    "something else": "more than noise of this size would give",
    "less": "less than noise of this size would give",
}
NO_CURVE = "no curve: run kit run --factor perturb"


@dataclass(frozen=True)
class StageOrigin:
    """One stage of one pair: where its difference comes from, and its flips beside noise's."""

    origin: str  # identical | inherited | originates | not measured
    changes_at: tuple[str, ...] = ()  # releases at which it changes (kit.analysis.releases)
    back_to: dict[str, str] = field(
        default_factory=dict
    )  # {release: earlier release whose output it gives}
    flips: int | None = None  # a model's observed flips between a and b
    predicted_flips: float | None = None  # what noise of the embedding change's size gives
    reading: str | None = None  # READINGS' words for flips beside predicted_flips
    seed_units: float | None = None  # flips over the flips another seed gives (the budget's unit)

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "changes_at": list(self.changes_at),
            "back_to": dict(self.back_to),
            "flips": self.flips,
            "seed_units": self.seed_units,
            "predicted_flips": self.predicted_flips,
            "reading": self.reading,
        }


class ReleaseRow(TypedDict):
    """One release of a scan as a pair's explanation shows it (kit.analysis.releases)."""

    package: str
    version: str
    stack: str | None
    status: str  # built | not run | could not build
    why: str | None


@dataclass(frozen=True)
class PairExplanation:
    a: str
    b: str
    label: str
    level: str
    stages: dict[str, StageOrigin] = field(default_factory=dict)  # {display stage: origin}
    first_origin: str | None = None  # the first stage, in pipeline order, that originates
    emb_rel: float | None = None  # the relative change of the embedding the models used
    curve: str | None = None  # why no noise reading (NO_CURVE, not an environment factor)
    releases: tuple[ReleaseRow, ...] = ()  # the releases scanned, with their status
    library: str | None = None  # the package whose releases were scanned
    notes: tuple[dict[str, str], ...] = ()  # ({"version", "url"}): notes where it changes
    outputs: bool = False  # a lab file's pair: ``stages`` are its declared outputs

    def to_json(self) -> dict[str, Any]:
        if self.outputs:  # no stages, no cross-fed origins, no models' flips: what was measured
            return {
                "a": self.a,
                "b": self.b,
                "label": self.label,
                "level": self.level,
                "library": self.library,
                "releases": list(self.releases),
                "notes": list(self.notes),
                "outputs": {
                    s: {
                        "origin": o.origin,
                        "changes_at": list(o.changes_at),
                        "back_to": dict(o.back_to),
                    }
                    for s, o in self.stages.items()
                },
            }
        return {
            "a": self.a,
            "b": self.b,
            "label": self.label,
            "level": self.level,
            "library": self.library,
            "releases": list(self.releases),
            "notes": list(self.notes),
            "first_origin": self.first_origin,
            "emb_rel": self.emb_rel,
            "curve": self.curve,
            "stages": {s: o.to_json() for s, o in self.stages.items()},
        }


def feed_spec(a: RunSpec, b: RunSpec, group: str) -> RunSpec:
    """b's stages from ``group`` on, in b's stack and settings, on a's stored arrays."""
    return b.with_(kind="feed", input=a.run_id, feed=group)


def rerun_in_stacks(a: RunSpec, stacks: list[Any], groups: tuple[str, ...]) -> list[RunSpec]:
    """Feed runs of ``groups`` in each stack (objects with ``name`` and ``identity``: a release
    scan's probe stacks), all on a's upstream arrays, so each stage's change is its own."""
    # run here: this machine's host id, never a's (an imported a would lend the other
    # machine's id, and a forged bundle could then pre-seed the scan's runs)
    return [
        feed_spec(a, a.with_(stack=st.name, stack_id=st.identity, host=host_id()), g)
        for st in stacks
        for g in groups
    ]


class Uncrossed(NamedTuple):
    """Why a stored pair cannot be cross-fed; ``never``: not here nor anywhere (not whole
    pipeline runs, another split), where the rest is this machine's lack (b made elsewhere, a's
    arrays not here) and the pair's stored cross-fed runs may still explain it."""

    why: str
    never: bool = False


def unexplainable(
    store: Store, a: str, b: str, where: tuple[str, ...] = (), stored: bool = False
) -> Uncrossed | None:
    """Why a stored pair cannot be cross-fed (None: it can). Its cross-fed runs are b's, made
    where b was: ``where`` the hosts they can be made on now (this machine's id, a cluster's
    node classes; () = here). ``stored``: a pair whose b was made elsewhere reads as
    explainable when cross-fed runs of it are stored (made there before, or imported)."""
    ra, rb = store.run(a), store.run(b)
    if ra.spec.kind != "pipeline" or rb.spec.kind != "pipeline":
        return Uncrossed(
            f"its runs are {ra.spec.kind} and {rb.spec.kind} runs; only whole pipeline runs "
            "are cross-fed",
            never=True,
        )
    if ra.spec.split != rb.spec.split:  # seed:split: what is measured changed, not how
        return Uncrossed(
            "its runs predict different test proteins (another split): no stage is compared",
            never=True,
        )
    if ra.spec.split >= 0:  # a feed run keeps the dataset's cut: it cannot re-split
        return Uncrossed(
            "its runs are a re-split (seed:split): cross-fed runs keep the dataset's own cut"
        )
    if rb.spec.host not in (where or (host_id(),)) and not (
        stored and _fed(store, ra.spec, rb.spec)
    ):
        if isinstance(rb.manifest.get("node"), dict):  # made on a cluster's node
            return Uncrossed(
                f"its b run was made on node class {rb.spec.host} of a cluster: its "
                "cross-fed runs are made there (kit explain --cluster)"
            )
        return Uncrossed(
            "its b run was made on another machine: cross-feeding reruns b's stack here"
        )
    if not has_arrays(store, a):
        return Uncrossed("a's arrays are not here (a bundle exported without --arrays)")
    return None


def _differing(store: Store, a: str, b: str) -> list[str]:
    c = compare_runs(store, a, b)
    return [s for s in ORDER if s in c.identical and not c.identical[s]]


def _fed(store: Store, a: RunSpec, b: RunSpec) -> bool:
    """Whether any cross-fed run of the pair (a, b) is stored."""
    return any(store.has_run(feed_spec(a, b, g).run_id) for g in dict.fromkeys(GROUP.values()))


def feeds_needed(
    store: Store, pairs: list[StoredPair], where: tuple[str, ...] = ()
) -> list[RunSpec]:
    """The feed specs that explain ``pairs`` (StoredPair): one per differing stage group, of
    the pairs whose b run was made ``where`` (unexplainable's)."""
    out: list[RunSpec] = []
    for p in pairs:
        if unexplainable(store, p.a, p.b, where):
            continue
        a, b = store.run(p.a).spec, store.run(p.b).spec
        groups = dict.fromkeys(GROUP[s] for s in _differing(store, p.a, p.b) if s in GROUP)
        out += [feed_spec(a, b, g) for g in groups]
    return list({s.run_id: s for s in out}.values())


def _same(store: Store, x: str, y: str, stage: str) -> bool:
    sx, sy = store.run(x).stages, store.run(y).stages
    return all(
        n in sx and n in sy and sx[n].sha256 == sy[n].sha256 and sx[n].dtype == sy[n].dtype
        for n in STAGES[stage]
    )


def origins(store: Store, a: str, b: str) -> dict[str, str]:
    """{display stage: identical | inherited | originates | not measured} of a stored pair."""
    ra, rb = store.run(a), store.run(b)
    c = compare_runs(store, a, b)
    out = {}
    for s in ORDER:
        if s not in c.identical:
            continue
        if c.identical[s]:
            out[s] = "identical"
        elif s not in GROUP:  # the k-mer counts start from the sequences alone
            out[s] = "originates"
        else:
            fed = feed_spec(ra.spec, rb.spec, GROUP[s]).run_id
            out[s] = (
                "not measured"
                if not store.has_run(fed)
                else "inherited"
                if _same(store, fed, a, s)
                else "originates"
            )
    return out


def seed_unit(rows: list[BudgetRow] | None) -> dict[str, float | None]:
    """{model: the median flips another seed gives}: the budget's seed unit, read from its seed
    rows (torch-seed for the torch MLP), without the models the budget flags as predicting one
    class in a seed run (their unit means nothing); {} without seed pairs."""
    out: dict[str, float | None] = {}
    flagged: set[str] = set()
    for r in rows or []:
        if (r.factor, r.level) in (YARDSTICK, TORCH_YARDSTICK):
            for m, d in r.models.items():
                out.setdefault(m, d.flips_median)
                flagged |= {m} if d.one_class_runs else set()
    return {m: u for m, u in out.items() if m not in flagged}


def explain_pair(
    store: Store,
    pair: StoredPair,
    curves: dict[str, list[Any]] | None,
    unit: dict[str, float | None] | None = None,
) -> PairExplanation:
    """One stored pair: each stage's origin, each model's flips (also in seed units, ``unit``:
    seed_unit's), and (an environment factor, with a perturbation curve) the flips beside what
    noise of the embedding change gives."""
    c = compare_runs(store, pair.a, pair.b)
    used = c.used
    emb_rel = used.rel_fro if used is not None else None
    f = factors.get(pair.factor)
    curve = None
    if not (f and f.environmental):
        curve = "not an environment factor: noise of its size does not describe it"
    elif not curves:
        curve = NO_CURVE
    stages = {}
    for s, origin in origins(store, pair.a, pair.b).items():
        d = c.models.get(s)
        pred = (
            amplify.predict(curves.get(s, []), emb_rel) if curve is None and d and curves else None
        )
        flips = d.flips if d else None
        stages[s] = StageOrigin(
            origin,
            flips=flips,
            predicted_flips=pred,
            reading=READINGS[amplify.reading(d.flips, pred)] if d and pred is not None else None,
            seed_units=ratio(flips, (unit or {}).get(s)),
        )
    first = next((s for s, o in stages.items() if o.origin == "originates"), None)
    return PairExplanation(pair.a, pair.b, pair.label, pair.level, stages, first, emb_rel, curve)


def explain_factor(
    store: Store, dataset: str, factor: str, rows: list[BudgetRow] | None = None
) -> dict[str, Any]:
    """{"factor", "pairs": [PairExplanation], "skipped": [(label, why)]} of a factor's stored
    pairs on ``dataset``; ``rows`` are the budget's rows (their perturbation curves)."""
    curves, unit = amplify.curves(rows or []), seed_unit(rows)
    pairs = [p for p in store.pairs(dataset) if p.factor == factor]
    out: list[PairExplanation] = []
    skipped: list[tuple[str, str]] = []
    for p in pairs:
        uncrossed = unexplainable(store, p.a, p.b, stored=True)
        if uncrossed:
            skipped.append((p.label, uncrossed.why))
        else:
            out.append(explain_pair(store, p, curves, unit))
    return {"factor": factor, "pairs": out, "skipped": skipped}


def output_origins(store: Store, a: str, b: str) -> dict[str, str]:
    """{output: identical | differs} of a stored pair of a lab's pipeline runs: a file declares
    outputs, not stages, so nothing is cross-fed and a differing output's origin is the release
    scan's to find (kit.analysis.releases). An output only one run holds differs."""
    sa, sb = store.run(a).stages, store.run(b).stages
    return {
        n: "identical"
        if n in sa and n in sb and (sa[n].sha256, sa[n].dtype) == (sb[n].sha256, sb[n].dtype)
        else "differs"
        for n in dict.fromkeys([*sa, *sb])
    }


def explain_outputs(store: Store, pipeline: str, factor: str) -> dict[str, Any]:
    """explain_factor's answer for a lab's pipeline ``pipeline`` (its sha256): each of the
    factor's stored pairs with each output identical or differing, before any release scan."""
    out = [
        PairExplanation(
            p.a,
            p.b,
            p.label,
            p.level,
            {n: StageOrigin(o) for n, o in output_origins(store, p.a, p.b).items()},
            outputs=True,
        )
        for p in store.pairs(pipeline)
        if p.factor == factor
    ]
    return {"factor": factor, "pairs": out, "skipped": []}
