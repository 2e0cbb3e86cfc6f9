"""`kit run`: plan the pairs of the chosen factors, build their stacks, run what is missing."""

from __future__ import annotations

import argparse
from contextlib import contextmanager

from ..core.numbers import span
from ..envs.descriptions import descriptions
from ..runs.planning.options import SVD_ITERS
from .common import (
    CLUSTERS,
    add_timeout,
    cluster_arg,
    confirm,
    counts,
    dataset_args,
    emit,
    factor_list,
    floats,
    int_list,
    jobs_arg,
    known_stack,
    names_list,
    path,
    say_stacks,
    thread_counts,
    words,
)


def add(sub) -> None:
    p = sub.add_parser(
        "run",
        help="run the pairs that measure one or more factors",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="factors:\n" + "\n".join(f"  {k:12} {v}" for k, v in descriptions().items()),
    )
    p.add_argument("--factor", required=True, help="factor name(s), comma-separated")
    p.add_argument(
        "--pipeline",
        type=path,
        metavar="FILE.py",
        help="your own pipeline file (SEEDS, KINDS, run(seeds)): --factor repeat, "
        "process, threads, precision (run(seeds, dtype)), seed, seed:NAME for "
        "a name in its SEEDS, a stack factor, or host on a --cluster "
        "(docs/pipelines.md)",
    )
    dataset_args(p)
    p.add_argument(
        "--stack",
        default="host",
        help="stack for single-stack factors (default: host, kit's own interpreter; "
        "a pipeline with REQUIRES: the catalogue's first stack here)",
    )
    p.add_argument(
        "--threads",
        type=thread_counts,
        default=(),
        help="thread counts, e.g. 1,2 (default 1..cores; on a cluster 1..the smallest "
        "worker's cores)",
    )
    p.add_argument(
        "--seeds", type=int_list, default=(), help="seeds, e.g. 0-9 (first is the reference)"
    )
    p.add_argument(
        "--iters", type=counts, default=None, help="svd-iters levels (default 5,10,20,50)"
    )
    p.add_argument(
        "--jobs",
        type=jobs_arg,
        default="auto",
        help="runs at once: a number, or auto (default: as many as the cores hold at "
        "each run's threads; threads x runs never exceed the cores)",
    )
    add_timeout(p)
    p.add_argument(
        "--fresh",
        action="store_true",
        help="a fresh worker process per run (default: warm workers that import once)",
    )
    p.add_argument(
        "--cluster", metavar="WHICH", type=cluster_arg, help=f"run on a Dask cluster: {CLUSTERS}"
    )
    p.add_argument(
        "--hosts",
        type=names_list,
        default=(),
        metavar="A,B",
        help="the host factor: node classes, hosts or workers of the cluster to compare",
    )
    p.add_argument("--eps", type=floats, default=(), help="perturb: noise sizes, e.g. 1e-13,1e-7")
    p.add_argument(
        "--device",
        choices=("cpu", "mps", "cuda"),
        help="torch-device: the accelerator to compare with the CPU",
    )
    p.add_argument(
        "--torch-stack",
        metavar="NAME",
        help="torch factors: run in this stack (e.g. one added with `kit stacks add`)",
    )
    p.add_argument(
        "--built",
        action="store_true",
        help="stack factors: only the pairs whose stacks are built here (builds "
        "nothing; a factor with no such pair is one line)",
    )
    p.add_argument(
        "--yes",
        action="store_true",
        help="do not ask before a large plan or before building stacks (for scripts)",
    )
    p.add_argument("--json", action="store_true", help="print the budget as JSON")
    p.set_defaults(func=_cmd_run)


def _cmd_run(args) -> int:
    from rich.console import Console
    from rich.markup import escape

    from ..app.facade import Kit, Where
    from ..views.verbs import ran_page

    err = Console(stderr=True)
    k = Kit()
    target = k.to_run(factor_list(args.factor), **words(args))  # bad factor: usage error
    known_stack(args, "--stack", args.stack)
    if args.torch_stack:  # a mistyped name is refused whatever the plan, not only with torch
        known_stack(args, "--torch-stack", args.torch_stack)
    where = Where(args.cluster, args.hosts, args.timeout, args.fresh)
    # the rules of where runs go (--timeout, --hosts, --threads) are the verb's, said first
    opts = k.options(
        where,
        threads=args.threads,
        seeds=args.seeds,
        svd_iters=args.iters or SVD_ITERS,
        device=args.device,
        eps=args.eps,
        torch_stack=args.torch_stack,
        built=args.built,
    )
    # a large plan is asked first, as the TUI's: a no raises, and nothing runs
    rec = k.run(
        target,
        opts,
        where,
        stack=args.stack,
        jobs=args.jobs,
        progress=_Bars(err, args.jobs, bool(args.cluster), k, args.timeout),
        confirm=lambda ask: _confirm(ask, err, args.yes),
        chosen=lambda subject: _chosen(err, subject),
        say=lambda line: err.print(f"kit: {line}"),
    )
    emit(ran_page(rec, args.json, args.dataset, args.n))
    if rec.failure:  # the budget of what was made is said above; then the error, exit 1
        raise rec.failure
    if isinstance(rec.budget, dict) and rec.budget.get("loose"):
        # the runs are stored, but the null experiment failed: every other comparison of the
        # file is a single draw, so a script must not read this as a success (and `kit doctor
        # --pipeline` exits 1 on the same finding)
        err.print(
            escape(
                f"kit: the runs are stored, but a generator is loose (it reaches "
                f"{', '.join(rec.budget['loose'])}): exit 1, as `kit doctor "
                "--pipeline` exits; seed it from a named seed"
            ),
            soft_wrap=True,
        )
        return 1
    return 0


