"""Lab code that keeps worker pools between calls, as a notebook does: scikit-learn's n_jobs
(joblib's loky executor, reused from call to call) and a multiprocessing pool made by the first
call and kept in the module. Every run must work, warm or fresh, and leave nothing running."""

import multiprocessing

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score

SEEDS = ("init",)
_pool = None


def run(seeds):
    global _pool
    if _pool is None:
        _pool = multiprocessing.get_context("fork").Pool(2)
    X, y = make_classification(200, 10, random_state=seeds["init"])
    scores = cross_val_score(LogisticRegression(), X, y, cv=4, n_jobs=2)
    # what the pool runs is found by name in its processes: a builtin, as a library's would be
    by_pool = _pool.starmap(pow, [(float(v), 2) for v in X[0]])
    return {"cv": scores, "pool": np.array(by_pool)}
