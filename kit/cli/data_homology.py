"""`kit data homology` and `kit data split --homology`: clusters, leakage, a disjoint split."""

from __future__ import annotations

import sys

from .common import print_json


def run(args) -> int:
    from ..data.homology import check_parameters

    check_parameters(args.identity, args.coverage)  # a bad fraction before any work
    return _homology(args) if args.data_cmd == "homology" else _split(args)


def _spinning(text: str, fn):
    """``fn()`` under a spinner with the elapsed time when stderr is a terminal."""
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    with Progress(SpinnerColumn(), TextColumn(text), TimeElapsedColumn(), console=err,
                  transient=True, disable=not err.is_terminal) as bar:
        bar.add_task(text, total=None)
        return fn()


def _clustering(ds, args):
    """(clustering, reused): the stored one, else computed now under a spinner."""
    from ..data.homology import clustering, stored_clustering

    found = stored_clustering(ds, args.identity, args.coverage)
    if found is not None:
        return found, True
    return _spinning(f"clustering {ds.n:,} proteins with MMseqs2 (one thread)",
                     lambda: clustering(ds, args.identity, args.coverage)), False


def _pct(count: int, of: int) -> str:
    return f"{count:,} of {of:,} ({100 * count / of:.1f}%)" if of else "0 of 0"


def _homology(args) -> int:
    from ..data import load_dataset
    from ..data.homology import test_with_train_hit

    ds = load_dataset(args.name, args.n, generate=False)  # a reader creates no dataset
    c, reused = _clustering(ds, args)
    s = c.summary()
    out = {"name": ds.name, "proteins": ds.n, "train": ds.n_train, "test": ds.n_test,
           "reused": reused, **s}
    if args.pairs:
        hit = _spinning(f"searching {ds.n_test:,} test proteins against {ds.n_train:,} train",
                        lambda: test_with_train_hit(ds, args.identity, args.coverage))
        out["test_with_train_hit"] = int(hit.sum())
        out["test_with_train_hit_fraction"] = float(hit.mean()) if hit.size else 0.0
    if args.json:
        print_json(out)
        return 0
    print(f"{ds.name} (sha256 {ds.sha256[:12]}): {ds.n:,} proteins, {ds.n_train:,} train, "
          f"{ds.n_test:,} test")
    print(f"clusters at {c.identity * 100:g}% identity, {c.coverage * 100:g}% coverage ({c.tool}; "
          + ("reused the stored clustering)" if reused else "computed now and stored)"))
    print(f"  clusters {s['clusters']:,}, largest {s['largest']:,} proteins, "
          f"singletons {s['singletons']:,}")
    print(f"  test proteins with a train homolog (same cluster): "
          f"{_pct(s['test_with_train_homolog_count'], ds.n_test)}")
    if args.pairs:
        print(f"  test proteins with a train protein above {c.identity:g} identity (GraphPart's "
              f"rule, mmseqs easy-search): {_pct(out['test_with_train_hit'], ds.n_test)}")
    return 0


def _split(args) -> int:
    from ..data import load_dataset, save_dataset
    from ..data.dataset import SPLIT_SEED
    from ..data.homology_split import check_new, homology_split

    check_new(args.new)  # before minutes of clustering
    seed = SPLIT_SEED if args.split_seed is None else args.split_seed
    ds = load_dataset(args.name, args.n)
    c, reused = _clustering(ds, args)
    split = homology_split(ds, c, args.new, seed)
    save_dataset(split.dataset)
    new = split.dataset
    print(f"{new.name}: {split.line()}; {split.train_clusters:,} clusters train, {split.test_clusters:,} "
          f"test, none shared (largest cluster {split.largest:,} proteins)")
    print(f"from {ds.name} (sha256 {ds.sha256[:12]}), clusters at {c.identity * 100:g}% identity, "
          f"{c.coverage * 100:g}% coverage ({c.tool}; {'reused' if reused else 'computed'}); "
          f"split seed {seed}; sha256 {new.sha256[:12]}")
    print(f"check it: kit data homology {new.name} --identity {c.identity:g} --coverage "
          f"{c.coverage:g} --pairs", file=sys.stderr)
    return 0
