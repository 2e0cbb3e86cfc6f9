"""An example pipeline for `kit run --pipeline` (docs/pipelines.md): 400 of scikit-learn's
handwritten digits, "is it 5 or more?", a PCA embedding, k-means clusters, nearest neighbours,
and two classifiers. It imports nothing of kit."""

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import NearestNeighbors

# the named seeds, in this pipeline's own words: kit varies each alone (seed:split, seed:init)
SEEDS = ("split", "init")
# how kit compares each output; an output not named here is an "array"
KINDS = {"emb": "embedding", "clusters": "labels", "nn": "neighbours",
         "p_lr": "probabilities", "p_rf": "probabilities", "y_test": "truth"}
N, N_TRAIN = 400, 300


def run(seeds, dtype="float64"):
    """seeds: {"split": int, "init": int}; dtype: "float64" or "float32" (the precision
    factor). Returns {output: numpy array}, in stage order."""
    X, y = load_digits(return_X_y=True)
    X, y = X[:N].astype(dtype) / 16, (y[:N] >= 5).astype(np.int64)
    # split: which rows are held out; every generator below draws from a named seed
    order = np.random.default_rng(seeds["split"]).permutation(N)
    train, test = order[:N_TRAIN], order[N_TRAIN:]
    # init: the randomized PCA, k-means and the forest
    emb = PCA(10, svd_solver="randomized", random_state=seeds["init"]).fit_transform(X)
    clusters = KMeans(10, n_init=1, random_state=seeds["init"]).fit_predict(emb)
    nn = NearestNeighbors(n_neighbors=5).fit(emb).kneighbors(emb, return_distance=False)
    lr = LogisticRegression(max_iter=1000).fit(emb[train], y[train])
    rf = RandomForestClassifier(50, random_state=seeds["init"]).fit(emb[train], y[train])
    return {"emb": emb, "clusters": clusters.astype(np.int64), "nn": nn.astype(np.int64),
            "y_test": y[test], "p_lr": lr.predict_proba(emb[test])[:, 1],
            "p_rf": rf.predict_proba(emb[test])[:, 1]}
