"""A lab's own pipeline, as a user writes it for `kit run --pipeline`: 300 rows of scikit-learn's
breast-cancer set, two named seeds, and one deliberately unseeded stage (``jitter``)."""

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import load_breast_cancer
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

SEEDS = ("split", "init")
KINDS = {"emb": "embedding", "clusters": "labels", "p_lr": "probabilities", "y_test": "truth"}
N = 300


def run(seeds, dtype="float64"):
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X[:N]).astype(dtype)
    y = y[:N]
    # init reaches the embedding and everything after it; split only the held-out rows
    emb = PCA(5, svd_solver="randomized", random_state=seeds["init"]).fit_transform(X)
    clusters = KMeans(3, n_init=1, random_state=seeds["init"]).fit_predict(emb)
    order = np.random.default_rng(seeds["split"]).permutation(N)
    train, test = order[:200], order[200:]
    lr = LogisticRegression(max_iter=500).fit(emb[train], y[train])
    # the loose generator: an unseeded default_rng(), as a user's augmentation might draw
    jitter = emb[:, 0] + np.random.default_rng().normal(scale=1e-9, size=N)
    return {"emb": emb, "clusters": clusters.astype(np.int64), "y_test": y[test],
            "p_lr": lr.predict_proba(emb[test])[:, 1], "jitter": jitter}
