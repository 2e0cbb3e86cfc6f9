"""A dataset's runs under homology: each model's leakage split and both bootstraps' verdicts."""

from __future__ import annotations

import numpy as np

from ..core.errors import KitError
from ..runs.store import Store
from ..worker.pipeline import MODELS
from .cluster_bootstrap import run_cluster_verdicts
from .compare import has_arrays
from .leakage import run_leakage
from .records import HomologyModel, HomologySummary, HomologyVerdict
from .verdicts import KEYS, has_verdicts


def _median(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(np.median(xs)) if xs else None


def _range(xs: list) -> list | None:
    xs = [x for x in xs if x is not None]
    return [float(min(xs)), float(max(xs))] if xs else None


def _runs(store: Store, dataset: str, n_test: int) -> tuple[list, list]:
    """(the runs measured, [run id and why left out]): runs with verdicts whose arrays are here
    and whose test set is the clustering's."""
    runs, left = [], []
    for r in store.runs(dataset):
        if not has_verdicts(r.spec):
            continue
        if not has_arrays(store, r.id):
            left.append(f"{r.id[:12]}: imported without its arrays")
        elif r.stages["y_test"].shape[0] != n_test:
            left.append(f"{r.id[:12]}: {r.stages['y_test'].shape[0]} test proteins, "
                        f"the clustering {n_test}")
        else:
            runs.append(r.id)
    return runs, left


def _model(per_run: list) -> HomologyModel:
    fields = {"acc_with_homolog": "acc_with", "acc_without_homolog": "acc_without",
              "auc_with_homolog": "auc_with", "auc_without_homolog": "auc_without"}
    out = {}
    for name, attr in fields.items():
        xs = [getattr(x, attr) for x in per_run]
        out[name], out[name + "_range"] = _median(xs), _range(xs)
    return HomologyModel(**out)


def _verdict(key: str, rows: list) -> HomologyVerdict:
    ratios = [r.width_ratio for r in rows]
    return HomologyVerdict(
        verdict=key, width_ratio=_median(ratios), width_ratio_range=_range(ratios),
        changed=sum(r.changed for r in rows), runs=len(rows),
        diff=_median([r.diff for r in rows]),
        protein={"lo": _median([r.protein_lo for r in rows]),
                 "hi": _median([r.protein_hi for r in rows])},
        cluster={"lo": _median([r.cluster_lo for r in rows]),
                 "hi": _median([r.cluster_hi for r in rows])})


def _resplit(labels: np.ndarray, test: np.ndarray) -> tuple | None:
    """A re-split run's (seed:split) own test clusters and train-homolog mask, from the
    clustering's labels in the dataset's stored order and the run's test positions in it;
    None when the positions are not distinct proteins of this dataset (an imported run's
    array is never trusted to index)."""
    test = np.asarray(test)
    if (test.ndim != 1 or test.dtype.kind not in "iu" or not len(test)
            or test.min() < 0 or test.max() >= len(labels) or len(np.unique(test)) != len(test)):
        return None
    train = np.ones(len(labels), bool)
    train[test] = False
    clusters = labels[test]
    return clusters, np.isin(clusters, labels[train])


def homology_summary(store: Store, dataset: str, test_clusters, test_with_train_homolog,
                     clustering: dict | None = None, labels=None) -> HomologySummary:
    """Over ``dataset``'s (its sha256) pipeline and perturbed runs: each model's accuracy and AUC
    with and without a train homolog, and each verdict's two intervals, medians over the runs.

    ``test_clusters`` (a cluster per test protein) and ``test_with_train_homolog`` (a bool per
    test protein) are in the runs' y_test order, as the dataset's clustering gives them.
    """
    with_homolog = np.asarray(test_with_train_homolog, bool)
    runs, left = _runs(store, dataset, len(np.asarray(test_clusters)))
    # a re-split run (seed:split) has test proteins of its own: its clusters and homologs are
    # read at its own test positions (``labels``: every protein's cluster, stored order)
    specs = store.specs(dataset)
    own = {r: (test_clusters, with_homolog) for r in runs}
    for r in runs:
        if specs[r].split >= 0:
            if labels is None:
                left.append(f"{r[:12]}: a re-split (seed:split) needs the whole clustering")
                continue
            try:
                test = store.array(r, "split.test")
            except KitError:  # a run that says it was re-split but holds no positions
                test = np.zeros((0, 0))
            own[r] = _resplit(np.asarray(labels, np.int64), test)
            if own[r] is None or len(own[r][0]) != len(with_homolog):
                left.append(f"{r[:12]}: its re-split's test positions are not this dataset's")
                own[r] = None
    runs = [r for r in runs if own.get(r) is not None and (specs[r].split < 0 or labels is not None)]
    leak = [run_leakage(store, r, own[r][1]) for r in runs]
    per_run = [run_cluster_verdicts(store, r, own[r][0]) for r in runs]
    by_key = {k: [rows[i] for rows in per_run] for i, k in enumerate(KEYS)}
    name = store.datasets().get(dataset, {}).get("name", dataset)
    return HomologySummary(
        dataset=name, runs=len(runs), n_with_homolog=int(with_homolog.sum()),
        n_without_homolog=int((~with_homolog).sum()),
        models={m: _model([x[m] for x in leak]) for m in MODELS},
        verdicts=[_verdict(k, by_key[k]) for k in KEYS],
        too_narrow=_median([v.width_ratio for rows in per_run for v in rows]),
        rest_on_homologs=sum(any(v.changed for v in by_key[k]) for k in KEYS),
        left_out=left, clustering=dict(clustering or {}))


def for_dataset(store: Store, dataset: str, identity: float | None = None,
                coverage: float | None = None) -> HomologySummary | None:
    """The homology summary of ``dataset`` (its sha256) on its stored clustering: the one at
    ``identity``/``coverage`` if given, else the usual parameters', else the first stored;
    None when none is stored (readers never run MMseqs2: `kit data homology` does)."""
    from ..data.homology import stored_clusterings

    found = [c for c in stored_clusterings(dataset)
             if identity is None or c.identity == identity
             if coverage is None or c.coverage == coverage]
    if not found:
        return None
    c = found[0]
    return homology_summary(store, dataset, c.test_clusters, c.test_with_train_homolog,
                            c.summary(), c.labels)


def recommendations(h: HomologySummary | None) -> list:
    """What advice says of homology: how much too narrow the protein bootstrap is here, how
    many verdicts rest on homologs, and how far accuracy leans on test proteins with a train
    homolog (the leakage a homology-disjoint split removes)."""
    if h is None or not h.runs:
        return []
    c = h.clustering
    at = f"MMseqs2 clusters at {c.get('identity', 0):.0%} identity, {c.get('coverage', 0):.0%} coverage"
    narrow = (f"the protein bootstrap on these proteins is {h.too_narrow:.2f}x too narrow "
              "(median cluster/protein interval width)" if h.too_narrow is not None
              else "the interval widths could not be compared")
    gaps = {m: x.acc_with_homolog - x.acc_without_homolog for m, x in h.models.items()
            if x.acc_with_homolog is not None and x.acc_without_homolog is not None}
    lean = ""
    if gaps:
        m = max(gaps, key=lambda k: abs(gaps[k]))
        x = h.models[m]
        lean = (f"; {m} scores {x.acc_with_homolog:.3f} on test proteins with a train homolog "
                f"and {x.acc_without_homolog:.3f} on those without")
    share = c.get("test_with_train_homolog")
    text = (f"Homology ({at}; {share:.0%} of test proteins have a train homolog): " if share is not
            None else f"Homology ({at}): ") + narrow + (
        f"; {h.rest_on_homologs} of the 12 verdicts rest on homologs (they change under the "
        f"cluster bootstrap in some of {h.runs} runs)" if h.rest_on_homologs else
        f"; no verdict changes under the cluster bootstrap in {h.runs} runs") + lean + (
        ". Report cluster-bootstrap intervals, and see how the accuracies move on a "
        "homology-disjoint split (kit data split NAME --homology --name NEW)."
        if h.rest_on_homologs or lean else ".")
    return [{"kind": "homology", "text": text,
             "basis": {"too_narrow": h.too_narrow, "rest_on_homologs": h.rest_on_homologs,
                       "runs": h.runs, "acc_gap": gaps, **{k: c.get(k) for k in (
                           "identity", "coverage", "test_with_train_homolog")}}}]
