"""Amplification: how each model class turns a small input perturbation into changed predictions.

The ``perturb`` factor stores, per noise size eps, pairs of (base run, the same classifiers
retrained on the base embedding plus seeded relative noise of size eps). From those budget rows
this module draws one transfer curve per model (flips, largest |dp|, verdicts changed against
eps) and uses it to predict how many flips an environment factor's measured embedding
difference alone would cause, beside the flips observed.
"""

from __future__ import annotations

import math
from typing import Any

from ..core import factors
from ..runs.planning.options import PRECISION_LEVEL
from .records import BudgetRow

# a perturbation curve's point: {"eps", "flips_median", "flips_max", "max_dp", ...}
Point = dict[str, Any]

FACTOR = "perturb"


def curves(rows: list[BudgetRow]) -> dict[str, list[Point]]:
    """{model: [{"eps", "flips_median", "flips_max", "max_dp", "seed_units", "verdicts"}]} by eps."""
    # eps = 0 is the sweep's null check, not a point on a log axis
    points = sorted(
        (
            (float(r.level), r)
            for r in rows
            if r.factor == FACTOR and r.level != PRECISION_LEVEL and float(r.level) > 0
        ),
        key=lambda x: x[0],
    )
    out: dict[str, list[Point]] = {}
    for eps, r in points:
        for m, d in r.models.items():
            out.setdefault(m, []).append(
                {
                    "eps": eps,
                    "flips_median": d.flips_median,
                    "flips_max": d.flips_max,
                    "max_dp": d.max_dp,
                    "seed_units": d.flips_median_seed_units,
                    "verdicts_changed": r.verdicts_changed_max,
                    "emb_rel": r.emb_rel_max,
                }
            )
    return out


def precision_point(rows: list[BudgetRow]) -> dict[str, Any] | None:
    """The float32 round-trip's flips per model, for comparison with the precision factor."""
    r = next((r for r in rows if r.factor == FACTOR and r.level == PRECISION_LEVEL), None)
    if r is None:
        return None
    return {"emb_rel": r.emb_rel_max, "flips": {m: d.flips_median for m, d in r.models.items()}}


def first_flip(curve: list[Point], any_draw: bool = False) -> float | None:
    """The smallest eps whose median flips are above zero, as the curve's table shows them
    (``any_draw``: at which at least one noise draw flipped a prediction). None: never."""
    key = "flips_max" if any_draw else "flips_median"
    return next((p["eps"] for p in curve if p[key] > 0), None)


def predict(curve: list[Point], emb_rel: float | None) -> float | None:
    """Median flips the curve predicts for an embedding difference of ``emb_rel``.

    Linear in log10(eps) between the sweep's points; 0 below a zero first point; the last
    point's value beyond the sweep. None without a curve or a magnitude.
    """
    if not curve or emb_rel is None:
        return None
    if emb_rel <= 0:
        return 0.0
    x = math.log10(emb_rel)
    pts = [(math.log10(p["eps"]), p["flips_median"]) for p in curve]
    if x <= pts[0][0]:  # below the sweep: what its smallest noise did (usually nothing)
        return float(pts[0][1])
    for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
        if x <= x1:
            return float(y0 + (y1 - y0) * (x - x0) / (x1 - x0))
    return float(pts[-1][1])


def reading(observed: float, predicted: float) -> str:
    """ "magnitude" when ``observed`` flips are within what noise of the same size gives
    (``predicted``, or both at most one), "something else" when far more (a changed algorithm,
    not noise), "less" when far fewer."""
    if observed == predicted or (observed <= 1 and predicted <= 1):
        return "magnitude"
    if observed > 2 * predicted + 1:
        return "something else"
    if observed < predicted / 2 - 1:
        return "less"
    return "magnitude"


def explain(rows: list[BudgetRow]) -> dict[str, Any]:
    """For each environment factor: predicted flips from its embedding difference, vs observed.

    ``verdict`` per model: ``reading`` of its observed flips beside the predicted ones.
    """
    cs = curves(rows)
    if not cs:
        return {}
    out: dict[str, Any] = {}
    for r in rows:
        f = factors.get(r.factor)
        # only a difference in the environment can be "explained by magnitude"; seeds and the
        # sweep itself change what is computed, not how precisely
        if not (f and f.environmental) or r.emb_rel_max is None:
            continue
        name = r.factor + (f"={r.level}" if r.level else "")
        per: dict[str, dict[str, Any]] = {}
        for m, d in r.models.items():
            pred, obs = predict(cs.get(m, []), r.emb_rel_max), d.flips_median
            if pred is None or obs is None:
                continue
            per[m] = {"predicted": pred, "observed": obs, "verdict": reading(obs, pred)}
        out[name] = {"emb_rel": r.emb_rel_max, "models": per}
    return out


def report(rows: list[BudgetRow]) -> dict[str, Any]:
    """What `kit amplify --json` prints: curves, first flips, the float32 point, explanations."""
    cs = curves(rows)
    return {
        "curves": cs,
        "first_flip": {m: first_flip(c) for m, c in cs.items()},
        "first_flip_any": {m: first_flip(c, any_draw=True) for m, c in cs.items()},
        "float32_roundtrip": precision_point(rows),
        "explained": explain(rows),
    }
