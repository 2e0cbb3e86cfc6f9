"""Tolerances a lab's regression tests can use: per output, the rtol/atol that the measured
environment factors need, the factor that set it, and the decision level it reaches.

Read from the store only. An environment factor is one kit.core.factors marks ``tolerated``
(threads, process-free machine and library factors: blas, arch, numpy, sklearn, python, host,
torch threads and device); seeds, precision, deterministic algorithms, perturbations and the
null experiment never widen a tolerance. A difference that reaches predictions (a probability
crossing 0.5, a changed label, neighbour or shape) or conclusions (a verdict) gets no
tolerance: it is flagged "pin, don't tolerate"; so does one as wide as the values' own range
(WIDE), which no regression test could fail. Factors the lab will pin (``pin``) are left out.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import numpy as np

from ..core import factors
from ..core.subject import Subject
from ..runs.store import Store
from .budget import budget, output_budget
from .by_kind import compare, pairs, tally
from .compare import STAGES, has_arrays
from .verdicts import output_verdicts

HEADROOM = 2.0  # twice the largest difference measured: the stored pairs are a sample of them
LEVELS = ("nothing", "bits", "magnitudes", "predictions", "conclusions")  # low to high
_DISCRETE = ("labels", "truth", "neighbours", "classes")  # any change is a changed prediction
# a tolerance this wide passes any value the output takes: atol at least half the spread of its
# values across the measured runs, or rtol at least 1 (a 100% change); said as "pin"
WIDE = (0.5, 1.0)
# kit's own pipeline's outputs: each stored array, its kind the one its pipeline declares
KIT_OUTPUTS = tuple(a for arrays in STAGES.values() for a in arrays) + ("y_test",)


def is_environment(name: str) -> bool:
    """A factor a lab's tests must tolerate: kit.core.factors says so (unknown names: no)."""
    f = factors.get(name)
    return bool(f and f.tolerated)


def tolerances(
    store: Store, subject: Subject, path: str = "FILE.py", pin: Iterable[str] = ()
) -> dict[str, Any]:
    """The tolerances of ``subject``: a lab's pipeline file's from its budget, kit's own
    pipeline's on a dataset from its stored pairs, each output compared by its declared kind
    alike; ``path``: a pipeline file as the user gave it, for the command that measures one (a
    bare `kit run --factor threads` measures kit's own pipeline, not theirs); ``pin``: factor
    names the lab will pin, left out of every tolerance and named in the result."""
    pinned = tuple(dict.fromkeys(pin))
    out = (
        _of_pipeline(store, subject, path, pinned)
        if subject.is_pipeline
        else _of_dataset(store, subject, pinned)
    )
    out["pinned"] = list(pinned)
    if pinned and not out["factors"]:
        out["note"] = (
            f"no environment factor left to tolerate: the lab pins "
            f"{', '.join(pinned)}, and no other is stored"
        )
    return out


def _of_pipeline(store: Store, subject: Subject, path: str, pin: tuple[str, ...]) -> dict[str, Any]:
    b = output_budget(store, subject)
    rows = {f: r for f, r in b["factors"].items() if f not in pin}
    runs = {
        r for f, a, bb in pairs(store, subject) if f in rows and is_environment(f) for r in (a, bb)
    }
    return from_rows(
        rows,
        {"pipeline": b["pipeline"], "name": b["name"]},
        changed_models(output_verdicts(store, subject)),
        loose=b["loose"],
        measure=f"kit run --pipeline {path} --factor threads",
        spreads=_spreads(store, runs),
    )


def _spreads(store: Store, runs: Iterable[str]) -> dict[str, float]:
    """{output: the range of values it holds (its largest minus its smallest finite element,
    the widest of ``runs``)}: what a tolerance is measured against, as a test compares
    element by element (one as wide as this passes anything). A single value has no range:
    rtol alone says if its tolerance is too wide."""
    out: dict[str, float] = {}
    for run in sorted(runs):
        if not has_arrays(store, run):
            continue
        for name, st in store.run(run).stages.items():
            if np.dtype(st.dtype).kind != "f" or int(np.prod(st.shape)) < 2:
                continue
            a = store.array(run, name)
            a = a[np.isfinite(a)]
            if a.size > 1:
                out[name] = max(out.get(name, 0.0), float(a.max() - a.min()))
    return out


def changed_models(verdicts: dict[str, Any]) -> dict[str, set[str]]:
    """{factor: the models of every verdict its pairs changed}, from output_verdicts (a
    probabilities output can change a verdict without crossing 0.5)."""
    return {
        f: {m for row in r["verdicts"].values() if row["changed"] for m in row["models"]}
        for f, r in verdicts["factors"].items()
    }


