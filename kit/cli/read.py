"""The read commands: budget, verdicts, amplify, advise, report and runs of one dataset."""

from __future__ import annotations

import sys
from pathlib import Path


from ..core.errors import KitError
from .common import dataset_args, factor_list, fraction, kit_factors, print_json, select
from .lab_read import pipeline_arg


def add(sub) -> None:
    p = sub.add_parser("budget", help="the budget table of the stored pairs")
    dataset_args(p)
    p.add_argument("--factor", help="show this factor's pairs one by one")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true")
    out.add_argument("--csv", action="store_true",
                     help="one row per factor (or per pair with --factor), for a spreadsheet; "
                     "one value a cell: a list (64 components) is one column per value, "
                     "NAME_0..NAME_63")
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
    p.set_defaults(func=_cmd_amplify)

    p = sub.add_parser("advise", help="what to pin first, from the measured budget")
    dataset_args(p)
    p.add_argument("--json", action="store_true")
    pipeline_arg(p)
    p.set_defaults(func=_cmd_advise)

    p = sub.add_parser("report", help="write report.md and a self-contained report.html")
    dataset_args(p)
    p.add_argument("--out", required=True, help="folder to write into")
    pipeline_arg(p)
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("homology", help="verdicts under a cluster bootstrap, and accuracy with "
                       "and without a train homolog (after `kit data homology`)")
    dataset_args(p)
    p.add_argument("--identity", type=fraction, help="the clustering at this identity (default: "
                   "the stored one, 0.3 first)")
    p.add_argument("--coverage", type=fraction, help="... and this coverage (default 0.8 first)")
    p.add_argument("--json", action="store_true")
    pipeline_arg(p)
    p.add_argument("--data", metavar="NAME", help="with --pipeline: the stored dataset whose "
                   "clustering its protein ids are read in (default: the smallest clustered "
                   "dataset holding them all)")
    p.set_defaults(func=_cmd_homology)

    p = sub.add_parser("runs", help="list stored runs")
    dataset_args(p)
    p.add_argument("--kind", choices=("pipeline", "torch", "perturb", "feed"),
                   help="only runs of this kind (feed: the cross-fed runs of `kit explain`)")
    p.add_argument("--stack", help="only runs in this stack")
    p.add_argument("--factor", type=factor_list, help="only runs in pairs of these factors "
                   "(with --pipeline: any of its factors, seed:NAME included)")
    p.add_argument("--json", action="store_true")
    pipeline_arg(p)
    p.set_defaults(func=_cmd_runs, parser=p)


def _cmd_budget(args) -> int:
    if args.pipeline:
        from . import lab_read

        return lab_read.budget(args)
    from ..analysis.budget import budget, pair_details
    from ..runs.store import Store
    from ..views.pairs import pairs_text
    from ..views.tables import budget_text

    from ..views.tables import dataset_line

    store = Store()
    sel = select(args, store)
    if args.factor:
        _known_factor(args.factor, {p.factor for p in store.pairs()})
        rows = pair_details(store, sel.sha256, args.factor)
        if not rows:
            raise KitError(f"no pairs of factor {args.factor!r} on dataset "
                           f"{sel.summary.get('name', sel.sha256[:12])}")
        if args.csv:
            from ..runs.store.records import as_json
            from ..views.frames import csv_text, pairs_frame

            sys.stdout.write(csv_text(pairs_frame(as_json(rows))))
        else:
            print_json(rows) if args.json else print(dataset_line(sel.summary, sel.why) + "\n\n"
                                                      + pairs_text(rows))
        return 0
    b = budget(store, sel.sha256, sel.summary)
    if args.csv:
        from ..runs.store.records import as_json
        from ..views.frames import budget_frame, csv_text

        print(dataset_line(sel.summary, sel.why), file=sys.stderr)  # the file holds rows only
        sys.stdout.write(csv_text(budget_frame(as_json(b))))
        return 0
    print_json(b) if args.json else print(budget_text(b, sel.why))
    return 0


def _known_factor(name: str, stored: set) -> None:
    """A name no factor has (kit.core.factors' registry, or pairs an older kit stored): unknown,
    with the closest names, not "no pairs"."""
    import difflib

    from ..core import factors

    known = set(factors.names()) | stored
    if name in known:
        return
    close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.5)
    raise KitError(f"unknown factor {name!r}: " + (f"did you mean {' or '.join(close)}?" if close
                                                   else "choose from " + ", ".join(factors.names())))


