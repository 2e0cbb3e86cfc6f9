"""A dataset's runs under homology: each model's leakage split and both bootstraps' verdicts."""

from __future__ import annotations

import numpy as np

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


def homology_summary(store: Store, dataset: str, test_clusters, test_with_train_homolog
                     ) -> HomologySummary:
    """Over ``dataset``'s (its sha256) pipeline and perturbed runs: each model's accuracy and AUC
    with and without a train homolog, and each verdict's two intervals, medians over the runs.

    ``test_clusters`` (a cluster per test protein) and ``test_with_train_homolog`` (a bool per
    test protein) are in the runs' y_test order, as the dataset's clustering gives them.
    """
    with_homolog = np.asarray(test_with_train_homolog, bool)
    runs, left = _runs(store, dataset, len(np.asarray(test_clusters)))
    leak = [run_leakage(store, r, with_homolog) for r in runs]
    per_run = [run_cluster_verdicts(store, r, test_clusters) for r in runs]
    by_key = {k: [rows[i] for rows in per_run] for i, k in enumerate(KEYS)}
    name = store.datasets().get(dataset, {}).get("name", dataset)
    return HomologySummary(
        dataset=name, runs=len(runs), n_with_homolog=int(with_homolog.sum()),
        n_without_homolog=int((~with_homolog).sum()),
        models={m: _model([x[m] for x in leak]) for m in MODELS},
        verdicts=[_verdict(k, by_key[k]) for k in KEYS],
        too_narrow=_median([v.width_ratio for rows in per_run for v in rows]),
        rest_on_homologs=sum(any(v.changed for v in by_key[k]) for k in KEYS),
        left_out=left)
