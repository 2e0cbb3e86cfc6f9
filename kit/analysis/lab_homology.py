"""A lab pipeline's runs under homology: its protein ids mapped into a stored dataset's
clustering, every pair of its models under the cluster bootstrap, each model's leakage split."""

from __future__ import annotations

import numpy as np

from ..core.errors import KitError
from ..runs.store import Store
from .cluster_bootstrap import cluster_weights, compare
from .compare import has_arrays
from .homology import MIN_CLUSTERS, summarise
from .lab_verdicts import Unfit, models_and_truth, scores
from .leakage import leakage
from .verdicts import bootstrap

MAKE = ("`kit data import FILE --name NAME` (a TSV or FASTA of its proteins, by accession), then "
        "`kit data homology NAME`, make one")


def protein_outputs(info: dict) -> tuple:
    """(the pipeline's "proteins" output, its "train proteins" output), None where undeclared."""
    kinds = info.get("kinds", {})
    return tuple(next((k for k, v in kinds.items() if v == kind), None)
                 for kind in ("proteins", "train proteins"))


def _runs(store: Store, sha: str) -> list:
    return [r.id for r in store.runs(sha) if r.spec.pipeline == sha]


def _ids(store: Store, run: str, output: str) -> list:
    """A run's protein ids as str (a fixed-width bytes output, 'S', read as UTF-8), or Unfit:
    an imported or forged run may hold anything under the name (2-d, 0-d, numbers, bad bytes)."""
    a = store.array(run, output)
    if a.ndim != 1 or a.dtype.kind not in "US":
        raise Unfit(f"its {output} is {a.ndim}-d {a.dtype}, not a 1-d string array of ids")
    try:
        return (np.char.decode(a, "utf-8", "strict") if a.dtype.kind == "S" else a).tolist()
    except UnicodeDecodeError:
        raise Unfit(f"its {output} holds bytes that are not UTF-8") from None


def read_ids(store: Store, info: dict) -> dict:
    """{run: {output: its ids as str, or the Unfit saying why not}} of the pipeline's stored runs
    with arrays, for each protein output a run holds: read once (each read verifies the array's
    hash), to choose the dataset and then to place each run in it (lab_homology's ``read``)."""
    out: dict = {}
    for r in _runs(store, info["sha256"]):
        stages = store.run(r).stages
        held = [k for k in protein_outputs(info) if k and k in stages]
        if held and has_arrays(store, r):
            out[r] = {}
            for k in held:
                try:
                    out[r][k] = _ids(store, r, k)
                except Unfit as e:  # lab_homology leaves the run out, saying why
                    out[r][k] = e
    return out


def find_clustering(store: Store, info: dict, data: str | None = None,
                    identity: float | None = None, coverage: float | None = None) -> tuple:
    """(dataset, its clustering, one line saying which and why, the runs' ids as read_ids read
    them or None): ``data``'s, else among the stored datasets with a clustering (at
    ``identity``/``coverage`` if given) that hold every protein id of the pipeline's runs, the
    smallest (the tightest fit: most likely the lab's own import of these proteins), ties by
    name. KitError, one line, when there is none."""
    from ..data.dataset import load_dataset, stored_datasets
    from ..data.homology import stored_clusterings

    at = "".join(f" --{k} {v:g}" for k, v in (("identity", identity), ("coverage", coverage))
                 if v is not None)

    def clusterings(ds):
        return [c for c in stored_clusterings(ds.sha256, ds.n, ds.n_train)
                if identity is None or c.identity == identity
                if coverage is None or c.coverage == coverage]

    if not _runs(store, info["sha256"]):
        raise KitError(f"no runs of pipeline {info['name']} stored: kit run --pipeline FILE.py "
                       f"first")
    if data:
        ds = load_dataset(data, generate=False)
        found = clusterings(ds)
        if not found:
            raise KitError(f"no homology clustering of dataset {data}{' at' + at if at else ''} "
                           f"yet: `kit data homology {data}{at}` computes it (MMseqs2)")
        return ds, found[0], f"dataset {ds.name} (--data)", None
    read = read_ids(store, info)
    ids = {x for got in read.values() for v in got.values() if not isinstance(v, Unfit)
           for x in v}
    fits, near = [], []
    for name in stored_datasets():
        try:
            ds = load_dataset(name, generate=False)
        except KitError:  # an unreadable file: `kit data` says so; here it holds nothing
            continue
        found = clusterings(ds)
        if found:
            missing = ids - set(ds.ids)
            (near if missing else fits).append((len(missing), ds.n, ds.name, ds, found[0], missing))
    if not fits:
        if not near:
            raise KitError(f"no stored dataset has a homology clustering{' at' + at if at else ''}"
                           f": {MAKE}")
        k, _, name, _, _, missing = min(near, key=lambda x: x[:3])
        raise KitError(f"no stored dataset with a homology clustering holds every protein id of "
                       f"pipeline {info['name']}'s runs ({len(ids):,}); closest: {name} lacks "
                       f"{k:,} (e.g. {sorted(missing)[0]!r}): import them, or --data {name} to "
                       f"read the runs it holds")
    _, _, name, ds, c, _ = min(fits, key=lambda x: x[1:3])
    others = sorted(x[2] for x in fits if x[2] != name)
    return ds, c, (f"dataset {name}, the smallest clustered dataset holding every protein id of "
                   f"the runs" + (f" (also: {', '.join(others)}; choose with --data)"
                                  if others else "")), read


