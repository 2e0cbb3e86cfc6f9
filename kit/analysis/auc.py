"""The area under the ROC curve, exactly, under whole-number case weights (bootstrap counts).

Each positive counts the negative weight strictly below its score plus half of that tied with
it: half the sum of the cumulative negative weight before its tie group and through it. With
whole-number weights every sum is exact, so the order of summation cannot change a bit of the
result, and one sort serves every resample at once.
"""

from __future__ import annotations

import numpy as np


def auc(scores, y) -> float:
    """The AUC of ``scores`` for labels ``y`` (0/1), ties counting one half; NaN for one class."""
    scores = np.asarray(scores, np.float64)
    return float(case_major_auc(scores, y, np.ones((len(scores), 1)))[0])


def weighted_auc(scores, y, W) -> np.ndarray:
    """The AUC under each row of case weights W (resamples, cases)."""
    return case_major_auc(np.asarray(scores, np.float64), y,
                          np.ascontiguousarray(np.asarray(W, dtype=np.float64).T))


def case_major_auc(scores, y, Wc) -> np.ndarray:
    """weighted_auc with the weights case-major, Wc (cases, resamples): a case's weights are
    contiguous, so gathering them in score order is cheap (the bootstrap keeps Wc this way)."""
    order = np.argsort(scores, kind="stable")
    s, pos = scores[order], np.asarray(y)[order].astype(bool)
    group = np.cumsum(np.r_[True, s[1:] != s[:-1]])  # tie group of each case, in score order
    cum = np.zeros((int((~pos).sum()) + 1, Wc.shape[1]))
    np.cumsum(Wc[order[~pos]], axis=0, out=cum[1:])
    below = np.searchsorted(group[~pos], group[pos], side="left")
    through = np.searchsorted(group[~pos], group[pos], side="right")
    pos_w = Wc[order[pos]]
    twice = np.einsum("ij,ij->j", cum[below] + cum[through], pos_w)
    with np.errstate(invalid="ignore", divide="ignore"):
        return twice / 2 / (pos_w.sum(axis=0) * cum[-1])
