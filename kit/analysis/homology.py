"""Runs under homology: each model's leakage split and both bootstraps' verdicts, of kit's own
pipeline on a dataset's clustering, or of a lab's pipeline with its protein ids mapped into one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..core.errors import KitError
from ..core.spec import RunSpec
from ..core.subject import Subject
from ..data.dataset import Dataset, load_dataset, stored_datasets
from ..data.homology import Clustering, stored_clusterings
from ..data.homology_edges import stored_hits_of
from ..runs.store import Store
from ..worker.pipeline import MODELS
from .cluster_bootstrap import cluster_weights, run_cluster_verdicts
from .cluster_bootstrap import compare as compare_bootstraps
from .compare import has_arrays
from .leakage import leakage, run_leakage
from .records import ClusterVerdict, HomologyModel, HomologySummary, HomologyVerdict, ModelLeakage
from .verdicts import KEYS, Unfit, bootstrap, has_verdicts, models_and_truth, scores


def _median(xs: Sequence[float | None]) -> float | None:
    got = [x for x in xs if x is not None]
    return float(np.median(got)) if got else None


def _range(xs: Sequence[float | None]) -> list[float] | None:
    got = [x for x in xs if x is not None]
    return [float(min(got)), float(max(got))] if got else None


Split = tuple[np.ndarray, np.ndarray]  # a run's test clusters and train-homolog mask
# {run: {output: its protein ids, or the Unfit saying why not}} (read_ids)
Read = dict[str, dict[str, list[str] | Unfit]]


MIN_CLUSTERS = 20  # fewer test clusters than this and a cluster bootstrap measures nothing


def _runs(store: Store, dataset: str, n_test: int) -> tuple[list[str], list[str]]:
    """(the runs measured, [run id and why left out]): runs with verdicts whose arrays are here
    and whose test set is the clustering's."""
    runs: list[str] = []
    left: list[str] = []
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


def _own_split(
    store: Store, run: str, spec: RunSpec, labels: ArrayLike | None, n_train: int | None
) -> Split | None:
    """A re-split run's (seed:split) test clusters and train-homolog mask, or None when its
    stored test positions are not the ones its split seed makes (an imported array is never
    trusted: the permutation is recomputed here, as the worker made it)."""
    if labels is None or n_train is None:
        return None
    every = np.asarray(labels, np.int64)
    want = np.random.default_rng(spec.split).permutation(len(every))[n_train:]
    try:
        test = store.array(run, "split.test")
    except KitError:  # a run that says it was re-split but holds no positions
        return None
    if test.shape != want.shape or not np.array_equal(test, want):
        return None
    return _resplit(every, test)


def _model(per_run: list[ModelLeakage]) -> HomologyModel:
    aw, ao = [x.acc_with for x in per_run], [x.acc_without for x in per_run]
    uw, uo = [x.auc_with for x in per_run], [x.auc_without for x in per_run]
    return HomologyModel(
        acc_with_homolog=_median(aw),
        acc_without_homolog=_median(ao),
        auc_with_homolog=_median(uw),
        auc_without_homolog=_median(uo),
        acc_with_homolog_range=_range(aw),
        acc_without_homolog_range=_range(ao),
        auc_with_homolog_range=_range(uw),
        auc_without_homolog_range=_range(uo),
    )


def _verdict(key: str, rows: list[ClusterVerdict]) -> HomologyVerdict:
    ratios = [r.width_ratio for r in rows]
    return HomologyVerdict(
        verdict=key,
        width_ratio=_median(ratios),
        width_ratio_range=_range(ratios),
        changed=sum(r.changed for r in rows),
        lost=sum(r.lost for r in rows),
        runs=len(rows),
        diff=_median([r.diff for r in rows]),
        protein={
            "lo": _median([r.protein_lo for r in rows]),
            "hi": _median([r.protein_hi for r in rows]),
        },
        cluster={
            "lo": _median([r.cluster_lo for r in rows]),
            "hi": _median([r.cluster_hi for r in rows]),
        },
    )


