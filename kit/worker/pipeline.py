"""The paper's pipeline, stage by stage: 3-mers, TF-IDF, SVD, k-means, neighbours, classifiers."""

from __future__ import annotations

import time
import warnings

import numpy as np

from .neighbours import N_NEIGHBOURS, nearest_neighbours  # noqa: F401 - part of the pipeline's API

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
K = 3
N_COMPONENTS = 64
N_CLUSTERS = 30
N_INIT = 10
MODELS = ("lr", "mlp", "hgb", "rf")
# The seeds a run names separately (random-seeds lesson): one per random draw that matters.
SEED_NAMES = ("svd", "kmeans", "mlp", "hgb", "rf")
# Each output's kind, as a lab's pipeline file declares its KINDS (docs/pipelines.md): kit's own
# pipeline is the built-in case of that contract, and one engine reads both.
KINDS = {
    "svd_rand": "embedding",
    "svd_arpack": "embedding",
    "kmeans": "labels",
    "knn": "neighbours",
    "y_test": "truth",
    **{m: "probabilities" for m in MODELS + ("torch_mlp",)},
}

_LUT = np.full(256, -1, dtype=np.int64)
for _i, _c in enumerate(AMINO_ACIDS):
    _LUT[ord(_c)] = _i


def _csr(*args, **kwargs):
    """scipy's CSR matrix, scipy imported when first needed: every kit command reads this
    module's names (MODELS, FEEDS, SEED_NAMES), and importing scipy (with numpy's f2py, which
    it pulls in) was a third of `kit tui`'s start. A run imports it before any stage is timed
    (preload: scikit-learn imports it)."""
    import scipy.sparse

    return scipy.sparse.csr_matrix(*args, **kwargs)