def _cmd_verdicts(args) -> int:
    if args.pipeline:
        from . import lab_read

        return lab_read.verdicts(args)
    from ..runs.store import Store
    from ..views.tables import verdicts_text
    from ..analysis.verdicts import arrays_note, stability_report

    from ..views.tables import dataset_line

    store = Store()
    sel = select(args, store)
    rep = stability_report(store, sel.sha256, args.run_set)
    note = arrays_note(store, sel.sha256)
    if note:
        print(f"note: {note}", file=sys.stderr)
    print_json(rep) if args.json else print(dataset_line(sel.summary, sel.why) + "\n\n"
                                             + (verdicts_text(rep) or "no pairs with verdicts yet"))
    return 0


def _cmd_amplify(args) -> int:
    from ..analysis.amplify import report
    from ..analysis.budget import budget
    from ..runs.store import Store
    from ..views.tables import amplify_text

    from ..views.tables import dataset_line

    store = Store()
    sel = select(args, store)
    rep = report(budget(store, sel.sha256)["rows"])
    print_json(rep) if args.json else print(dataset_line(sel.summary, sel.why) + "\n\n"
                                             + amplify_text(rep))
    return 0


def _cmd_advise(args) -> int:
    if args.pipeline:
        from . import lab_read

        return lab_read.advise(args)
    from ..analysis.advice import advise
    from ..analysis.budget import budget
    from ..runs.store import Store
    from ..views.tables import advice_text

    store = Store()
    sel = select(args, store)
    a = advise(store, sel.sha256, budget(store, sel.sha256, sel.summary))
    print_json(a) if args.json else print(advice_text(a, sel.why))
    return 0


def _cmd_report(args) -> int:
    if args.pipeline:
        from . import lab_read

        return lab_read.report(args)
    from rich.console import Console

    from ..views.report import write
    from ..runs.store import Store

    from ..views.tables import dataset_line

    from ..core.atomic import out_folder

    folder = out_folder(args.out)  # --out's one rule, said before any work
    store = Store()
    sel = select(args, store)
    with Console(stderr=True).status("writing the report (bootstrap verdicts are computed once)"):
        out = write(store, sel.sha256, folder)
    print(dataset_line(sel.summary, sel.why))
    print(f"wrote {out['markdown']} and {out['html']} ({len(out['plots'])} plots)")
    return 0


def _cmd_homology(args) -> int:
    if args.pipeline or args.data:
        from . import lab_read

        return lab_read.homology(args)
    from ..analysis.homology import for_dataset
    from ..app.selection import load_name
    from ..runs.store import Store
    from ..views.homology import homology_text
    from ..views.tables import dataset_line

    store = Store()
    sel = select(args, store)
    h = for_dataset(store, sel.sha256, args.identity, args.coverage)
    if h is None:
        at = "".join(f" --{k} {v:g}" for k, v in (("identity", args.identity),
                                                   ("coverage", args.coverage)) if v is not None)
        raise KitError(f"no homology clustering of this dataset{' at' + at if at else ''} yet: "
                       f"`kit data homology {load_name(sel.summary)}{at}` computes it (MMseqs2, "
                       "about 20 s per 6,000 proteins)")
    print_json(h) if args.json else print(dataset_line(sel.summary, sel.why) + "\n\n"
                                           + homology_text(h))
    return 0


def _cmd_runs(args) -> int:
    if args.pipeline:
        from . import lab_read

        return lab_read.runs(args)
    from ..runs.store import Store
    from ..views.tables import runs_text

    args.factor = kit_factors(args)
    store = Store()
    ds = select(args, store).sha256 if (args.dataset or args.n) else None
    runs = store.runs(ds)
    if args.kind:
        runs = [r for r in runs if r.spec.kind == args.kind]
    if args.stack:
        runs = [r for r in runs if r.spec.stack == args.stack]
    if args.factor:
        ids = {x for p in store.pairs(ds) if p.factor in args.factor for x in (p.a, p.b)}
        runs = [r for r in runs if r.id in ids]
    if args.json:
        print_json(runs)
    else:
        print(runs_text(runs, store.datasets()) if runs else "no runs stored"
              + (" that match" if args.kind or args.stack or args.factor else ""))
    return 0