def _resplit(labels: np.ndarray, test: np.ndarray) -> Split | None:
    """A re-split run's (seed:split) own test clusters and train-homolog mask, from the
    clustering's labels in the dataset's stored order and the run's test positions in it;
    None when the positions are not distinct proteins of this dataset (an imported run's
    array is never trusted to index)."""
    test = np.asarray(test)
    if (
        test.ndim != 1
        or test.dtype.kind not in "iu"
        or not len(test)
        or test.min() < 0
        or test.max() >= len(labels)
        or len(np.unique(test)) != len(test)
    ):
        return None
    train = np.ones(len(labels), bool)
    train[test] = False
    clusters = labels[test]
    return clusters, np.isin(clusters, labels[train])


def homology_summary(
    store: Store,
    dataset: str,
    test_clusters: ArrayLike,
    test_with_train_homolog: ArrayLike,
    clustering: dict[str, Any] | None = None,
    labels: ArrayLike | None = None,
    n_train: int | None = None,
    min_clusters: int = MIN_CLUSTERS,
) -> HomologySummary:
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
    clusters = np.asarray(test_clusters)
    runs, left = _runs(store, dataset, len(clusters))
    specs = store.specs(dataset)
    own: dict[str, Split] = {}
    for r in runs:
        got = (
            (clusters, with_homolog)
            if specs[r].split < 0
            else _own_split(store, r, specs[r], labels, n_train)
        )
        if got is None:
            left.append(
                f"{r[:12]}: its re-split's test positions are not the ones its split seed makes"
                if labels is not None
                else f"{r[:12]}: a re-split (seed:split) needs the whole clustering"
            )
        elif len(np.unique(got[0])) < min_clusters:
            left.append(
                f"{r[:12]}: {len(np.unique(got[0]))} test clusters, fewer than "
                f"{min_clusters}: a cluster bootstrap needs more"
            )
        else:
            own[r] = got
    runs = [r for r in runs if r in own]
    leak = [run_leakage(store, r, own[r][1]) for r in runs]
    per_run = [run_cluster_verdicts(store, r, own[r][0]) for r in runs]
    name = store.datasets().get(dataset, {}).get("name", dataset)
    return summarise(
        name, [own[r][1] for r in runs], leak, per_run, KEYS, MODELS, left, clustering, with_homolog
    )


def summarise(
    name: str,
    masks: list[np.ndarray],
    leak: list[dict[str, ModelLeakage]],
    per_run: list[list[ClusterVerdict]],
    keys: Sequence[str],
    models: Sequence[str],
    left: list[str],
    clustering: dict[str, Any] | None = None,
    with_homolog: ArrayLike | None = None,
) -> HomologySummary:
    """The medians over the runs measured: ``masks`` (each run's train-homolog mask per test
    protein), ``leak`` ({model: ModelLeakage} per run; [] with ``models`` () when no run's
    leakage could be measured), ``per_run`` (each run's [ClusterVerdict] in ``keys`` order);
    ``with_homolog``: the counts shown when no run is measured."""
    shown = np.asarray([] if with_homolog is None else with_homolog, bool)
    by_key = {k: [rows[i] for rows in per_run] for i, k in enumerate(keys)}
    n_with = [int(m.sum()) for m in masks]
    n_without = [int((~m).sum()) for m in masks]
    return HomologySummary(
        dataset=name,
        runs=len(per_run),
        n_with_homolog=int(np.median(n_with)) if masks else int(shown.sum()),
        n_without_homolog=int(np.median(n_without)) if masks else int((~shown).sum()),
        n_with_homolog_range=_range(n_with),
        n_without_homolog_range=_range(n_without),
        models={m: _model([x[m] for x in leak]) for m in models},
        verdicts=[_verdict(k, by_key[k]) for k in keys],
        too_narrow=_median([v.width_ratio for rows in per_run for v in rows]),
        rest_on_homologs=sum(any(v.lost for v in by_key[k]) for k in keys),
        significant_only_under_clusters=sum(
            any(v.changed and not v.lost for v in by_key[k]) for k in keys
        ),
        left_out=left,
        clustering=dict(clustering or {}),
    )


