"""A lab's pipeline of ten classes: 600 of scikit-learn's handwritten digits, a logistic
regression and a forest, each predict_proba n x 10; the split and the forest's seed named."""

import numpy as np
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

SEEDS = ("split", "forest")
KINDS = {"y_test": "truth", "p_lr": "probabilities", "p_rf": "probabilities"}
N = 600


def run(seeds):
    X, y = load_digits(return_X_y=True)
    X, y = X[:N] / 16.0, y[:N]
    order = np.random.default_rng(seeds["split"]).permutation(N)
    train, test = order[:400], order[400:]
    lr = LogisticRegression(max_iter=300).fit(X[train], y[train])
    rf = RandomForestClassifier(15, max_depth=6, random_state=seeds["forest"],
                                n_jobs=1).fit(X[train], y[train])
    return {"y_test": y[test], "p_lr": lr.predict_proba(X[test]),
            "p_rf": rf.predict_proba(X[test])}
