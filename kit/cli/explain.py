"""`kit explain FACTOR`: where each of a factor's differences starts, stage by stage."""

from __future__ import annotations

import sys
from contextlib import contextmanager

from ..core.errors import KitError
from .common import (
    CLUSTERS,
    cluster_arg,
    confirm,
    dataset_args,
    emit,
    pipeline_arg,
    say_stacks,
    subject,
    words,
)


def add(sub) -> None:
    p = sub.add_parser(
        "explain",
        help="where each difference of a factor starts: which stage "
        "originates it, which only inherit it, and whether it acts like noise",
    )
    p.add_argument("factor", help="a factor whose pairs are stored (kit run --factor FACTOR)")
    dataset_args(p)
    p.add_argument(
        "--library",
        nargs=3,
        metavar=("NAME", "A", "B"),
        help="scan NAME's releases from A to B (default: sklearn, numpy and python "
        "scan their own library, or interpreter, between the pair's versions)",
    )
    p.add_argument(
        "--cluster",
        metavar="WHICH",
        type=cluster_arg,
        help=f"cross-feed the pairs made on a cluster's nodes there: {CLUSTERS}",
    )
    p.add_argument("--yes", action="store_true", help="build the stacks it needs without asking")
    p.add_argument("--json", action="store_true")
    pipeline_arg(p)
    p.set_defaults(func=_cmd_explain)


class _Said:
    """An explanation's progress (kit.core.callbacks.ExplainProgress) on stderr: the counts, then a
    bar of runs for the cross-fed runs and one for the release scan."""

    def __init__(self, err):
        self.err = err

    def planned(self, plan) -> None:
        if plan.feeds:
            self.err.print(f"{len(plan.feeds)} cross-fed run(s) to make ({plan.stored} stored)")

    def scanning(self, scans, builds, runs) -> None:
        self.err.print(
            f"release scan: {sum(len(s.releases) for s in scans)} release(s), "
            f"{builds} probe stack(s) to build, {runs} run(s) to make"
        )

    @contextmanager
    def running(self, what, total):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(
            TextColumn(f"[bold]{what}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=self.err,
            disable=not total,
        ) as bar:
            task = bar.add_task("runs", total=total)
            yield lambda spec: bar.advance(task)

    def log(self, line) -> None:
        from rich.markup import escape

        # kit's own lines (a cluster started, a stack's build) as kit run says them
        self.err.print(f"kit: {escape(line)}", soft_wrap=True)


def _cmd_explain(args) -> int:
    from rich.console import Console

    from ..app.facade import Kit
    from ..views.verbs import explain_page, head

    err = Console(stderr=True)
    k = Kit()
    k.check_library(args.library)  # before the name goes into the index's URL, and before any run

    def ask(stacks, who="Cross-feeding"):
        say_stacks(err, who, stacks)
        if not args.yes:
            confirm(
                err,
                "Build them now?",
                "Not without a terminal to ask: add --yes to build "
                "them (or build them first: kit stacks build NAME ...).",
            )
        return True

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

    s = subject(args, k, first=args.factor)  # an empty store: the run that makes its pairs
    if args.json:  # what the answer is of, said first on stderr, as every read command's
        print(head(s), file=sys.stderr)
    rec = k.explain(
        s,
        args.factor,
        args.library,
        ask_build=ask,
        ask_scan=ask_scan,
        progress=_Said(err),
        cluster=args.cluster,
    )
    why = "no terminal to ask" if refused else "declined"
    skipped = (
        (
            f"the release scan was skipped ({rec.declined}: {why}); `{_again(args)}` builds "
            "them and runs it"
        )
        if rec.declined
        else None
    )
    emit(explain_page(rec, args.json, skipped))
    if args.library and not rec.scans and not rec.declined:  # asked for; nothing to scan
        print(
            f"kit: error: --library {' '.join(args.library)}: no pair of {args.factor} was "
            "scanned (the lines above say why)",
            file=sys.stderr,
        )
        return 1
    # a scan asked for by --library and not run is a failure; the pair's own library's scan is
    # an optional extra: the explanation printed is the answer, and the note says how to scan
    return 1 if refused and args.library else 0


def _again(args) -> str:
    """The command that runs the same explanation with its release scan, without asking."""
    import shlex

    said = ["kit", "explain", args.factor]
    for name, value in words(args).items():  # the words that named its subject, as given
        said += [f"--{name}", str(value)] if value else []
    said += ["--library", *args.library] if args.library else []
    said += ["--cluster", args.cluster] if args.cluster else []
    return shlex.join(said + ["--yes"])
