"""An independent re-implementation of the paper's appendix pipeline, written from its text.

Used only by tests to check that the worker's stages are bit-for-bit what the paper's code
computes: the per-protein k-mer loop and the full n x n similarity matrix are kept on purpose.
"""

import numpy as np
import scipy.sparse as sp

RESIDUES = "ACDEFGHIKLMNPQRSTVWY"


def kmer_matrix(seqs, k=3):
    index = np.full(256, -1, dtype=np.int64)
    index[np.frombuffer(RESIDUES.encode(), dtype=np.uint8)] = np.arange(20)
    rows, cols, vals = [], [], []
    for r, seq in enumerate(seqs):
        x = index[np.frombuffer(seq.encode(), dtype=np.uint8)]
        m = len(x) - k + 1
        code = np.zeros(m, dtype=np.int64)
        for j in range(k):
            code = code * 20 + x[j : j + m]
        uniq, cnt = np.unique(code, return_counts=True)
        rows.append(np.full(len(uniq), r))
        cols.append(uniq)
        vals.append(cnt)
    return sp.csr_matrix(
        (np.concatenate(vals).astype(np.float64), (np.concatenate(rows), np.concatenate(cols))),
        shape=(len(seqs), 20**k),
    )


def reference_run(seqs, y, n_train, seed=0, dtype=np.float64, n_iter=5):
    from sklearn.cluster import KMeans
    from sklearn.decomposition import TruncatedSVD
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    y = np.asarray(y)
    C = kmer_matrix(seqs)
    X = TfidfTransformer().fit_transform(C).astype(dtype)
    E = TruncatedSVD(64, algorithm="randomized", n_iter=n_iter, random_state=seed).fit_transform(X)
    A = TruncatedSVD(64, algorithm="arpack", random_state=seed).fit_transform(X)
    km = KMeans(30, n_init=10, random_state=seed).fit(E)
    En = E / np.linalg.norm(E, axis=1, keepdims=True)
    S = En @ En.T
    np.fill_diagonal(S, -2)
    nn = np.argsort(-S, axis=1, kind="stable")[:, :10]
    models = {
        "lr": LogisticRegression(max_iter=1000),
        "mlp": MLPClassifier(hidden_layer_sizes=(64,), max_iter=60, random_state=seed),
        "hgb": HistGradientBoostingClassifier(random_state=seed, max_iter=100),
        "rf": RandomForestClassifier(n_estimators=200, random_state=seed),
    }
    out = {
        "kmer.data": C.data,
        "kmer.indices": C.indices,
        "kmer.indptr": C.indptr,
        "tfidf.data": X.data,
        "svd_rand": E,
        "svd_arpack": A,
        "kmeans": km.labels_,
        "knn": nn,
    }
    for name, m in models.items():
        out[name] = m.fit(E[:n_train], y[:n_train]).predict_proba(E[n_train:])[:, 1]
    return out
