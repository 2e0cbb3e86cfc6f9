"""A lab's pipeline that declares every output kind kit compares (kit.worker.kinds.OUTPUT_KINDS):
an embedding, labels, neighbours, two models' probabilities and the truth, a plain array, a
metrics vector, predicted classes, k-means centroids, and the protein ids of the test and train
rows; 240 rows of scikit-learn's wine set, two named seeds."""

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import load_wine
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import StandardScaler

SEEDS = ("split", "init")
KINDS = {"emb": "embedding", "clusters": "labels", "nbrs": "neighbours", "p_lr": "probabilities",
         "p_nb": "probabilities", "y_test": "truth", "centres": "centroids", "ids": "proteins",
         "train_ids": "train proteins", "spread": "array", "scores": "metrics",
         "pred": "classes"}


def run(seeds, dtype="float64"):
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X).astype(dtype)
    y = (y == 0).astype(np.int64)  # one class against the others: a 0/1 truth
    n = len(y)
    emb = PCA(4, svd_solver="randomized", random_state=seeds["init"]).fit_transform(X)
    km = KMeans(3, n_init=1, random_state=seeds["init"]).fit(emb)
    order = np.random.default_rng(seeds["split"]).permutation(n)
    train, test = order[: 2 * n // 3], order[2 * n // 3:]
    nbrs = NearestNeighbors(n_neighbors=5).fit(emb).kneighbors(emb, return_distance=False)
    ids = np.array([f"W{i:05d}" for i in range(n)])
    lr = LogisticRegression(max_iter=500).fit(emb[train], y[train])
    nb = GaussianNB().fit(emb[train], y[train])
    return {"emb": emb, "clusters": km.labels_.astype(np.int64), "nbrs": nbrs.astype(np.int64),
            "p_lr": lr.predict_proba(emb[test])[:, 1], "p_nb": nb.predict_proba(emb[test])[:, 1],
            "y_test": y[test], "centres": km.cluster_centers_, "ids": ids[test],
            "train_ids": ids[train], "spread": emb.std(axis=0),
            "scores": np.array([km.inertia_, lr.score(emb[test], y[test])]),
            "pred": lr.predict(emb[test]).astype(np.int64)}
