"""How far two runs differ: bits per stage, then magnitudes, then test-set predictions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..core.errors import KitError
from ..runs.store import Store
from ..runs.store.hosts import host_id
from ..runs.store.records import Stage
from ..worker.pipeline import MODELS
from .auc import auc
from .digits import Agreement, agreement
from .records import Comparison, EmbeddingDiff, ModelDiff

VERSION = 6  # bump when a measure changes: cached comparisons are then recomputed
# display stage -> the stored arrays it consists of
STAGES = {
    "kmer": ("kmer.data", "kmer.indices", "kmer.indptr"),
    "tfidf": ("tfidf.data", "tfidf.indices", "tfidf.indptr"),
    "svd_rand": ("svd_rand", "svd_rand.sv"),
    "svd_arpack": ("svd_arpack", "svd_arpack.sv"),
    "kmeans": ("kmeans",),
    "kmeans.inertia": ("kmeans.inertia",),
    "knn": ("knn",),
    **{m: (m,) for m in MODELS},
    "torch_mlp": ("torch_mlp",),
}
ALL_MODELS = MODELS + ("torch_mlp",)  # the torch stage's probabilities are compared the same way
# the stages whose numbers are floating point: significant digits are measured on these, in
# pipeline order (the embeddings after sign alignment)
DIGIT_STAGES = ("tfidf", "svd_rand", "svd_arpack", "kmeans.inertia", *ALL_MODELS)
THRESHOLD = 0.5


def positive_class(p: np.ndarray) -> np.ndarray | None:
    """A model's probabilities as one per row of the positive class: a 1-d array as it is, an
    n x 2 predict_proba its column 1 (n x 1: its column); None for n x k classes (k > 2)."""
    if p.ndim == 2 and p.shape[1] in (1, 2):
        return p[:, p.shape[1] - 1]
    return p if p.ndim == 1 else None


def predictions(p: np.ndarray) -> np.ndarray:
    """The class each row predicts: above THRESHOLD for one positive-class probability per row
    (1-d, n x 2), else the column of the largest probability (n x k: a crossing of 0.5 there
    is no change of prediction)."""
    pos = positive_class(p)
    return pos > THRESHOLD if pos is not None else np.argmax(p.reshape(len(p), -1), axis=1)


def column_signs(E: np.ndarray) -> np.ndarray:
    """Sign of each column's largest-magnitude entry: the convention used to align embeddings."""
    return np.sign(E[np.argmax(np.abs(E), axis=0), np.arange(E.shape[1])])


def aligned(
    Ea: np.ndarray, Eb: np.ndarray, signs: tuple[np.ndarray, np.ndarray] | None = None
) -> np.ndarray:
    """``Eb`` with each column's sign turned to match ``Ea``'s (an SVD's sign is arbitrary);
    ``signs``: the column_signs of ``Ea`` and ``Eb`` when the caller has them."""
    sa, sb = signs if signs is not None else (column_signs(Ea), column_signs(Eb))
    out: np.ndarray = Eb * sb * sa
    return out


def embedding_diff(
    Ea: np.ndarray, Eb: np.ndarray, signs: tuple[np.ndarray, np.ndarray] | None = None
) -> dict[str, Any]:
    """The whole embedding's relative difference after sign alignment, the sign flips, and the
    relative difference of each component (column) on its own. ``signs``: the column_signs of
    ``Ea`` and ``Eb`` when the caller has them (a float32 embedding's are the same numbers)."""
    A, B = np.asarray(Ea, np.float64), np.asarray(Eb, np.float64)
    sa, sb = signs if signs is not None else (column_signs(A), column_signs(B))
    Bs = aligned(A, B, (sa, sb))
    norms = np.linalg.norm(A, axis=0)
    per = np.linalg.norm(A - Bs, axis=0) / np.where(norms == 0, 1, norms)
    return {
        "rel_fro": float(np.linalg.norm(A - Bs) / np.linalg.norm(A)),
        "sign_flips": int(np.sum(sa != sb)),
        "components": [float(x) for x in per],
    }


def sv_rel(sa: ArrayLike, sb: ArrayLike) -> list[float]:
    """The relative difference of each singular value."""
    a, b = np.asarray(sa, np.float64), np.asarray(sb, np.float64)
    return [float(x) for x in np.abs(a - b) / np.where(a == 0, 1, np.abs(a))]


