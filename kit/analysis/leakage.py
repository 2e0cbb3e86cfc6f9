"""Leakage measured: each model's accuracy and AUC on test proteins with a train homolog and without."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..core.errors import KitError
from ..runs.store import Store
from ..worker.pipeline import MODELS
from .auc import auc
from .records import ModelLeakage


def _side(p: np.ndarray, y: np.ndarray) -> tuple[float | None, float | None]:
    """(accuracy, AUC) of one side; None for what it cannot measure (no protein; one class)."""
    if len(y) == 0:
        return None, None
    acc = float(np.mean((p > 0.5) == y))
    return acc, (None if len(np.unique(y)) < 2 else auc(p, y))


def leakage(
    probs: Mapping[str, ArrayLike],
    y: ArrayLike,
    with_homolog: ArrayLike,
    models: Sequence[str] = MODELS,
) -> dict[str, ModelLeakage]:
    """{model: its accuracy and AUC on each side} for one run's test probabilities (``models``:
    kit's four, or a lab pipeline's probabilities outputs)."""
    labels = np.asarray(y).astype(np.int64)
    side = np.asarray(with_homolog)
    if side.dtype != bool or side.shape != labels.shape:
        raise KitError(
            f"test_with_train_homolog must be one bool per test protein ({len(labels)}); "
            f"got {side.dtype} of shape {side.shape}"
        )
    out = {}
    for m in models:
        p = np.asarray(probs[m], np.float64)
        (aw, uw), (ao, uo) = _side(p[side], labels[side]), _side(p[~side], labels[~side])
        out[m] = ModelLeakage(
            n_with=int(side.sum()),
            n_without=int((~side).sum()),
            acc_with=aw,
            acc_without=ao,
            auc_with=uw,
            auc_without=uo,
        )
    return out


def run_leakage(store: Store, run_id: str, with_homolog: ArrayLike) -> dict[str, ModelLeakage]:
    """A run's leakage split, from its stored test probabilities and labels."""
    return leakage(
        {m: store.array(run_id, m) for m in MODELS}, store.array(run_id, "y_test"), with_homolog
    )