def _positions(store: Store, run: str, output: str, index: dict, ds_name: str,
               read: dict) -> np.ndarray:
    if output not in store.run(run).stages:
        raise Unfit(f"it holds no {output!r} output")
    ids = read.get(run, {}).get(output)
    ids = _ids(store, run, output) if ids is None else ids
    if isinstance(ids, Unfit):
        raise ids
    at = [index.get(x, -1) for x in ids]
    missing = [x for x, i in zip(ids, at) if i == -1]
    if missing:
        raise Unfit(f"{len(missing):,} of the {len(ids):,} ids of its {output} are not in "
                    f"dataset {ds_name} (first {missing[0]!r})")
    twice = [x for x, i in zip(ids, at) if i == -2]
    if twice:
        raise Unfit(f"{len(twice):,} ids of its {output} are in dataset {ds_name} more than "
                    f"once, in different clusters (first {twice[0]!r}): which is meant is "
                    f"not known")
    return np.asarray(at, np.int64)


def _index(ds, labels: np.ndarray) -> dict:
    """{accession: its position in the dataset}; -2 for one the dataset holds twice in two
    clusters (an import keeps repeated accessions: its cluster is then not one)."""
    index: dict = {}
    for i, a in enumerate(ds.ids):
        j = index.setdefault(a, i)
        if j >= 0 and labels[j] != labels[i]:
            index[a] = -2
    return index


def _one(store, run, info, ds, labels, index, min_clusters, read) -> tuple:
    """(probabilities, truth, test clusters, train-homolog mask or None, why it is None with
    train proteins declared) of one run, or Unfit."""
    prot, train = protein_outputs(info)
    if not has_arrays(store, run):
        raise Unfit("imported without its arrays")
    probs, y = scores(store, run, *models_and_truth(info))
    test = _positions(store, run, prot, index, ds.name, read)
    if len(test) != len(y):
        raise Unfit(f"{prot} holds {len(test):,} ids, the truth {len(y):,} rows")
    clusters = labels[test]
    k = len(np.unique(clusters))
    if k < min_clusters:
        raise Unfit(f"{k} test clusters, fewer than {min_clusters}: a cluster bootstrap needs more")
    mask, why = None, ""
    if train is not None:
        try:  # train ids the dataset lacks cost the leakage split, not the run's verdicts
            mask = np.isin(clusters, labels[_positions(store, run, train, index, ds.name, read)])
        except Unfit as e:
            why = str(e)
    return probs, y, clusters, mask, why


def lab_homology(store: Store, info: dict, ds, c, chosen: str = "", read: dict | None = None,
                 min_clusters: int = MIN_CLUSTERS) -> dict:
    """Pipeline ``info``'s runs on dataset ``ds``'s clustering ``c`` (kit.data.homology): each
    run's verdicts of every pair of its probabilities outputs under the protein and the cluster
    bootstrap, and with a "train proteins" output each model's leakage split; medians over the
    runs in kit's HomologySummary (``summary``); ``leakage``: why it is not measured, or "".
    ``read``: the runs' ids as find_clustering read them (None: read here)."""
    prot, train = protein_outputs(info)
    models, truth = models_and_truth(info)
    if prot is None:
        raise KitError(f"{info['name']} declares no \"proteins\" output: KINDS names the output "
                       f"of test protein ids (accessions), one per truth row, as \"proteins\"")
    if truth is None or not models:
        raise KitError(f"{info['name']} declares no {'truth' if truth is None else 'probabilities'}"
                       f" output: homology reads the verdicts of its probabilities outputs")
    labels = np.asarray(c.labels, np.int64)
    index = _index(ds, labels)
    masks, leak, per_run, left, keys, seen, unsplit = [], [], [], [], (), set(), []
    runs = _runs(store, info["sha256"])
    for run in runs:
        # a repeat's runs are one measurement: counted once, the medians not weighted by them
        stages = store.run(run).stages
        same = tuple(stages[k].sha256 if k in stages else None
                     for k in (*models, truth, prot, train) if k)
        if same in seen:
            continue
        try:
            probs, y, clusters, mask, no_mask = _one(store, run, info, ds, labels, index,
                                                     min_clusters, read or {})
        except Unfit as e:
            left.append(f"{run[:12]}: {e}")
            continue
        seen.add(same)  # only once read: an unreadable twin must not hide a readable one
        rows = []
        if len(models) > 1:
            protein = bootstrap(probs, y, models=models)
            keys = tuple(k for k in protein if k != "_scores")  # a model may be named "_lr"
            rows = compare(protein, bootstrap(probs, y, weights=cluster_weights(clusters),
                                              models=models), keys)
        per_run.append(rows)
        if no_mask:
            unsplit.append(f"{run[:12]}: {no_mask}")
        if mask is not None:
            masks.append(mask)
            leak.append(leakage(probs, y, mask, models))
    frac = [float(m.mean()) for m in masks]
    clustering = {**c.summary(), "dataset_name": ds.name, "proteins": ds.n,
                  # the dataset's own cut is not the pipeline's split: the runs' medians
                  "test_with_train_homolog": float(np.median(frac)) if frac else None,
                  "test_with_train_homolog_count":
                      int(np.median([m.sum() for m in masks])) if masks else None}
    h = summarise(ds.name, masks, leak, per_run, keys, models if masks else (), left, clustering)
    why = "" if train else (f"{info['name']} declares no \"train proteins\" output, so accuracy "
                            f"with and without a train homolog is not measured (return the "
                            f"train rows' ids as one); the cluster bootstrap needs the test "
                            f"proteins alone")
    if train and unsplit and not masks:
        why = (f"accuracy with and without a train homolog is not measured: no run's "
               f"{train} could be placed in dataset {ds.name} (run {unsplit[0]})")
    return {"pipeline": info["sha256"], "name": info["name"], "dataset": ds.name,
            "chosen": chosen, "proteins": prot, "train_proteins": train, "models": list(models),
            "leakage": why, "runs_stored": len(runs), "summary": h}
