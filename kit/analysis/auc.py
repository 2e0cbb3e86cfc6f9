"""The area under the ROC curve, exactly, under whole-number case weights (bootstrap counts).

Each positive counts the negative weight strictly below its score plus half of that tied with
it: half the sum of the cumulative negative weight before its tie group and through it. With
whole-number weights every sum is exact, so the order of summation cannot change a bit of the
result, and one sort serves every resample at once.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def auc(scores: ArrayLike, y: ArrayLike) -> float:
    """The AUC of ``scores`` for labels ``y`` (0/1), ties counting one half; NaN for one class."""
    s = np.asarray(scores, np.float64)
    return float(case_major_auc(s, y, np.ones((len(s), 1)))[0])


def case_major_auc(scores: np.ndarray, y: ArrayLike, Wc: np.ndarray) -> np.ndarray:
    """The AUC under each column of case weights Wc (cases, resamples): case-major, so that a
    case's weights are contiguous and gathering them in score order is cheap. Integer weights
    are summed as integers (the caller keeps each resample's sums below 2**31 for int32)."""
    order = np.argsort(scores, kind="stable")
    s, pos = scores[order], np.asarray(y)[order].astype(bool)
    group = np.cumsum(np.r_[True, s[1:] != s[:-1]])  # tie group of each case, in score order
    cum = np.zeros((int((~pos).sum()) + 1, Wc.shape[1]), dtype=Wc.dtype)
    np.cumsum(Wc[order[~pos]], axis=0, out=cum[1:])
    below = np.searchsorted(group[~pos], group[pos], side="left")
    through = np.searchsorted(group[~pos], group[pos], side="right")
    pos_w = Wc[order[pos]]
    twice = np.einsum("ij,ij->j", cum[below] + cum[through], pos_w)
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = twice / 2 / (pos_w.sum(axis=0) * cum[-1])
    return out
