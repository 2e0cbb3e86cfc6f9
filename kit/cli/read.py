"""The read commands: budget, verdicts, amplify, advise, report, homology and runs of one
subject (a dataset of kit's own pipeline, or a lab's pipeline): words to a verb to a view."""

from __future__ import annotations

from ..core.atomic import out_folder
from ..core.errors import KitError
from .common import dataset_args, emit, factor_list, fraction, path, pipeline_arg, subject, words


def add(sub) -> None:
    p = sub.add_parser("budget", help="the budget table of the stored pairs")
    dataset_args(p)
    p.add_argument("--factor", help="show this factor's pairs one by one")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true")
    out.add_argument(
        "--csv",
        action="store_true",
        help="one row per factor (or per pair with --factor), for a spreadsheet; "
        "one value a cell: a list (64 components) is one column per value, "
        "NAME_0..NAME_63",
    )
    pipeline_arg(p)
    p.set_defaults(func=_cmd_budget)

    p = sub.add_parser("verdicts", help="stability of the twelve model-comparison verdicts")
    dataset_args(p)
    p.add_argument("--set", dest="run_set", help="one run set: seeds, stacks or a factor name")
    p.add_argument("--json", action="store_true")
    pipeline_arg(p)
    p.set_defaults(func=_cmd_verdicts)

    p = sub.add_parser("amplify", help="how each model amplifies a small embedding perturbation")
    dataset_args(p)
    p.add_argument("--json", action="store_true")
    pipeline_arg(p)
    p.set_defaults(func=_cmd_amplify)

    p = sub.add_parser("advise", help="what to pin first, from the measured budget")
    dataset_args(p)
    p.add_argument("--json", action="store_true")
    pipeline_arg(p)
    p.set_defaults(func=_cmd_advise)

    p = sub.add_parser("report", help="write report.md and a self-contained report.html")
    dataset_args(p)
    p.add_argument("--out", type=path, required=True, help="folder to write into")
    pipeline_arg(p)
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser(
        "homology",
        help="verdicts under a cluster bootstrap, and accuracy with "
        "and without a train homolog (after `kit data homology`)",
    )
    dataset_args(p)
    p.add_argument(
        "--identity",
        type=fraction,
        help="the clustering at this identity (default: the stored one, 0.3 first)",
    )
    p.add_argument("--coverage", type=fraction, help="... and this coverage (default 0.8 first)")
    p.add_argument("--json", action="store_true")
    pipeline_arg(p)
    p.add_argument(
        "--data",
        metavar="NAME",
        help="with --pipeline: the stored dataset whose "
        "clustering its protein ids are read in (default: the smallest clustered "
        "dataset holding them all)",
    )
    p.add_argument(
        "--against",
        metavar="NAME",
        help="a homology-disjoint split of --dataset "
        "(`kit data split`): each model's accuracy and each verdict on both, judged in "
        "split units (seed runs of both needed; seed:split runs of --dataset for the "
        "yardstick)",
    )
    p.add_argument(
        "--yardstick",
        choices=("split", "paired"),
        help="with --against: split (default) judges a change against random re-splits of "
        "--dataset; paired against random re-splits of the disjoint split's own proteins at "
        "its own sizes (seed:split runs of it), its removed proteins left out",
    )
    p.set_defaults(func=_cmd_homology)

    p = sub.add_parser("runs", help="list stored runs")
    dataset_args(p)
    p.add_argument(
        "--kind",
        choices=("pipeline", "torch", "perturb", "feed"),
        help="only runs of this kind (feed: the cross-fed runs of `kit explain`)",
    )
    p.add_argument("--stack", help="only runs in this stack")
    p.add_argument(
        "--factor",
        type=factor_list,
        help="only runs in pairs of these factors "
        "(with --pipeline: any of its factors, seed:NAME included)",
    )
    p.add_argument("--json", action="store_true")
    pipeline_arg(p)
    p.set_defaults(func=_cmd_runs)


def _cmd_budget(args) -> int:
    from ..app.facade import Kit
    from ..views.verbs import budget_page

    k = Kit()
    rec = k.budget(subject(args, k), args.factor)
    emit(budget_page(rec, "json" if args.json else "csv" if args.csv else "text"))
    return 0


def _cmd_verdicts(args) -> int:
    from ..app.facade import Kit
    from ..views.verbs import verdicts_page

    k = Kit()
    emit(verdicts_page(k.verdicts(subject(args, k), args.run_set), args.json))
    return 0


def _cmd_amplify(args) -> int:
    from ..app.facade import Kit
    from ..views.verbs import amplify_page

    k = Kit()
    emit(amplify_page(k.amplify(subject(args, k)), args.json))
    return 0


def _cmd_advise(args) -> int:
    from ..app.facade import Kit
    from ..views.verbs import advice_page

    k = Kit()
    emit(advice_page(k.advise(subject(args, k)), args.json))
    return 0


def _cmd_report(args) -> int:
    from rich.console import Console

    from ..app.facade import Kit
    from ..views.report import write
    from ..views.verbs import report_page

    # --out's one rule, said before any work; the folder is made only once the report is
    # written (views.report.write): a report that fails leaves none behind
    folder = out_folder(args.out, make=False)
    k = Kit()
    rec = k.report(subject(args, k), busy=Console(stderr=True).status)
    emit(report_page(rec, write(rec, folder)))
    return 0


def _cmd_homology(args) -> int:
    from ..app.facade import Kit
    from ..views.verbs import homology_page

    if args.yardstick and not args.against:
        raise KitError("--yardstick judges kit homology --against NAME: give --against")
    k = Kit()
    s = subject(args, k, only_with_pipeline="--data" if args.data else None)
    if args.against:
        from ..views.verbs import across_page

        paired = args.yardstick == "paired"
        emit(across_page(k.across_splits(s, args.against, paired), args.json))
        return 0
    emit(homology_page(k.homology(s, args.identity, args.coverage, args.data), args.json))
    return 0


def _cmd_runs(args) -> int:
    from ..app.facade import Kit
    from ..views.verbs import runs_page

    k = Kit()
    factors = k.factor_names(args.factor, **words(args))  # said before anything is read
    rec = k.runs(k.scope(**words(args)), args.kind, args.stack, factors)
    emit(runs_page(rec, args.json))
    return 0