def kmer_counts(seqs, k=K):
    """Sparse (n, 20**k) float64 matrix of exact k-mer counts, built as the paper builds it.

    The codes are computed for all sequences at once, and the matrix is assembled directly in
    the form the paper's per-row loop gives through COO->CSR: rows in order, columns sorted
    within a row, float64 counts; dtype, index order and bits match.
    """
    n = len(seqs)
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=n)
    if np.any(lengths < k):
        raise ValueError(f"every sequence needs at least {k} residues")
    x = _LUT[np.frombuffer("".join(seqs).encode("ascii"), dtype=np.uint8)]
    if np.any(x < 0):
        raise ValueError("sequences may hold only the 20 standard amino acids")
    # the k-mer starting at every position of the concatenation, then without the k-1 last
    # positions of each sequence (those k-mers would span two sequences)
    m = len(x) - k + 1
    code = np.zeros(m, dtype=np.int64)
    for j in range(k):
        code = code * 20 + x[j : j + m]
    keep = np.ones(len(x), dtype=bool)
    ends = np.cumsum(lengths)
    for j in range(1, k):
        keep[ends - j] = False
    code = code[keep[:m]]
    width = 20**k
    # one sortable key per k-mer: row, then code; 32 bits sort about twice as fast as 64
    key_type = np.int32 if n * width < 2**31 else np.int64
    key = np.repeat(np.arange(n, dtype=key_type), lengths - k + 1) * key_type(width) + code.astype(
        key_type
    )
    key.sort(kind="stable")
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    counts = np.diff(np.append(first, len(key))).astype(np.float64)
    uniq = key[first]
    indptr = np.concatenate(([0], np.cumsum(np.bincount(uniq // width, minlength=n))))
    return _csr((counts, uniq % width, indptr), shape=(n, width))


def tfidf(counts, dtype):
    from sklearn.feature_extraction.text import TfidfTransformer

    return TfidfTransformer().fit_transform(counts).astype(dtype)


def truncated_svd(X, algorithm, seed, n_iter=5):
    from sklearn.decomposition import TruncatedSVD

    svd = TruncatedSVD(N_COMPONENTS, algorithm=algorithm, n_iter=n_iter, random_state=seed)
    emb = svd.fit_transform(X)
    return emb, np.asarray(svd.singular_values_)


def kmeans(E, seed):
    from sklearn.cluster import KMeans

    km = KMeans(N_CLUSTERS, n_init=N_INIT, random_state=seed).fit(E)
    return km.labels_, np.array([km.inertia_], dtype=np.float64)


def classifiers(seeds, jobs=1):
    """The paper's four classifiers; the forest trains its trees on ``jobs`` threads."""
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    return {
        "lr": LogisticRegression(max_iter=1000),
        "mlp": MLPClassifier(hidden_layer_sizes=(64,), max_iter=60, random_state=seeds["mlp"]),
        "hgb": HistGradientBoostingClassifier(random_state=seeds["hgb"], max_iter=100),
        "rf": RandomForestClassifier(n_estimators=200, random_state=seeds["rf"], n_jobs=jobs),
    }


def preload():
    """Import every library the stages use, so that each stage's time is its work alone."""
    import sklearn.cluster  # noqa: F401
    import sklearn.decomposition  # noqa: F401
    import sklearn.ensemble  # noqa: F401
    import sklearn.feature_extraction.text  # noqa: F401
    import sklearn.linear_model  # noqa: F401
    import sklearn.neural_network  # noqa: F401


def _timer(timings):
    """A wrapper that runs a stage and records its (wall, CPU) seconds under its name."""

    def timed(name, fn, *args):
        w, c = time.perf_counter(), time.process_time()
        result = fn(*args)
        timings[name] = (time.perf_counter() - w, time.process_time() - c)
        return result

    return timed


def run_pipeline(
    seqs, labels, n_train, dtype="float64", svd_iters=5, seeds=None, embedding="randomized", jobs=1
):
    """Run every stage; return ({stage: ndarray}, {stage: (wall_s, cpu_s)}).

    Both SVDs always run; ``embedding`` says which one k-means, the neighbours and the
    classifiers use: the paper's randomized one, or the converged ARPACK one (its remedy).
    ``jobs`` is the run's thread count: the cores it holds (see ``classify``).
    """
    seeds = dict.fromkeys(SEED_NAMES, 0) if seeds is None else dict(seeds)
    y = np.asarray(labels, dtype=np.int64)
    out, timings = {}, {}

    timed = _timer(timings)
    C = timed("kmer", kmer_counts, seqs)
    out.update({"kmer.data": C.data, "kmer.indices": C.indices, "kmer.indptr": C.indptr})
    X = timed("tfidf", tfidf, C, np.dtype(dtype))
    out.update({"tfidf.data": X.data, "tfidf.indices": X.indices, "tfidf.indptr": X.indptr})
    E, sv = timed("svd_rand", truncated_svd, X, "randomized", seeds["svd"], svd_iters)
    out.update({"svd_rand": E, "svd_rand.sv": sv})
    Ea, sva = timed("svd_arpack", truncated_svd, X, "arpack", seeds["svd"])
    out.update({"svd_arpack": Ea, "svd_arpack.sv": sva})
    if embedding not in ("randomized", "arpack"):
        raise ValueError(f"unknown embedding {embedding!r}")
    D = Ea if embedding == "arpack" else E
    _models(D, y, n_train, seeds, out, timed, jobs)
    return out, timings


def _models(D, y, n_train, seeds, out, timed, jobs):
    """k-means, the neighbours and the four classifiers, all on the embedding ``D``."""
    lab, inertia = timed("kmeans", kmeans, D, seeds["kmeans"])
    out.update({"kmeans": lab, "kmeans.inertia": inertia})
    out["knn"] = timed("knn", nearest_neighbours, D)
    classify(D, y, n_train, seeds, out, timed, jobs)


# A cross-fed ("feed") run reruns the stages from one on, its first stage's inputs taken from
# another run's stored arrays: {first stage rerun: the stored arrays it starts from}
# ("models" starts from the embedding the spec's models use: svd_rand or svd_arpack).
FEEDS = {
    "tfidf": ("kmer.data", "kmer.indices", "kmer.indptr"),
    "svd": ("tfidf.data", "tfidf.indices", "tfidf.indptr"),
    "models": ("embedding",),
}
# every stored array of a pipeline run, in pipeline order
STAGE_ARRAYS = (
    "kmer.data",
    "kmer.indices",
    "kmer.indptr",
    "tfidf.data",
    "tfidf.indices",
    "tfidf.indptr",
    "svd_rand",
    "svd_rand.sv",
    "svd_arpack",
    "svd_arpack.sv",
    "kmeans",
    "kmeans.inertia",
    "knn",
    *MODELS,
    "y_test",
)
_FIRST_WRITTEN = {"tfidf": "tfidf.data", "svd": "svd_rand", "models": "kmeans"}


def fed_stages(feed):
    """The arrays a feed run from ``feed`` on writes: every stage from there to the end."""
    return STAGE_ARRAYS[STAGE_ARRAYS.index(_FIRST_WRITTEN[feed]) :]


def run_fed(
    inputs,
    labels,
    n_train,
    feed,
    dtype="float64",
    svd_iters=5,
    seeds=None,
    embedding="randomized",
    jobs=1,
):
    """Run the stages from ``feed`` on, exactly as run_pipeline runs them, on ``inputs``
    ({stored array name: ndarray}, FEEDS[feed]) instead of the arrays the earlier stages would
    make; returns ({stage: ndarray}, {stage: (wall_s, cpu_s)}). Fed a run's own arrays, it
    reproduces that run's later stages bit for bit."""
    if feed not in FEEDS:
        raise ValueError(f"unknown feed {feed!r}")
    seeds = dict.fromkeys(SEED_NAMES, 0) if seeds is None else dict(seeds)
    y = np.asarray(labels, dtype=np.int64)
    n = len(y)
    out, timings = {}, {}
    timed = _timer(timings)
    if feed == "models":
        _models(inputs["embedding"], y, n_train, seeds, out, timed, jobs)
        return out, timings
    if feed == "tfidf":
        C = _csr(
            (inputs["kmer.data"], inputs["kmer.indices"], inputs["kmer.indptr"]), shape=(n, 20**K)
        )
        X = timed("tfidf", tfidf, C, np.dtype(dtype))
        out.update({"tfidf.data": X.data, "tfidf.indices": X.indices, "tfidf.indptr": X.indptr})
    else:
        X = _csr(
            (inputs["tfidf.data"], inputs["tfidf.indices"], inputs["tfidf.indptr"]),
            shape=(n, 20**K),
        )
    E, sv = timed("svd_rand", truncated_svd, X, "randomized", seeds["svd"], svd_iters)
    out.update({"svd_rand": E, "svd_rand.sv": sv})
    Ea, sva = timed("svd_arpack", truncated_svd, X, "arpack", seeds["svd"])
    out.update({"svd_arpack": Ea, "svd_arpack.sv": sva})
    _models(Ea if embedding == "arpack" else E, y, n_train, seeds, out, timed, jobs)
    return out, timings


def classify(E, y, n_train, seeds, out, timed, jobs=1):
    """Train the four classifiers on E[:n_train]; test probabilities (and labels) into ``out``.

    A run of ``jobs`` threads holds that many cores, so the forest trains its trees on all of
    them: each tree's seed is drawn before any is trained and the trees are kept in order, so
    the forest is the paper's (n_jobs=None) bit for bit, whatever ``jobs`` is. It predicts on
    one thread, as the paper does: summing the trees' votes as threads finish would change the
    last bits.
    """
    tr, te = slice(0, n_train), slice(n_train, None)
    with warnings.catch_warnings():
        # 60 Adam epochs do not converge; that is the paper's setting, not a fault.
        warnings.simplefilter("ignore")
        for name, model in classifiers(seeds, jobs).items():
            out[name] = timed(name, _fit_predict, model, E[tr], y[tr], E[te])
    out["y_test"] = y[te]


def _fit_predict(model, X, y, X_test):
    model.fit(X, y)
    if model.get_params().get("n_jobs") is not None:
        model.set_params(n_jobs=None)  # predict in the trees' order (see classify)
    return model.predict_proba(X_test)[:, 1]


def resplit(seqs, labels, split_seed):
    """The same records re-split (the seed:split factor): a permutation of them, in the
    dataset's stored order, from ``default_rng(split_seed)``; the caller keeps the dataset's
    cut, so train is the first n_train of the permuted records and test the rest. Returns the
    permuted sequences and labels and the permutation (positions in the stored order)."""
    order = np.random.default_rng(int(split_seed)).permutation(len(seqs))
    return [seqs[i] for i in order], [labels[i] for i in order], order


def perturb(E, how):
    """The embedding plus a seeded perturbation: "noise:EPS:DRAW" adds Gaussian noise whose
    relative Frobenius size is about EPS; "float32" rounds to float32 and back."""
    E = np.asarray(E)
    if how == "float32":
        return E.astype(np.float32).astype(E.dtype)
    kind, eps, draw = how.split(":")
    eps = float(eps)
    if kind != "noise":
        raise ValueError(f"unknown perturbation {how!r}")
    if eps == 0:
        return E.copy()  # exactly the base embedding: the sweep's own null experiment
    z = np.random.default_rng(int(draw)).standard_normal(E.shape)
    rms = np.sqrt(np.mean(np.square(E, dtype=np.float64)))
    return (E + eps * rms * z).astype(E.dtype)


def run_perturbed(E, labels, n_train, seeds, how, jobs=1):
    """Retrain every classifier, seeds unchanged, on a perturbed copy of a run's embedding."""
    seeds = dict(seeds)
    y = np.asarray(labels, dtype=np.int64)
    out, timings = {}, {}

    timed = _timer(timings)
    out["svd_rand"] = Ep = timed("perturb", perturb, E, how)
    classify(Ep, y, n_train, seeds, out, timed, jobs)
    return out, timings
