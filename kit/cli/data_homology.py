"""`kit data homology` and `kit data split --homology`: clusters, leakage, a disjoint split."""

from __future__ import annotations

import sys

from ..data import load_dataset, save_dataset
from ..data.dataset import SPLIT_SEED, SYNTHETIC_N
from ..data.homology import check_parameters, clustering, stored_clustering
from .common import print_json


def run(args) -> int:
    check_parameters(args.identity, args.coverage)  # a bad fraction before any work
    return _homology(args) if args.data_cmd == "homology" else _split(args)


def _spinning(text: str, fn):
    """``fn()`` under a spinner with the elapsed time when stderr is a terminal."""
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    with Progress(
        SpinnerColumn(),
        TextColumn(text),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        bar.add_task(text, total=None)
        return fn()


def _clustering(ds, args):
    """(clustering, reused): the stored one, else computed now under a spinner."""
    found = stored_clustering(ds, args.identity, args.coverage)
    if found is not None:
        return found, True
    return _spinning(
        f"clustering {ds.n:,} proteins with MMseqs2 (one thread)",
        lambda: clustering(ds, args.identity, args.coverage),
    ), False


def _say(level: int, text: str) -> None:
    """One line of the summary at its indent (2 spaces a level), wrapped to the width under
    itself, deeper than the next level (an 82-character line at 80 columns)."""
    from ..views.fit import para

    lead = "  " * level
    print(para(text, lead + "    ", lead))


def _pct(count: int, of: int) -> str:
    return f"{count:,} of {of:,} ({100 * count / of:.1f}%)" if of else "0 of 0"


def _hits(ds, args):
    """(mask, tool, reused): the leakage search, stored or run now under a spinner."""
    from ..data.homology_edges import hits, stored_hits

    found = stored_hits(ds, args.identity, args.coverage)
    if found is not None:
        return (*found, True)
    return _spinning(
        f"searching {ds.n_test:,} test proteins against {ds.n_train:,} train with "
        "MMseqs2 (one thread)",
        lambda: hits(ds, args.identity, args.coverage),
    )


def _homology(args) -> int:
    name, n = args.name, args.n
    if name is None:  # the dataset `kit homology` reads by default: the most recent runs'
        from ..app.selection import opening_dataset
        from ..runs.store import Store

        name, n = opening_dataset(Store(), SYNTHETIC_N) if n is None else ("synthetic", n)
    # the built-in set at any --n is generated here, as `kit data info` generates it: a missing
    # --n said "`kit run` makes it", though `kit data list` says it is made at any --n. Not
    # kept: a reader stores no dataset (what it stores is keyed by the set's hash, which the
    # same generator gives `kit run`)
    ds = load_dataset(name, n, save=False)
    hit, hit_tool, hit_reused = _hits(ds, args)
    c, reused = _clustering(ds, args)
    s = c.summary()
    out = {
        "name": ds.name,
        "proteins": ds.n,
        "train": ds.n_train,
        "test": ds.n_test,
        "reused": reused,
        **s,
        "test_with_train_hit": int(hit.sum()),
        "test_with_train_hit_fraction": float(hit.mean()) if hit.size else 0.0,
        "search_tool": hit_tool,
        "search_reused": hit_reused,
    }
    split = {k: ds.meta[k] for k in ("method", "removed", "edges", "partitions") if k in ds.meta}
    if split:
        out["split"] = split
    if args.json:
        print_json(out)
        return 0
    _say(
        0,
        f"{ds.name} (sha256 {ds.sha256[:12]}): {ds.n:,} proteins, {ds.n_train:,} train, "
        f"{ds.n_test:,} test",
    )
    if split.get("method") == "graphpart":
        _say(
            1,
            f"a GraphPart split of {ds.meta.get('source_name')}: "
            f"{split.get('removed', 0):,} proteins removed to keep the sides apart",
        )
    _say(
        1,
        f"test proteins with a train protein above {c.identity * 100:g}% identity over "
        f"{c.coverage * 100:g}% coverage: {_pct(out['test_with_train_hit'], ds.n_test)}",
    )
    _say(
        2,
        f"GraphPart's rule: {hit_tool} easy-search, test against train ("
        + ("reused)" if hit_reused else "searched now and stored)"),
    )
    _say(
        1,
        f"clusters at {c.identity * 100:g}% identity, {c.coverage * 100:g}% coverage "
        f"({c.tool}; "
        + ("reused the stored clustering)" if reused else "computed now and stored)"),
    )
    _say(2, f"{s['clusters']:,} clusters, largest {s['largest']:,}, singletons {s['singletons']:,}")
    _say(
        1,
        "test proteins sharing a cluster with a train protein: "
        f"{_pct(s['test_with_train_homolog_count'], ds.n_test)}",
    )
    return 0


def _split(args) -> int:
    from ..data.homology_split import check_new

    check_new(args.new)  # before minutes of searching
    seed = SPLIT_SEED if args.split_seed is None else args.split_seed
    ds = load_dataset(args.name, args.n)
    split, how = (_by_graphpart if args.method == "graphpart" else _by_clusters)(ds, args, seed)
    save_dataset(split.dataset)
    new = split.dataset
    out = {
        "name": new.name,
        "sha256": new.sha256,
        "train": new.n_train,
        "test": new.n_test,
        "target_train": split.target_train,
        "target_test": split.target_test,
        "split_seed": seed,
        "method": split.method,
        "removed": list(split.removed),
        "from": ds.name,
        "from_sha256": ds.sha256,
        "identity": args.identity,
        "coverage": args.coverage,
        **{
            k: v
            for k, v in new.meta.items()
            if k in ("edges", "edge_count", "search_tool", "clustering_tool", "partitions")
        },
    }
    if args.json:
        print_json(out)
    else:
        _say(0, f"{new.name}: {split.line()}")
        _say(1, how)
        if split.removed:
            shown = ", ".join(split.removed[:8]) + (", ..." if len(split.removed) > 8 else "")
            _say(
                1,
                f"removed {len(split.removed):,} of {ds.n:,} proteins, on neither side "
                f"(each above {args.identity * 100:g}% identity to proteins on both sides): "
                f"{shown}",
            )
            _say(1, "(all of them: kit data split ... --json, or the dataset's removed_ids)")
        _say(
            1,
            f"from {ds.name} (sha256 {ds.sha256[:12]}); split seed {seed}; sha256 "
            f"{new.sha256[:12]}",
        )
    print(
        f"check it: kit data homology {new.name} --identity {args.identity:g} --coverage "
        f"{args.coverage:g}",
        file=sys.stderr,
    )
    return 0


def _by_graphpart(ds, args, seed):
    from ..data.homology_edges import edges, stored_edges
    from ..data.homology_split import graphpart_split

    e, reused = stored_edges(ds, args.identity, args.coverage), True
    if e is None:
        e, reused = _spinning(
            f"searching {ds.n:,} proteins against each other with MMseqs2 (one thread)",
            lambda: edges(ds, args.identity, args.coverage),
        )
    split = graphpart_split(ds, e, args.new, seed)
    return split, (
        f"GraphPart's partitioning of {e.i.size:,} search edges at "
        f"{e.identity * 100:g}% identity, {e.coverage * 100:g}% coverage ({e.tool}; "
        f"{'reused' if reused else 'searched now and stored'}): {split.moved:,} moved, "
        f"{len(split.removed):,} removed in {split.rounds:,} rounds; no search "
        "edge joins train and test"
    )


def _by_clusters(ds, args, seed):
    from ..data.homology_split import homology_split

    c, reused = _clustering(ds, args)
    split = homology_split(ds, c, args.new, seed)
    return split, (
        f"{split.train_clusters:,} clusters train, {split.test_clusters:,} test, "
        f"none shared (largest {split.largest:,} proteins), at {c.identity * 100:g}% "
        f"identity, {c.coverage * 100:g}% coverage ({c.tool}; "
        f"{'reused' if reused else 'computed'}); clusters can still leak: check it"
    )
