"""A factor that changes what is measured (seed:split): accuracy spread and verdict stability across its runs.

Two runs on different split seeds are tested on different proteins: nothing of one can be
compared with the other, prediction by prediction. What they can say together is how much the
numbers depend on which proteins were held out: each model's accuracy over the runs (its range
and standard deviation), beside the same over the training seeds (the `seed` factor's runs, the
yardstick), and how many of the twelve verdicts hold on every split.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import factors
from ..core.numbers import fmt
from ..runs.store import Store
from ..runs.store.records import StoredPair
from ..worker.pipeline import MODELS
from .records import BudgetRow
from .verdicts import KEYS, run_verdicts, stability, without_arrays


def _spread(values: list[float]) -> dict[str, float | None]:
    """max-min and the standard deviation (None below two runs) of a model's accuracies."""
    return {
        "spread": float(max(values) - min(values)) if values else None,
        "sd": float(np.std(values, ddof=1)) if len(values) > 1 else None,
    }


def accuracies(store: Store, runs: list[str]) -> dict[str, list[float]]:
    """{model: [accuracy of each run whose arrays are here]}, each run on its own test set."""
    scores = [run_verdicts(store, r)["_scores"] for r in runs]
    return {m: [s[m]["acc"] for s in scores] for m in MODELS}


def reading(store: Store, pairs: list[StoredPair], seed_runs: list[str]) -> dict[str, Any]:
    """The runs of a factor's pairs read one by one: accuracy spread per model beside the
    training seeds' (``seed_runs``: the `seed` factor's runs, [] if none are stored), and the
    verdicts that hold across every split (one group per reference run, as `kit verdicts`)."""
    groups: dict[str, list[str]] = {}
    for p in pairs:
        groups.setdefault(p.a, [p.a]).append(p.b)
    runs = [r for r in dict.fromkeys(r for g in groups.values() for r in g)]
    here = [r for r in runs if r not in set(without_arrays(store, runs))]
    seed_here = [r for r in seed_runs if r not in set(without_arrays(store, seed_runs))]
    acc, seed_acc = accuracies(store, here), accuracies(store, seed_here)
    models: dict[str, dict[str, Any]] = {}
    for m in MODELS:
        s, y = _spread(acc[m]), _spread(seed_acc[m])
        models[m] = {
            "acc": acc[m],
            "acc_spread": s["spread"],
            "acc_sd": s["sd"],
            "seed_acc_spread": y["spread"],
            "seed_acc_sd": y["sd"],
        }
    verdicts = stability(store, list(groups.values())) if here else []
    held = [v.verdict for v in verdicts if v.stable]
    return {
        "runs": len(here),
        "seed_runs": len(seed_here),
        "models": models,
        "verdicts": len(KEYS),
        "verdicts_held": len(held) if verdicts else None,
        "held": held,
        "changed": [v.verdict for v in verdicts if not v.stable],
    }


def row(
    store: Store,
    factor: str,
    level: str,
    pairs: list[StoredPair],
    n_test: int,
    seed_runs: list[str],
) -> BudgetRow:
    """The budget row of a factor that changes what is measured: no bits, flips or verdict
    changes between its pairs' runs (they are tested on different proteins), its reading
    instead."""
    return BudgetRow(
        factor=factor,
        level=level,
        pairs=len(pairs),
        labels=[p.label for p in pairs],
        n_test=n_test,
        runs=list(dict.fromkeys(r for p in pairs for r in (p.a, p.b))),
        splits=reading(store, pairs, seed_runs),
    )


def advice(rows: list[BudgetRow]) -> list[dict[str, Any]]:
    """One recommendation per such row: report over several splits, with its numbers."""
    recs: list[dict[str, Any]] = []
    for r in rows:
        if not (factors.measures(r.factor) and r.splits and r.splits["runs"]):
            continue
        s = r.splits
        widest = max(MODELS, key=lambda m: s["models"][m]["acc_spread"])
        w = s["models"][widest]
        beside = (
            f" against {fmt(w['seed_acc_spread'])} across {s['seed_runs']} training seeds"
            if w["seed_acc_spread"] is not None
            else " (no training-seed runs stored to compare with: `kit run --factor seed`)"
        )
        held = (
            ""
            if s["verdicts_held"] is None
            else f"; {s['verdicts_held']} of {s['verdicts']} verdicts held on every split"
        )
        recs.append(
            {
                "kind": "splits",
                "text": (
                    f"{r.factor} changes what is measured: report results over several splits. Across "
                    f"{s['runs']} splits the {widest} accuracy ranged over {fmt(w['acc_spread'])}"
                    f"{beside}{held}."
                ),
                "basis": {
                    "factor": r.factor,
                    "runs": s["runs"],
                    "model": widest,
                    "acc_spread": w["acc_spread"],
                    "seed_acc_spread": w["seed_acc_spread"],
                    "verdicts_held": s["verdicts_held"],
                },
            }
        )
    return recs