def _of_dataset(store: Store, subject: Subject, pin: tuple[str, ...] = ()) -> dict[str, Any]:
    """kit's own pipeline on one dataset: each stored array an output (its kind the one kit's
    pipeline declares), each stored pair of an environment factor compared as a lab's
    pipeline's outputs are, and a verdict its pairs changed lifting its models' outputs to
    conclusions."""
    dataset = subject.sha256
    rows: dict[str, dict[str, Any]] = {}
    ignored: set[str] = set()
    skipped = 0
    loose: set[str] = set()
    runs: set[str] = set()
    for p in store.pairs(dataset):
        if p.factor in pin:
            continue
        if not is_environment(p.factor):
            ignored.add(p.factor)
            f = factors.get(p.factor)
            if f and f.varies == factors.NOTHING:
                # a null pair: the outputs whose bits differ are a loose generator's
                loose |= {
                    n
                    for n, d in compare(
                        store, p.a, p.b, subject.kinds, KIT_OUTPUTS, measure=False
                    ).items()
                    if not d["identical"]
                }
        elif not (has_arrays(store, p.a) and has_arrays(store, p.b)):
            skipped += 1  # digests alone measure no magnitude
        else:
            runs |= {p.a, p.b}
            tally(
                rows.setdefault(p.factor, {"pairs": 0, "outputs": {}}),
                compare(store, p.a, p.b, subject.kinds, KIT_OUTPUTS),
            )
    name = (store.datasets().get(dataset) or {}).get("name", dataset[:12])
    out = from_rows(
        rows,
        {"dataset": dataset, "name": name},
        _conclusions(store, dataset, list(rows)),
        loose=sorted(loose),
        spreads=_spreads(store, runs),
    )
    out["ignored"] = sorted(ignored)
    if skipped:
        out["note"] = (
            f"{skipped} pair(s) of imported runs without their arrays measured no "
            f"magnitude (export them with `kit export --arrays`)"
        )
    return out


def _conclusions(store: Store, dataset: str, measured: list[str]) -> dict[str, set[str]]:
    """{factor: models named in a verdict its pairs changed}, from kit's budget."""
    if not measured:
        return {}
    out: dict[str, set[str]] = {}  # the verdicts are the budget's (and cached with it)
    for r in budget(store, dataset)["rows"]:
        if r.factor in measured:
            for key in r.verdict_changes:
                out.setdefault(r.factor, set()).update(key.split()[0].split("-"))
    return out


