"""`kit data`: import your own proteins, fetch the Swiss-Prot subset, list, inspect, verify."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from ..core.errors import KitError, Unreachable
from ..core.numbers import fmt
from ..data import load_dataset
from ..data.dataset import MAX_SYNTHETIC_N, SPLIT_SEED, verify_worker_files
from .common import Parser, bounded, fraction, path, positive, print_json


def add(sub) -> None:
    p = sub.add_parser("data", help="datasets: import, info, list")
    dsub = p.add_subparsers(dest="data_cmd", required=True, metavar="ACTION", parser_class=Parser)

    from ..data.importer import FORMATS

    q = dsub.add_parser(
        "import",
        help="import a TSV or FASTA file as a dataset",
        description="Import your own proteins as a dataset (nothing is written "
        "unless every row is accepted).\n\n" + FORMATS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    q.add_argument("file", type=path)
    q.add_argument("--name", required=True, help="the dataset's name (--dataset NAME later)")
    q.add_argument(
        "--replace", action="store_true", help="overwrite an imported dataset of the same name"
    )
    q.add_argument(
        "--no-shuffle",
        action="store_true",
        help="keep the file's order (first 2/3 train) for a file already shuffled",
    )
    q.add_argument(
        "--filter",
        action="store_true",
        help="drop (and count) rows that cannot be imported: non-standard residues, "
        "lengths outside 60-700, unreadable labels or columns",
    )
    q.add_argument(
        "--split-seed",
        type=bounded("--split-seed"),
        default=None,
        help="seed of the train/test shuffle",
    )
    q = dsub.add_parser("info", help="what a dataset holds")
    q.add_argument("name", nargs="?", default="synthetic")
    q.add_argument("--n", type=positive)
    q.add_argument("--json", action="store_true")
    q = dsub.add_parser("list", help="stored datasets")
    q.add_argument("--json", action="store_true")
    q = dsub.add_parser(
        "fetch",
        help="fetch the paper's Swiss-Prot subset from UniProt (cached)",
        description="Fetch the paper's Swiss-Prot subset from UniProt (cached). "
        "A wrong answer is refused whole (exit 3, nothing cached): an accession "
        "twice (in one organism or two), more than 1% of an organism's rows "
        "malformed, rows that do not add up to X-Total-Results (which every "
        "page must carry, else exit 1), a page larger than asked, or fewer "
        "usable proteins than --per-organism; never a smaller dataset. A page not complete "
        "within the page deadline is fetched again (4 attempts), then the fetch "
        "fails; redirect loops and pages linking to themselves end it with one "
        "line. docs/data.md.",
    )
    q.add_argument("--base-url", help="UniProt REST base URL (env KIT_UNIPROT_URL; a mirror)")
    q.add_argument("--refresh", action="store_true", help="fetch again even if cached")
    q.add_argument(
        "--offline-ok",
        action="store_true",
        help="when UniProt cannot be reached at all, say so as information and exit "
        "3 (what bootstrap.sh does before it falls back to the synthetic set)",
    )
    q.add_argument(
        "--per-organism",
        type=bounded("--per-organism"),
        default=1000,
        help="proteins sampled per organism",
    )
    q.add_argument(
        "--keep", type=bounded("--keep"), default=6000, help="proteins kept from the shuffled pool"
    )
    q.add_argument(
        "--seed", type=bounded("--seed"), default=20261005, help="sampling and shuffling seed"
    )
    q.add_argument(
        "--deadline",
        type=bounded("--deadline"),
        metavar="SECONDS",
        help="give up after this long in all (default 1800; env KIT_FETCH_DEADLINE)",
    )
    q.add_argument(
        "--page-deadline",
        type=bounded("--page-deadline"),
        metavar="SECONDS",
        help="give up on one attempt at a page after this long, however slowly it "
        "arrives (default 120; env KIT_FETCH_PAGE_DEADLINE)",
    )
    q.add_argument(
        "--max-retry-after",
        type=bounded("--max-retry-after"),
        metavar="SECONDS",
        help="wait at most this long when UniProt asks to (default 120; env "
        "KIT_FETCH_RETRY_AFTER_MAX)",
    )
    q = dsub.add_parser(
        "homology",
        help="homology of a dataset: leakage by search, clusters (MMseqs2)",
        description="Search a dataset's test proteins against its train proteins "
        "(MMseqs2 easy-search at IDENTITY over COVERAGE: GraphPart's rule, the "
        "leakage figure) and cluster its proteins (easy-cluster --min-seq-id "
        "IDENTITY -c COVERAGE --cov-mode 0, one thread); both stored beside the "
        "dataset by its hash and the parameters. docs/data.md, Homology.",
    )
    q.add_argument(
        "name",
        nargs="?",
        default=None,
        help="a stored dataset (default: the one your most recent runs used, else synthetic)",
    )
    q.add_argument("--n", type=positive)
    _homology_args(q)
    q.add_argument(
        "--pairs",
        action="store_true",
        help="kept for scripts: the search is always run now (and stored)",
    )
    q.add_argument("--json", action="store_true")
    q.set_defaults(stopped=STOPPED_HOMOLOGY)
    q = dsub.add_parser(
        "split",
        help="a new dataset whose train and test hold no homologs",
        description="Write a new dataset of NAME's proteins, about 2:1, whose test "
        "proteins have no train protein above IDENTITY over COVERAGE: GraphPart's "
        "partitioning (Teufel et al. 2023) of the MMseqs2 search edges, removing "
        "and naming the proteins that would join the sides (--method graphpart, "
        "the default), or whole MMseqs2 clusters on one side (--method clusters, "
        "which can leak across clusters). docs/data.md, Homology.",
    )
    q.add_argument("name")
    q.add_argument(
        "--homology",
        action="store_true",
        required=True,
        help="split by homology (the only kind of split so far)",
    )
    q.add_argument(
        "--method",
        choices=("graphpart", "clusters"),
        default="graphpart",
        help="graphpart (default): no search edge across the sides; clusters: no "
        "MMseqs2 cluster across the sides",
    )
    _homology_args(q)
    q.add_argument("--name", dest="new", required=True, help="the new dataset's name")
    q.add_argument(
        "--split-seed",
        type=bounded("--split-seed"),
        default=None,
        help="seed of the order GraphPart meets the proteins in (or of the clusters' "
        "order) and of each side's shuffle",
    )
    q.add_argument("--n", type=positive)
    q.add_argument("--json", action="store_true")
    q.set_defaults(stopped=STOPPED_SPLIT)
    q = dsub.add_parser("verify", help="re-hash a dataset (swissprot: its cached pages too)")
    q.add_argument("name", nargs="?", default="swissprot")
    q.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_data)


def _homology_args(q) -> None:
    q.add_argument(
        "--identity",
        type=fraction,
        default=0.3,
        help="minimum sequence identity, a fraction (default 0.3)",
    )
    q.add_argument(
        "--coverage",
        type=fraction,
        default=0.8,
        help="minimum coverage of both sequences, a fraction (default 0.8)",
    )


def _cmd_data(args) -> int:
    if args.data_cmd in ("homology", "split"):
        from .data_homology import run

        return run(args)

    if args.data_cmd == "import":
        from ..data.importer import import_file

        seed = SPLIT_SEED if args.split_seed is None else args.split_seed
        ds, dropped = import_file(
            args.file,
            args.name,
            shuffle=not args.no_shuffle,
            filter_bad=args.filter,
            split_seed=seed,
            replace=args.replace,
        )
        s = ds.summary()
        why = ", ".join(f"{n} {reason}" for reason, n in sorted(dropped.items()))
        print(
            f"imported {s['rows']} proteins as {ds.name!r} ({s['train']} train, {s['test']} test, "
            f"{s['positives']} positive), {sum(dropped.values())} dropped"
            + (f" ({why})" if why else "")
            + f"; sha256 {ds.sha256[:12]}"
        )
        return 0
    if args.data_cmd == "fetch":
        return _data_fetch(args)
    if args.data_cmd == "verify":
        from ..data import uniprot

        if args.name == uniprot.NAME:
            out = uniprot.verify()
        else:
            ds = load_dataset(args.name, save=False)  # a check stores nothing
            out = {"dataset": ds.name, "sha256": ds.sha256, "ok": True}
        out["worker_files"] = verify_worker_files()  # what runs really read, by dataset hash
        print_json(out) if args.json else print(
            f"{out['dataset']}: ok, sha256 {out['sha256'][:12]}"
        )
        return 0
    if args.data_cmd == "list":
        from ..app.facade import Kit

        names = Kit().dataset_names()
        if args.json:
            print_json({"builtin": ["synthetic"], "stored": names})
        else:
            from ..views.fit import para

            print(
                "\n".join(
                    [
                        para(
                            f"synthetic (built in: kit run and kit data info, homology "
                            f"and split make it at any --n, 100 to {MAX_SYNTHETIC_N:,})",
                            "  ",
                            "",
                        )
                    ]
                    + names
                )
            )
        return 0
    # a reading command stores nothing: the built-in set not yet made is generated in memory
    s = load_dataset(args.name, args.n, save=False).summary()
    if args.json:
        print_json(s)
    else:
        from ..views.fit import table

        # a rate reads as kit's other numbers (0.267); --json keeps every digit; fitted as
        # every table is (a narrow terminal shortens the sha256, --wide prints it)
        print(
            table(
                [(k, fmt(v) if isinstance(v, float) else v) for k, v in s.items()],
                ["field", "value"],
                wrap=(1,),
            )
        )
    return 0


# what an interrupted data command kept, in its line (kit.cli's; a plan keeps its runs)
STOPPED_HOMOLOGY = (
    "stopped: nothing of the search or clustering it was making was stored (one "
    "it had finished is kept); run the same command to finish"
)
STOPPED_SPLIT = (
    "stopped: no new dataset was written (a search or clustering it had finished "
    "is kept); run the same command to finish"
)
OFFLINE = 75  # `kit data fetch --offline-ok` found UniProt unreachable (EX_TEMPFAIL)


def _data_fetch(args) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from ..data import uniprot

    err = Console(stderr=True)
    proto = uniprot.Protocol(per_organism=args.per_organism, keep=args.keep, seed=args.seed)
    tasks = {}
    with Progress(
        TextColumn("{task.description:>24}"), BarColumn(), MofNCompleteColumn(), console=err
    ) as bar:

        def progress(taxid, name, done, total):
            if taxid not in tasks:
                tasks[taxid] = bar.add_task(name, total=total)
            bar.update(tasks[taxid], completed=done, total=total)

        from ..data.http import Limits

        limits = Limits.from_env(
            deadline_s=args.deadline,
            retry_after_max_s=args.max_retry_after,
            page_s=args.page_deadline,
        )
        try:
            ds = uniprot.fetch_dataset(args.base_url, args.refresh, proto, progress, limits)
        except KitError as e:
            bar.live.transient = True  # a failed fetch ends in its one line, not under the bars
            if not (isinstance(e, Unreachable) and args.offline_ok):
                raise  # a wrong answer (exit 3) is never "offline" (75), even with --offline-ok
            bar.stop()
            print(f"kit: {e}; nothing fetched", file=sys.stderr)
            return OFFLINE
    s = ds.summary()
    print(
        f"swissprot: {s['rows']} proteins ({s['train']} train, {s['test']} test), "
        f"{s['positives']} with a transmembrane segment; UniProt release {s['release']} "
        f"({s['release_date']}); sha256 {ds.sha256[:12]}{_skipped(s.get('counts', {}))}"
    )
    return 0


def _skipped(counts: dict) -> str:
    """The malformed rows a fetch skipped (within its bound), said: "" when there were none."""
    from ..data.answer import MALFORMED_SHARE

    bad = {name: c.get("malformed", 0) for name, c in counts.items() if c.get("malformed")}
    if not bad:
        return ""
    common, many = Counter(bad.values()).most_common(1)[0]
    if many < 3:  # no count worth grouping: each organism's
        parts = [f"{n} {name}" for name, n in bad.items()]
    else:
        others = "others" if many < len(bad) else "organisms"
        parts = [f"{n} {name}" for name, n in bad.items() if n != common]
        parts.append(f"{common} in each of the {many} {others}")
    return (
        f"; skipped {sum(bad.values())} malformed rows ({', '.join(parts)}; at most "
        f"{MALFORMED_SHARE:.0%} of an organism's rows are)"
    )
