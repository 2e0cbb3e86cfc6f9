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


MIN_CLUSTERS = 20  # fewer test clusters than this and a cluster bootstrap measures nothing


def _runs(store: Store, dataset: str, n_test: int) -> tuple[list, list]:
    """(the runs measured, [run id and why left out]): runs with verdicts whose arrays are here
    and whose test set is the clustering's."""
    runs, left = [], []
    for r in store.runs(dataset):
        if not has_verdicts(r.spec) or r.spec.kind == "feed":  # explain's cross-fed runs
            continue
        y = r.stages.get("y_test")
        if not has_arrays(store, r.id):
            left.append(f"{r.id[:12]}: imported without its arrays")
        elif y is None or len(y.shape) != 1:
            left.append(f"{r.id[:12]}: it holds no test labels (y_test)")
        elif y.shape[0] != n_test:
            left.append(f"{r.id[:12]}: {y.shape[0]} test proteins, the clustering {n_test}")
        else:
            runs.append(r.id)
    return runs, left


def _own_split(store: Store, run: str, spec, labels, n_train) -> tuple | None:
    """A re-split run's (seed:split) test clusters and train-homolog mask, or None when its
    stored test positions are not the ones its split seed makes (an imported array is never
    trusted: the permutation is recomputed here, as the worker made it)."""
    if labels is None or n_train is None:
        return None
    labels = np.asarray(labels, np.int64)
    want = np.random.default_rng(spec.split).permutation(len(labels))[n_train:]
    try:
        test = store.array(run, "split.test")
    except KitError:  # a run that says it was re-split but holds no positions
        return None
    if test.shape != want.shape or not np.array_equal(test, want):
        return None
    return _resplit(labels, test)


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
        changed=sum(r.changed for r in rows), lost=sum(r.lost for r in rows), runs=len(rows),
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
                     clustering: dict | None = None, labels=None, n_train: int | None = None,
                     min_clusters: int = MIN_CLUSTERS) -> HomologySummary:
    """Over ``dataset``'s (its sha256) pipeline and perturbed runs: each model's accuracy and AUC
    with and without a train homolog, and each verdict's two intervals, medians over the runs.

    ``test_clusters`` (a cluster per test protein) and ``test_with_train_homolog`` (a bool per
    test protein) are in the runs' y_test order, as the dataset's clustering gives them;
    ``labels`` (every protein's cluster, stored order) and ``n_train`` let a re-split run
    (seed:split) be read at its own test proteins. A run with fewer than MIN_CLUSTERS test
    clusters (``min_clusters``) is left out: resampling a handful of clusters narrows
    intervals instead of widening them.
    """
    with_homolog = np.asarray(test_with_train_homolog, bool)
    runs, left = _runs(store, dataset, len(np.asarray(test_clusters)))
    specs = store.specs(dataset)
    own = {}
    for r in runs:
        own[r] = ((test_clusters, with_homolog) if specs[r].split < 0
                  else _own_split(store, r, specs[r], labels, n_train))
        if own[r] is None:
            left.append(f"{r[:12]}: its re-split's test positions are not the ones its split "
                        "seed makes" if labels is not None else
                        f"{r[:12]}: a re-split (seed:split) needs the whole clustering")
        elif len(np.unique(own[r][0])) < min_clusters:
            left.append(f"{r[:12]}: {len(np.unique(own[r][0]))} test clusters, fewer than "
                        f"{min_clusters}: a cluster bootstrap needs more")
            own[r] = None
    runs = [r for r in runs if own[r] is not None]
    leak = [run_leakage(store, r, own[r][1]) for r in runs]
    per_run = [run_cluster_verdicts(store, r, own[r][0]) for r in runs]
    name = store.datasets().get(dataset, {}).get("name", dataset)
    return summarise(name, [own[r][1] for r in runs], leak, per_run, KEYS, MODELS, left,
                     clustering, with_homolog)


def summarise(name: str, masks: list, leak: list, per_run: list, keys: tuple, models: tuple,
              left: list, clustering: dict | None = None,
              with_homolog=None) -> HomologySummary:
    """The medians over the runs measured: ``masks`` (each run's train-homolog mask per test
    protein), ``leak`` ({model: ModelLeakage} per run; [] with ``models`` () when no run's
    leakage could be measured), ``per_run`` (each run's [ClusterVerdict] in ``keys`` order);
    ``with_homolog``: the counts shown when no run is measured."""
    with_homolog = np.asarray([] if with_homolog is None else with_homolog, bool)
    by_key = {k: [rows[i] for rows in per_run] for i, k in enumerate(keys)}
    n_with = [int(m.sum()) for m in masks]
    n_without = [int((~m).sum()) for m in masks]
    return HomologySummary(
        dataset=name, runs=len(per_run),
        n_with_homolog=int(np.median(n_with)) if masks else int(with_homolog.sum()),
        n_without_homolog=int(np.median(n_without)) if masks else int((~with_homolog).sum()),
        n_with_homolog_range=_range(n_with), n_without_homolog_range=_range(n_without),
        models={m: _model([x[m] for x in leak]) for m in models},
        verdicts=[_verdict(k, by_key[k]) for k in keys],
        too_narrow=_median([v.width_ratio for rows in per_run for v in rows]),
        rest_on_homologs=sum(any(v.lost for v in by_key[k]) for k in keys),
        significant_only_under_clusters=sum(any(v.changed and not v.lost for v in by_key[k])
                                            for k in keys),
        left_out=left, clustering=dict(clustering or {}))


def for_dataset(store: Store, dataset: str, identity: float | None = None,
                coverage: float | None = None) -> HomologySummary | None:
    """The homology summary of ``dataset`` (its sha256) on its stored clustering: the one at
    ``identity``/``coverage`` if given, else the usual parameters', else the first stored;
    None when none is stored (readers never run MMseqs2: `kit data homology` does)."""
    from ..data.homology import stored_clusterings

    ds = store.datasets().get(dataset) or {}
    if not (isinstance(ds.get("rows"), int) and isinstance(ds.get("train"), int)):
        return None  # a dataset the store has no summary of: no runs of it to read either
    found = [c for c in stored_clusterings(dataset, ds["rows"], ds["train"])
             if identity is None or c.identity == identity
             if coverage is None or c.coverage == coverage]
    if not found:
        return None
    c = found[0]
    return homology_summary(store, dataset, c.test_clusters, c.test_with_train_homolog,
                            c.summary(), c.labels, c.n_train)