def from_rows(
    rows: dict[str, dict[str, Any]],
    head: dict[str, Any],
    conclusions: dict[str, set[str]] | None = None,
    loose: Collection[str] = (),
    measure: str = "kit run --factor threads",
    spreads: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Per output over the environment factors of ``rows`` (kit.analysis.budget.output_budget's
    ``factors``: {factor: {"pairs", "outputs": {name: {"kind", "changed", "most", ...}}}}):
    {"output", "kind", "rtol", "atol", "factor", "level", "pin", "max_abs", "max_rel",
    "pairs", "why"}. ``conclusions``: {factor: outputs a verdict it changed rests on};
    ``loose``: outputs the null experiment changed, pinned (a tolerance would hide the loose
    generator, and what it measured is that generator's draw, not the environment's);
    ``measure``: the command that stores an environment factor, said when none is;
    ``spreads``: {output: the range of its values}, against which a tolerance too wide to fail
    is a pin (WIDE)."""
    conclusions = conclusions or {}
    env = [f for f in rows if is_environment(f)]
    per: dict[str, list[tuple[str, int, dict[str, Any], str]]] = {}
    for f in env:
        for name, o in rows[f]["outputs"].items():
            lvl = reach(o, name in conclusions.get(f, ()))
            per.setdefault(name, []).append((f, rows[f]["pairs"], o, lvl))
    out = [_one(name, got, name in loose, (spreads or {}).get(name)) for name, got in per.items()]
    return {
        **head,
        "headroom": HEADROOM,
        "factors": env,
        "ignored": [f for f in rows if f not in env],
        "tolerances": out,
        "loose": sorted(loose),
        "note": None if env else f"no environment factor is stored: measure one first ({measure})",
    }


def reach(o: dict[str, Any], concluded: bool) -> str:
    """How far one output's differences under one factor travelled (one of LEVELS): read by the
    tolerances and by the pipeline report's plot."""
    most = o.get("most", {})
    if not o["changed"]:
        return "nothing"
    if concluded:
        return "conclusions"
    # a value turned NaN or inf, or values no magnitude measures (booleans, strings) changed
    if most.get("nonfinite", 0) > 0 or (most.get("changed", 0) > 0 and "max_abs" not in most):
        return "predictions"
    if (
        "shape" in o
        or ("shape" in (o.get("worst") or {}))
        or o["kind"] in _DISCRETE
        or most.get("flips", 0) > 0
    ):
        return "predictions"
    return "magnitudes" if most.get("max_abs", 0) > 0 else "bits"


def _one(
    name: str,
    got: list[tuple[str, int, dict[str, Any], str]],
    loose: bool = False,
    spread: float | None = None,
) -> dict[str, Any]:
    """One output's tolerance: the largest measured difference of the factor that set it."""
    kind = got[0][2]["kind"]
    worst = max(got, key=lambda g: (LEVELS.index(g[3]), g[2].get("most", {}).get("max_abs", 0)))
    lvl = worst[3]
    # bits that differ by an amount not measured here (runs without their arrays) set no
    # tolerance: an exact comparison would fail, any other would be a guess
    unmeasured = any(g[2].get("most", {}).get("unmeasured") for g in got)
    pin = loose or unmeasured or LEVELS.index(lvl) >= LEVELS.index("predictions")
    max_abs = max(g[2].get("most", {}).get("max_abs", 0.0) for g in got)
    max_rel = max(g[2].get("most", {}).get("max_rel", 0.0) for g in got)
    # an output no factor changed was set by none of them; a loose generator's by none either:
    # the null experiment changed it, and naming an environment factor would say pin that
    row = {
        "output": name,
        "kind": kind,
        "factor": worst[0] if lvl != "nothing" and not loose else None,
        "level": lvl,
        "pin": pin,
        "loose": loose,
        "pairs": sum(g[1] for g in got),
        "max_abs": max_abs,
        "max_rel": max_rel,
        "rtol": None if pin else max_rel * HEADROOM,
        "atol": None if pin else max_abs * HEADROOM,
    }
    row["why"] = (
        (
            "its bits differ by an amount not measured here (runs without their "
            "arrays: export them with --arrays) - pin until measured"
        )
        if unmeasured and not loose
        else _why(lvl, worst[2], loose)
    )
    need_abs, need_rel = max_abs * HEADROOM, max_rel * HEADROOM
    if kind == "metrics":
        # each metric on its own scale: rtol alone, element by element (an atol wide enough
        # for inertia would pass any silhouette); a metric at 0 that moves needs rtol >= 1
        spread = None
        if not pin:
            row["atol"] = 0.0
    if not pin and lvl == "magnitudes":
        wide = (
            f"rtol {need_rel:.3g} is at least {WIDE[1]:g} (a change as large as the values)"
            if need_rel >= WIDE[1]
            else f"atol {need_abs:.3g} is at least half the spread of its values ({spread:.3g})"
            if spread and need_abs >= WIDE[0] * spread
            else None
        )
        if wide:  # a test with this tolerance passes whatever the output holds: it tests nothing
            row.update(
                pin=True,
                rtol=None,
                atol=None,
                wide=True,
                why=f"the tolerance it would need is as wide as its values: {wide}; a "
                f"test with it passes anything - pin, don't tolerate",
            )
    return row


def _why(lvl: str, o: dict[str, Any], loose: bool) -> str:
    """What the level means for a lab's test, in words; the numbers are the row's."""
    m = o.get("most", {})
    if loose:
        return (
            "it differs in the null experiment (a loose generator): seed it from a named "
            "seed (kit doctor --pipeline), then measure again - pin, don't tolerate"
        )
    if lvl == "nothing":
        return "identical under every environment factor measured: compare exactly"
    if lvl == "bits":
        return "bits differ, no value moved (e.g. -0.0 and 0.0): compare exactly"
    if lvl == "magnitudes":
        return "values move, no prediction changes"
    if lvl == "conclusions":
        return "a verdict resting on it changed: changes conclusions - pin, don't tolerate"
    if m.get("nonfinite"):
        return (
            f"{m['nonfinite']} value(s) NaN or inf in one run only: a changed value no "
            f"tolerance covers - pin, don't tolerate"
        )
    if m.get("flips"):
        return f"{m['flips']} prediction(s) cross 0.5: changes predictions - pin, don't tolerate"
    if "shape" in o or "shape" in (o.get("worst") or {}):
        return "its shape changed: changes predictions - pin, don't tolerate"
    return (
        f"{m.get('changed', 'some')} of its discrete values changed: changes predictions - "
        f"pin, don't tolerate"
    )