def for_dataset(
    store: Store, dataset: str, identity: float | None = None, coverage: float | None = None
) -> HomologySummary | None:
    """The homology summary of ``dataset`` (its sha256) on its stored clustering: the one at
    ``identity``/``coverage`` if given, else the usual parameters', else the first stored;
    None when none is stored (readers never run MMseqs2: `kit data homology` does)."""
    ds = store.datasets().get(dataset) or {}
    if not (isinstance(ds.get("rows"), int) and isinstance(ds.get("train"), int)):
        return None  # a dataset the store has no summary of: no runs of it to read either
    found = _clusterings(dataset, ds["rows"], ds["train"], identity, coverage)
    if not found:
        return None
    c = found[0]
    return homology_summary(
        store,
        dataset,
        c.test_clusters,
        c.test_with_train_homolog,
        {**c.summary(), **_search(c, ds["rows"] - ds["train"])},
        c.labels,
        c.n_train,
    )


def _search(c: Clustering, n_test: int) -> dict[str, Any]:
    """The leakage search's figures (`kit data homology` stores it), or {} when never run."""
    found = stored_hits_of(c.dataset, c.n_train, n_test, c.identity, c.coverage)
    if found is None:
        return {}
    mask, tool = found
    return {
        "test_with_train_hit_count": int(mask.sum()),
        "test_with_train_hit": float(mask.mean()) if mask.size else 0.0,
        "search_tool": tool,
    }


def _clusterings(
    sha: str, n: int, n_train: int, identity: float | None, coverage: float | None
) -> list[Clustering]:
    """The stored clusterings of dataset ``sha`` (``n`` proteins, ``n_train`` of them train), only
    those at ``identity``/``coverage`` when given: kit's own dataset's and a pipeline's alike."""
    return [
        c
        for c in stored_clusterings(sha, n, n_train)
        if identity is None or c.identity == identity
        if coverage is None or c.coverage == coverage
    ]


# a lab's pipeline under homology: its runs' protein ids (its "proteins" output) mapped into a
# stored dataset's clustering

MAKE = (
    "`kit data import FILE --name NAME` (a TSV or FASTA of its proteins, by accession), then "
    "`kit data homology NAME`, make one"
)