def identical_structure(sa: Mapping[str, Stage], sb: Mapping[str, Stage]) -> bool:
    """Two sparse TF-IDF matrices hold their numbers in the same places (so data compare 1:1)."""
    return all(
        x in sa and x in sb and sa[x].sha256 == sb[x].sha256
        for x in ("tfidf.indices", "tfidf.indptr")
    )


def neighbour_jaccard(na: np.ndarray, nb: np.ndarray) -> float:
    """Mean Jaccard index of each protein's neighbour sets."""
    inter = (np.sort(na, axis=1)[:, :, None] == np.sort(nb, axis=1)[:, None, :]).sum(axis=(1, 2))
    k = na.shape[1]
    return float(np.mean(inter / (2 * k - inter)))


def adjusted_rand(la: ArrayLike, lb: ArrayLike) -> float:
    """The adjusted Rand index of two labelings (Hubert and Arabie 1985), from the pair
    confusion counts in whole numbers, as scikit-learn's adjusted_rand_score computes it."""
    _, ia = np.unique(la, return_inverse=True)
    _, ib = np.unique(lb, return_inverse=True)
    ia, ib = ia.ravel().astype(np.int64), ib.ravel().astype(np.int64)
    n = len(ia)
    cells = np.bincount(ia * (int(np.max(ib, initial=0)) + 1) + ib)
    same_both = int(np.sum(cells * cells))  # ordered pairs (self-pairs included) together in both
    same_a, same_b = int(np.sum(np.bincount(ia) ** 2)), int(np.sum(np.bincount(ib) ** 2))
    tp, fp, fn = same_both - n, same_b - same_both, same_a - same_both
    tn = n * n - fp - fn - same_both
    if fn == 0 and fp == 0:  # full agreement, or nothing to compare
        return 1.0
    return 2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))


def model_diff(a: ArrayLike, b: ArrayLike, y: np.ndarray) -> ModelDiff:
    pa, pb = np.asarray(a, np.float64), np.asarray(b, np.float64)
    ca, cb = predictions(pa), predictions(pb)  # as a lab's probabilities outputs are read
    acc_a, acc_b = float(np.mean(ca == y)), float(np.mean(cb == y))
    auc_a, auc_b = auc(pa, y), auc(pb, y)  # NaN when the test set holds one class
    # a model that predicts one class for every protein flips nothing, whatever changes: its
    # zero is not stability, and every table that shows its flips says so
    return ModelDiff(
        flips=int(np.sum(ca != cb)),
        max_dp=float(np.max(np.abs(pa - pb))),
        one_class_a=bool(ca.all() or not ca.any()),
        one_class_b=bool(cb.all() or not cb.any()),
        acc_a=acc_a,
        acc_b=acc_b,
        d_acc=acc_b - acc_a,
        auc_a=auc_a,
        auc_b=auc_b,
        d_auc=auc_b - auc_a,
    )


def env_diff(ma: Mapping[str, Any], mb: Mapping[str, Any]) -> dict[str, list[Any]]:
    """Every measured attribute in which two runs' environments differ: {name: [a, b]}."""

    def flat(m: Mapping[str, Any]) -> dict[str, Any]:
        env = m["env"]
        out = {
            k: env.get(k)
            for k in (
                "python",
                "implementation",
                "machine",
                "rosetta",
                "os",
                "cpu",
                "host",
                "os_release",
                "libc",
            )
        }
        out["image"] = (m.get("image") or {}).get("id")  # None: a venv on the host
        out.update({f"package:{k}": v for k, v in env.get("packages", {}).items()})
        for pool in env.get("threadpools") or []:
            where = f"{pool.get('user_api')}@{pool.get('owner')}"
            for key in (
                "internal_api",
                "version",
                "architecture",
                "num_threads",
                "threading_layer",
            ):
                out[f"{where}:{key}"] = pool.get(key)
        out.update({f"env:{k}": v for k, v in env.get("env", {}).items()})
        for k, v in (m.get("torch_run") or {}).items():  # what the torch stage really used
            if k != "first_batch_loss":
                out[f"torch:{k}"] = v
        return out

    fa, fb = flat(ma), flat(mb)
    return {k: [fa.get(k), fb.get(k)] for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)}


def has_arrays(store: Store, run_id: str) -> bool:
    """Whether a run's arrays are here: a run imported from a hash-only bundle has only its
    stage digests. A run made here always has them (a missing one is damage, which reading it
    reports with its remedy, never a quiet comparison by digests)."""
    return store.run(run_id).spec.host == host_id() or store.has_arrays(run_id)


