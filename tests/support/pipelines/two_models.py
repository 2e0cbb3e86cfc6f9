"""A lab's pipeline with two models and their truth, for verdicts: 300 rows of scikit-learn's
breast-cancer set, the split and the forest's seed named; every generator seeded."""

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

SEEDS = ("split", "forest")
KINDS = {"y_test": "truth", "p_lr": "probabilities", "p_rf": "probabilities"}
N = 300


def run(seeds):
    X, y = load_breast_cancer(return_X_y=True)
    X, y = StandardScaler().fit_transform(X[:N]), y[:N]
    order = np.random.default_rng(seeds["split"]).permutation(N)
    train, test = order[:200], order[200:]
    lr = LogisticRegression(max_iter=500).fit(X[train], y[train])
    rf = RandomForestClassifier(20, max_depth=3, random_state=seeds["forest"],
                                n_jobs=1).fit(X[train], y[train])
    return {"y_test": y[test], "p_lr": lr.predict_proba(X[test])[:, 1],
            "p_rf": rf.predict_proba(X[test])[:, 1]}