def _chosen(err, subject) -> None:
    """What is run, said before anything is planned (after a cluster's node class)."""
    from rich.markup import escape

    from ..views.verbs import chosen_line

    said = chosen_line(subject)
    if said:
        style, line = said
        err.print(f"[{style}]{escape(line)}[/]" if style else escape(line), soft_wrap=True)


def _confirm(ask, err, yes: bool) -> bool:
    """Stacks to build: say which and how big, and ask on a terminal; without one, refuse
    unless --yes (gigabytes are not downloaded on a script's behalf unasked, as `kit compare`
    does). A plan above ASK_ABOVE runs: ask, or refuse without a terminal unless --yes. A no
    raises: nothing runs."""
    from ..app.facade import ask_above

    if ask.stacks:
        say_stacks(err, "The plan", ask.stacks)
        if not yes:
            confirm(
                err,
                "Build them now?",
                "Not without a terminal to ask: add --yes to build "
                "them (or build them first: kit stacks build NAME ...).",
            )
    elif not yes:
        est = ask.estimate()
        # the estimate counts the runs that go at once, as the plan's "up to N run(s) at once"
        together = f"{ask.at_once} at once" if ask.at_once > 1 else "one at a time"
        confirm(
            err,
            f"{ask.runs} runs to do"
            + (f" (about {span(est)} from past timings, {together})" if est else "")
            + ".",
            f"A plan of more than {ask_above()} runs needs --yes when there is no terminal to ask.",
        )
    return True


class _Bars:
    """An audit's progress (kit.app.audit.Progress) on stderr: a line per stack built, the plan,
    then a bar of runs (logs get one line per run instead of a redrawn bar)."""

    def __init__(self, err, jobs, remote, kit=None, timeout=None):
        self.err, self.jobs, self.remote = err, jobs, remote
        self.kit, self.timeout = kit, timeout
        self.tasks, self.bar = {}, None

    @contextmanager
    def building(self, stacks):
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        if not stacks:
            yield
            return
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=self.err,
            transient=False,
        ) as self.bar:
            self.tasks = {n: self.bar.add_task(f"{n}: waiting", total=1) for n, _ in stacks}
            yield

    def log(self, name, msg):
        if name in self.tasks:
            self.bar.update(self.tasks[name], description=msg)

    def built(self, name, made):
        if name in self.tasks:
            self.bar.update(
                self.tasks[name],
                completed=1,
                description=f"built stack {name}" if made else f"{name}: already built",
            )

    def noted(self, line):
        from rich.markup import escape

        self.err.print(f"kit: {escape(line)}", soft_wrap=True)

    def planned(self, a, todo):
        self.err.print(
            f"{len(a.pairs)} pair(s), {len(a.specs)} run(s): "
            f"{len(a.specs) - len(todo)} stored, {len(todo)} to run"
        )
        whys: dict = {}
        for pair, why in a.skipped:
            whys.setdefault(why, []).append(pair)
        for why, pairs in whys.items():
            self.err.print(
                f"kit: skipped {len(pairs)} pair(s) ({pairs[0].label}"
                + (", ..." if len(pairs) > 1 else "")
                + f"): {why}"
            )
        shared = None if self.remote or self.kit is None else self.kit.sharing(todo, self.jobs)
        if shared:
            self.err.print(f"kit: {shared}")
        if todo and not self.remote and self.kit is not None:
            seconds, why = self.kit.deadline(self.timeout, todo)
            self.err.print(
                f"kit: a run still going after {seconds:,.0f} s is ended and "
                f"recorded as failed ({why})"
            )

    @contextmanager
    def running(self, todo):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        with Progress(
            TextColumn("[bold]runs"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.err,
            disable=not todo,
        ) as self.bar:
            self.task, self.total = self.bar.add_task("runs", total=len(todo)), len(todo)
            yield

    def done(self, spec):
        self.bar.advance(self.task)
        if not self.err.is_terminal:  # logs get one line per run instead of a redrawn bar
            self.err.print(
                f"run {int(self.bar.tasks[0].completed)}/{self.total} done: {spec.run_id[:12]}"
            )