def first_difference(c: Comparison) -> str | None:
    """The first stage, in pipeline order, at which two runs' bits differ (None: none does)."""
    return next((s for s, same in c.identical.items() if not same), None)


def compare_runs(store: Store, a: str, b: str) -> Comparison:
    """Every measure of the paper for one pair of stored runs (cached in the store).

    When either run's arrays are not here (a hash-only bundle), the pair is compared by its
    recorded stage digests alone: bits per stage, no magnitudes or predictions (and nothing
    cached, so a later import with the arrays measures them)."""
    cached = store.comparison(a, b, VERSION)
    if cached is not None:
        return Comparison.from_cache(cached)
    ra, rb = store.run(a), store.run(b)
    if ra.spec.dataset != rb.spec.dataset:
        raise KitError("runs on different datasets cannot be compared stage by stage")
    identical: dict[str, bool] = {}
    sa, sb = ra.stages, rb.stages
    if ra.spec.split != rb.spec.split:
        # different test proteins (seed:split): no stage, probability or flip corresponds, so
        # none is compared; kit.analysis.splits reads such runs one by one instead
        yst = sa.get("y_test") or sb.get("y_test")
        return Comparison(
            identical={},
            n_test=int(yst.shape[0]) if yst and yst.shape else 0,
            embedding="svd_arpack" if ra.spec.embedding == "arpack" else "svd_rand",
            env_diff=env_diff(ra.manifest, rb.manifest),
            different_test=True,
        )
    for stage, arrays in STAGES.items():
        if arrays[0] not in sa or arrays[0] not in sb:
            continue
        shared = [x for x in arrays if x in sa and x in sb]  # a perturbed run has no .sv
        identical[stage] = all(
            sa[x].sha256 == sb[x].sha256 and sa[x].dtype == sb[x].dtype for x in shared
        )
    used = {r.spec.embedding for r in (ra, rb)}
    if not (has_arrays(store, a) and has_arrays(store, b)):
        yst = sa.get("y_test") or sb.get("y_test")
        return Comparison(
            identical=identical,
            n_test=int(yst.shape[0]) if yst and yst.shape else 0,
            embedding="svd_arpack" if used == {"arpack"} else "svd_rand",
            env_diff=env_diff(ra.manifest, rb.manifest),
            digests_only=True,
        )
    get = store.array
    y = get(a, "y_test")
    # the embedding k-means, neighbours and the classifiers used: its change is "the embedding's"
    measured: dict[str, Any] = {}  # what the runs' kind may lack: an embedding, k-means, knn

    def both(x: str) -> bool:
        return x in sa and x in sb

    digits: dict[str, Agreement | None] = {}
    for svd in ("svd_rand", "svd_arpack"):  # a perturbed run has an embedding and no more
        if both(svd):
            Ea, Eb = get(a, svd), get(b, svd)
            values = sv_rel(get(a, svd + ".sv"), get(b, svd + ".sv")) if both(svd + ".sv") else None
            signs = column_signs(Ea), column_signs(Eb)  # found once, used three times
            measured[svd] = EmbeddingDiff(
                **embedding_diff(Ea, Eb, signs),
                values=values,
                sv_rel_max=max(values) if values else None,
            )
            digits[svd] = agreement(Ea, aligned(Ea, Eb, signs))
    for stage in DIGIT_STAGES:
        if stage in digits:  # the embeddings, done above
            continue
        first = STAGES[stage][0]
        if both(first) and (stage != "tfidf" or identical_structure(sa, sb)):
            digits[stage] = agreement(get(a, first), get(b, first))
    if both("kmeans"):
        measured["kmeans_ari"] = adjusted_rand(get(a, "kmeans"), get(b, "kmeans"))
        ia, ib = get(a, "kmeans.inertia")[0], get(b, "kmeans.inertia")[0]
        measured["kmeans_inertia_rel"] = float(abs(ia - ib) / abs(ia)) if ia else 0.0
    if both("knn"):
        measured["knn_jaccard"] = neighbour_jaccard(get(a, "knn"), get(b, "knn"))
    c = Comparison(
        identical=identical,
        n_test=int(len(y)),
        embedding="svd_arpack" if used == {"arpack"} else "svd_rand",
        digits={k: v for k, v in digits.items() if v is not None},
        models={m: model_diff(get(a, m), get(b, m), y) for m in ALL_MODELS if both(m)},
        env_diff=env_diff(ra.manifest, rb.manifest),
        **measured,
    )
    store.cache_comparison(a, b, VERSION, c.to_json())
    return c
