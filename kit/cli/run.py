"""`kit run`: plan the pairs of the chosen factors, build their stacks, run what is missing."""

from __future__ import annotations

import argparse
import sys

from ..envs.descriptions import descriptions
from .common import (confirm, counts, dataset_args, factors, floats, int_list, jobs_arg,
                     names_list, print_json, threads)


def add(sub) -> None:
    p = sub.add_parser("run", help="run the pairs that measure one or more factors",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="factors:\n" + "\n".join(f"  {k:12} {v}" for k, v in descriptions().items()))
    p.add_argument("--factor", type=factors, required=True, help="factor name(s), comma-separated")
    dataset_args(p, default="synthetic")
    p.add_argument("--stack", default="host",
                   help="stack for single-stack factors (default: host, kit's own interpreter)")
    p.add_argument("--threads", type=threads, default=(), help="thread counts, e.g. 1,2 (default 1..cores)")
    p.add_argument("--seeds", type=int_list, default=(), help="seeds, e.g. 0-9 (first is the reference)")
    p.add_argument("--iters", type=counts, default=None, help="svd-iters levels (default 5,10,20,50)")
    p.add_argument("--jobs", type=jobs_arg, default="auto",
                   help="runs at once: a number, or auto (default: as many as the cores hold at "
                        "each run's threads; threads x runs never exceed the cores)")
    p.add_argument("--fresh", action="store_true",
                   help="a fresh worker process per run (default: warm workers that import once)")
    p.add_argument("--cluster", metavar="WHICH",
                   help="run on a Dask cluster: local[:N], tcp://HOST:PORT, slurm, pbs, sge, lsf, "
                        "htcondor or ssh (settings: `kit cluster show`; docs/cluster.md)")
    p.add_argument("--hosts", type=names_list, default=(), metavar="A,B",
                   help="the host factor: node classes, hosts or workers of the cluster to compare")
    p.add_argument("--eps", type=floats, default=(), help="perturb: noise sizes, e.g. 1e-13,1e-7")
    p.add_argument("--device", choices=("cpu", "mps", "cuda"),
                   help="torch-device: the accelerator to compare with the CPU")
    p.add_argument("--torch-stack", metavar="NAME",
                   help="torch factors: run in this stack (e.g. one added with `kit stacks add`)")
    p.add_argument("--yes", action="store_true",
                   help="do not ask before a large plan or before building stacks (for scripts)")
    p.add_argument("--json", action="store_true", help="print the budget as JSON")
    p.set_defaults(func=_cmd_run)


def _cmd_run(args) -> int:
    from dataclasses import replace

    from rich.console import Console

    from ..core.errors import KitError
    from ..runs.options import SVD_ITERS, PlanOptions

    err = Console(stderr=True)
    if args.hosts and not args.cluster:
        raise KitError("--hosts names machines of a cluster: add --cluster (docs/cluster.md)")
    opts = PlanOptions(threads=args.threads, seeds=args.seeds, svd_iters=args.iters or SVD_ITERS,
                       device=args.device, eps=args.eps, torch_stack=args.torch_stack)
    with _executor(args, err) as ex:
        if ex is not None and ex.name == "dask":
            opts = replace(opts, host=ex.default_host(), hosts=ex.resolve(args.hosts))
            classes = ex.classes()
            err.print(f"kit: runs go to node class {opts.host} of {args.cluster}"
                      + (f" (it also has {', '.join(list(classes)[1:])}; --factor host --hosts "
                         "compares classes)" if len(classes) > 1 and not args.hosts else ""))
        return _run(args, opts, ex, err)


def _executor(args, err):
    """The cluster executor when --cluster is given (closed when the command ends), else None."""
    from contextlib import nullcontext

    if not args.cluster:
        if args.fresh:
            from contextlib import closing

            from ..runs.runner import LocalExecutor

            return closing(LocalExecutor(fresh=True))
        return nullcontext()
    from ..runs.cluster import DaskExecutor

    return DaskExecutor(args.cluster, log=lambda m: err.print(f"kit: {m}"))


def _run(args, opts, executor, err) -> int:
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    from ..app import audit as au
    from ..analysis.budget import budget
    from ..runs.schedule import note
    from ..runs.store import Store
    from ..views.tables import budget_text

    a = au.prepare(args.factor, args.dataset, args.n, opts, args.stack)
    if a.dataset.synthetic:
        err.print(f"[yellow]dataset {a.dataset.name}: the built-in SYNTHETIC set ({a.dataset.n} proteins)[/]")
    _build_for(a, err, args.yes)
    au.plan_runs(a)
    store = Store()
    todo = len(au.todo(a, store))
    err.print(f"{len(a.pairs)} pair(s), {len(a.specs)} run(s): {len(a.specs) - todo} stored, "
              f"{todo} to run")
    shared = None if executor is not None and executor.name == "dask" else note(au.todo(a, store),
                                                                                 args.jobs)
    if shared:
        err.print(f"kit: {shared}")
    if todo > au.ASK_ABOVE and not args.yes:
        est = au.estimate_seconds(a, store)
        confirm(err, f"{todo} runs to do" + (f" (about {est / 3600:.1f} h from past timings)"
                                               if est else "") + ".",
                 f"A plan of more than {au.ASK_ABOVE} runs needs --yes when there is no terminal "
                 "to ask.")
    with Progress(TextColumn("[bold]runs"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=err,
                  disable=todo == 0) as bar:
        task = bar.add_task("runs", total=todo)

        def done(spec):
            bar.advance(task)
            if not err.is_terminal:  # logs get one line per run instead of a redrawn bar
                err.print(f"run {int(bar.tasks[0].completed)}/{todo} done: {spec.run_id[:12]}")

        au.execute(a, store, jobs=args.jobs, on_done=done, executor=executor)
    b = budget(store, a.dataset.sha256)
    print_json(b) if args.json else print(budget_text(b))
    return 0


def _build_for(a, err, yes: bool) -> None:
    """Say which stacks the plan needs built and how big they are, ask on a terminal, then build
    each with its own progress line (a script without a terminal proceeds, as it always has)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from ..app import audit as au

    todo = au.stacks_to_build(a)
    if not todo:
        return
    total = sum(b or 0 for _, b in todo)
    err.print("The plan needs stacks that are not built yet: " + ", ".join(
        f"{n} (~{b / 2**20:.0f} MB)" if b else n for n, b in todo)
        + f"; about {total / 2**20:,.0f} MB to download (more once unpacked, shared through uv's "
          "cache).")
    if sys.stdin.isatty() and not yes:
        confirm(err, "Build them now?", "")
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=err, transient=False) as bar:
        tasks = {n: bar.add_task(f"{n}: waiting", total=1) for n, _ in todo}

        def log(name, msg):
            if name in tasks:
                bar.update(tasks[name], description=msg)

        def done(name, built):
            if name in tasks:
                bar.update(tasks[name], completed=1,
                           description=f"built stack {name}" if built else f"{name}: already built")

        au.build_stacks(a, log=log, on_built=done)
