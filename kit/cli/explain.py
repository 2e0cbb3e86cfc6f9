"""`kit explain FACTOR`: where each of a factor's differences starts, stage by stage."""

from __future__ import annotations

from .common import confirm, dataset_args, print_json, say_stacks, select


def add(sub) -> None:
    p = sub.add_parser("explain", help="where each difference of a factor starts: which stage "
                       "originates it, which only inherit it, and whether it acts like noise")
    p.add_argument("factor", help="a factor whose pairs are stored (kit run --factor FACTOR)")
    dataset_args(p)
    p.add_argument("--library", nargs=3, metavar=("NAME", "A", "B"),
                   help="scan NAME's releases from A to B (default: sklearn, numpy and python "
                   "scan their own library, or interpreter, between the pair's versions)")
    p.add_argument("--yes", action="store_true", help="build the stacks it needs without asking")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_explain)


def _cmd_explain(args) -> int:
    import sys

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from ..app.explain import explanation, plan_explain, run_explain, working_dataset
    from ..app.releases import Declined, explained, plan_scans, run_scans, scan_runs, to_build
    from ..core.errors import KitError
    from ..envs.releases import check_name, is_final
    from ..runs.store import Store
    from ..views.explain import explain_text

    err = Console(stderr=True)
    if args.library:  # before the name goes into the index's URL, and before any run
        check_name(args.library[0])
    for v in (args.library or [])[1:]:
        if not is_final(v):
            raise KitError(f"--library {args.library[0]} {v}: give final releases (like 1.6.0)")
    store = Store()
    sel = select(args, store)
    plan = plan_explain(store, args.factor, sel)

    def ask(stacks, who="Cross-feeding"):
        say_stacks(err, who, stacks)
        if not args.yes:
            confirm(err, "Build them now?", "Not without a terminal to ask: add --yes to build "
                    "them (or build them first: kit stacks build NAME ...).")
        return True

    if plan.feeds:
        err.print(f"{len(plan.feeds)} cross-fed run(s) to make ({plan.stored} stored)")
    with Progress(TextColumn("[bold]cross-fed runs"), BarColumn(), MofNCompleteColumn(),
                  console=err, disable=not plan.feeds) as bar:
        task = bar.add_task("runs", total=len(plan.feeds))
        left = run_explain(plan, store, confirm=ask, log=err.print,
                           on_done=lambda spec: bar.advance(task))
    pairs = [p for p in store.pairs(sel.sha256) if p.factor == args.factor]
    library = tuple(args.library) if args.library else None
    scans, notes = plan_scans(store, args.factor, pairs, library)
    runs = scan_runs(scans, store)
    if scans:
        err.print(f"release scan: {sum(len(s.releases) for s in scans)} release(s), "
                  f"{len(to_build(scans))} probe stack(s) to build, {runs} run(s) to make")

    refused = []  # no terminal to ask (and no --yes): the exit status says so, as kit run's

    def ask_scan(st) -> bool:
        """A no (or no terminal) skips the scan alone: the origins found above still print,
        and the note of the skipped scan says how to run it (confirm's line would say that
        nothing was run, though the cross-fed runs may just have)."""
        say_stacks(err, f"The release scan ({len(st)} probe stacks)", st)
        if args.yes:
            return True
        if not sys.stdin.isatty():
            refused.append(True)
            return False
        try:
            confirm(err, "Build them now?", "")
        except KitError:
            return False
        return True

    with Progress(TextColumn("[bold]release scan"), BarColumn(), MofNCompleteColumn(),
                  console=err, disable=not runs) as bar:
        task = bar.add_task("runs", total=runs)
        try:
            left += run_scans(scans, store, lambda: working_dataset(sel), confirm=ask_scan,
                              log=err.print, on_done=lambda spec: bar.advance(task))
        except Declined as e:
            why = "no terminal to ask" if refused else "declined"
            notes.append(f"the release scan was skipped ({e}: {why}); `{_again(args)}` builds "
                         "them and runs it")
            scans = [s for s in scans if any(r.built for r in s.releases)]
    result = explained(explanation(store, args.factor, sel), scans, store)
    result["unscanned"] = [w for w in notes if w]
    if args.json:
        print_json({"factor": result["factor"], "pairs": [e.to_json() for e in result["pairs"]],
                    "skipped": [{"label": l, "why": w} for l, w in result["skipped"]],
                    "unscanned": result["unscanned"],
                    "not_run": left})
    else:
        print(explain_text(result, left))
    return 1 if refused else 0


def _again(args) -> str:
    """The command that runs the same explanation with its release scan, without asking."""
    import shlex

    words = ["kit", "explain", args.factor]
    words += ["--dataset", args.dataset] if args.dataset else []
    words += ["--n", str(args.n)] if args.n else []
    words += ["--library", *args.library] if args.library else []
    return shlex.join(words + ["--yes"])