def protein_outputs(kinds: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(the "proteins" output of ``kinds`` (a subject's declared output kinds), its "train
    proteins" output), None where undeclared."""

    def first(kind: str) -> str | None:
        return next((k for k, v in kinds.items() if v == kind), None)

    return first("proteins"), first("train proteins")


def _pipeline_runs(store: Store, sha: str) -> list[str]:
    return [r.id for r in store.runs(sha) if r.spec.pipeline == sha]


def _ids(store: Store, run: str, output: str) -> list[str]:
    """A run's protein ids as str (a fixed-width bytes output, 'S', read as UTF-8), or Unfit:
    an imported or forged run may hold anything under the name (2-d, 0-d, numbers, bad bytes)."""
    a = store.array(run, output)
    if a.ndim != 1 or a.dtype.kind not in "US":
        raise Unfit(f"its {output} is {a.ndim}-d {a.dtype}, not a 1-d string array of ids")
    try:
        ids: list[str] = (
            np.char.decode(a, "utf-8", "strict") if a.dtype.kind == "S" else a
        ).tolist()
        return ids
    except UnicodeDecodeError:
        raise Unfit(f"its {output} holds bytes that are not UTF-8") from None


def read_ids(store: Store, subject: Subject) -> Read:
    """{run: {output: its ids as str, or the Unfit saying why not}} of the pipeline's stored runs
    with arrays, for each protein output a run holds: read once (each read verifies the array's
    hash), to choose the dataset and then to place each run in it (output_homology's ``read``)."""
    out: Read = {}
    for r in _pipeline_runs(store, subject.sha256):
        stages = store.run(r).stages
        held = [k for k in protein_outputs(subject.kinds) if k and k in stages]
        if held and has_arrays(store, r):
            out[r] = {}
            for k in held:
                try:
                    out[r][k] = _ids(store, r, k)
                except Unfit as e:  # output_homology leaves the run out, saying why
                    out[r][k] = e
    return out


def find_clustering(
    store: Store,
    subject: Subject,
    data: str | None = None,
    identity: float | None = None,
    coverage: float | None = None,
) -> tuple[Dataset, Clustering, str, Read | None]:
    """(dataset, its clustering, one line saying which and why, the runs' ids as read_ids read
    them or None): ``data``'s, else among the stored datasets with a clustering (at
    ``identity``/``coverage`` if given) that hold every protein id of the pipeline's runs, the
    smallest (the tightest fit: most likely the lab's own import of these proteins), ties by
    name. KitError, one line, when there is none."""
    at = "".join(
        f" --{k} {v:g}"
        for k, v in (("identity", identity), ("coverage", coverage))
        if v is not None
    )

    def clusterings(ds: Dataset) -> list[Clustering]:
        return _clusterings(ds.sha256, ds.n, ds.n_train, identity, coverage)

    if not _pipeline_runs(store, subject.sha256):
        raise KitError(
            f"no runs of pipeline {subject.name} stored: kit run --pipeline FILE.py first"
        )
    if data:
        ds = load_dataset(data, generate=False)
        found = clusterings(ds)
        if not found:
            raise KitError(
                f"no homology clustering of dataset {data}{' at' + at if at else ''} "
                f"yet: `kit data homology {data}{at}` computes it (MMseqs2)"
            )
        return ds, found[0], f"dataset {ds.name} (--data)", None
    read = read_ids(store, subject)
    ids = {x for got in read.values() for v in got.values() if not isinstance(v, Unfit) for x in v}
    fits: list[tuple[int, int, str, Dataset, Clustering, set[str]]] = []
    near: list[tuple[int, int, str, Dataset, Clustering, set[str]]] = []
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
            raise KitError(
                f"no stored dataset has a homology clustering{' at' + at if at else ''}: {MAKE}"
            )
        k, _, name, _, _, missing = min(near, key=lambda x: x[:3])
        raise KitError(
            f"no stored dataset with a homology clustering holds every protein id of "
            f"pipeline {subject.name}'s runs ({len(ids):,}); closest: {name} lacks "
            f"{k:,} (e.g. {sorted(missing)[0]!r}): import them, or --data {name} to "
            f"read the runs it holds"
        )
    _, _, name, ds, c, _ = min(fits, key=lambda x: x[1:3])
    others = sorted(x[2] for x in fits if x[2] != name)
    return (
        ds,
        c,
        (
            f"dataset {name}, the smallest clustered dataset holding every protein id of "
            f"the runs" + (f" (also: {', '.join(others)}; choose with --data)" if others else "")
        ),
        read,
    )


def _positions(
    store: Store, run: str, output: str, index: dict[str, int], ds_name: str, read: Read
) -> np.ndarray:
    if output not in store.run(run).stages:
        raise Unfit(f"it holds no {output!r} output")
    got = read.get(run, {}).get(output)
    ids = _ids(store, run, output) if got is None else got
    if isinstance(ids, Unfit):
        raise ids
    at = [index.get(x, -1) for x in ids]
    missing = [x for x, i in zip(ids, at, strict=True) if i == -1]
    if missing:
        raise Unfit(
            f"{len(missing):,} of the {len(ids):,} ids of its {output} are not in "
            f"dataset {ds_name} (first {missing[0]!r})"
        )
    twice = [x for x, i in zip(ids, at, strict=True) if i == -2]
    if twice:
        raise Unfit(
            f"{len(twice):,} ids of its {output} are in dataset {ds_name} more than "
            f"once, in different clusters (first {twice[0]!r}): which is meant is "
            f"not known"
        )
    return np.asarray(at, np.int64)


def _index(ds: Dataset, labels: np.ndarray) -> dict[str, int]:
    """{accession: its position in the dataset}; -2 for one the dataset holds twice in two
    clusters (an import keeps repeated accessions: its cluster is then not one)."""
    index: dict[str, int] = {}
    for i, a in enumerate(ds.ids):
        j = index.setdefault(a, i)
        if j >= 0 and labels[j] != labels[i]:
            index[a] = -2
    return index


def _one(
    store: Store,
    run: str,
    outputs: tuple[tuple[str, ...], str, str, str | None],
    ds: Dataset,
    labels: np.ndarray,
    index: dict[str, int],
    min_clusters: int,
    read: Read,
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray | None, str]:
    """(probabilities, truth, test clusters, train-homolog mask or None, why it is None with
    train proteins declared) of one run, or Unfit. ``outputs``: the subject's (models, truth,
    proteins, train proteins), as output_homology found them declared."""
    models, truth, prot, train = outputs
    if not has_arrays(store, run):
        raise Unfit("imported without its arrays")
    probs, y = scores(store, run, models, truth)
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


def output_homology(
    store: Store,
    subject: Subject,
    ds: Dataset,
    c: Clustering,
    chosen: str = "",
    read: Read | None = None,
    min_clusters: int = MIN_CLUSTERS,
) -> dict[str, Any]:
    """Pipeline ``subject``'s runs on dataset ``ds``'s clustering ``c`` (kit.data.homology): each
    run's verdicts of every pair of its probabilities outputs under the protein and the cluster
    bootstrap, and with a "train proteins" output each model's leakage split; medians over the
    runs in kit's HomologySummary (``summary``); ``leakage``: why it is not measured, or "".
    ``read``: the runs' ids as find_clustering read them (None: read here)."""
    prot, train = protein_outputs(subject.kinds)
    models, truth = models_and_truth(subject.kinds)
    if prot is None:
        raise KitError(
            f'{subject.name} declares no "proteins" output: KINDS names the output '
            f'of test protein ids (accessions), one per truth row, as "proteins"'
        )
    if truth is None or not models:
        raise KitError(
            f"{subject.name} declares no {'truth' if truth is None else 'probabilities'}"
            f" output: homology reads the verdicts of its probabilities outputs"
        )
    labels = np.asarray(c.labels, np.int64)
    index = _index(ds, labels)
    masks: list[np.ndarray] = []
    leak: list[dict[str, ModelLeakage]] = []
    per_run: list[list[ClusterVerdict]] = []
    left: list[str] = []
    keys: tuple[str, ...] = ()
    seen: set[tuple[str | None, ...]] = set()
    unsplit: list[str] = []
    runs = _pipeline_runs(store, subject.sha256)
    for run in runs:
        # a repeat's runs are one measurement: counted once, the medians not weighted by them
        stages = store.run(run).stages
        same = tuple(
            stages[k].sha256 if k in stages else None for k in (*models, truth, prot, train) if k
        )
        if same in seen:
            continue
        try:
            probs, y, clusters, mask, no_mask = _one(
                store,
                run,
                (models, truth, prot, train),
                ds,
                labels,
                index,
                min_clusters,
                read or {},
            )
        except Unfit as e:
            left.append(f"{run[:12]}: {e}")
            continue
        seen.add(same)  # only once read: an unreadable twin must not hide a readable one
        rows: list[ClusterVerdict] = []
        if len(models) > 1:
            protein = bootstrap(probs, y, models=models)
            keys = tuple(k for k in protein if k != "_scores")  # a model may be named "_lr"
            rows = compare_bootstraps(
                protein, bootstrap(probs, y, weights=cluster_weights(clusters), models=models), keys
            )
        per_run.append(rows)
        if no_mask:
            unsplit.append(f"{run[:12]}: {no_mask}")
        if mask is not None:
            masks.append(mask)
            leak.append(leakage(probs, y, mask, models))
    frac = [float(m.mean()) for m in masks]
    clustering = {
        **c.summary(),
        "dataset_name": ds.name,
        "proteins": ds.n,
        # the dataset's own cut is not the pipeline's split: the runs' medians
        "test_with_train_homolog": float(np.median(frac)) if frac else None,
        "test_with_train_homolog_count": int(np.median([m.sum() for m in masks]))
        if masks
        else None,
    }
    h = summarise(ds.name, masks, leak, per_run, keys, models if masks else (), left, clustering)
    why = (
        ""
        if train
        else (
            f'{subject.name} declares no "train proteins" output, so accuracy '
            f"with and without a train homolog is not measured (return the "
            f"train rows' ids as one); the cluster bootstrap needs the test "
            f"proteins alone"
        )
    )
    if train and unsplit and not masks:
        why = (
            f"accuracy with and without a train homolog is not measured: no run's "
            f"{train} could be placed in dataset {ds.name} (run {unsplit[0]})"
        )
    return {
        "pipeline": subject.sha256,
        "name": subject.name,
        "dataset": ds.name,
        "chosen": chosen,
        "proteins": prot,
        "train_proteins": train,
        "models": list(models),
        "leakage": why,
        "runs_stored": len(runs),
        "summary": h,
    }
