"""The ``kit`` command line: thin over the library, tables on stdout, progress on stderr."""

from __future__ import annotations

import argparse
import json
import sys

from .core.errors import KitError


def _argtype(parse):
    """An argparse type from one of kit.plan's parsers (their ValueError is a usage error)."""
    def convert(text):
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    convert.__name__ = parse.__name__
    return convert


def _int_list(text: str) -> tuple:
    from .runs.plan import parse_ints

    return _argtype(parse_ints)(text)


def _counts(text: str) -> tuple:
    """Positive counts (power iterations)."""
    from .runs.plan import parse_ints

    return _argtype(lambda t: parse_ints(t, minimum=1))(text)


def _threads(text: str) -> tuple:
    """Thread counts from 1 to this machine's cores: more would measure oversubscription."""
    from .runs.plan import parse_threads

    return _argtype(parse_threads)(text)


def _floats(text: str) -> tuple:
    try:
        vals = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        vals = ()
    if not vals or any(v < 0 for v in vals):
        raise argparse.ArgumentTypeError(f"expected non-negative numbers like 1e-13,1e-7, not {text!r}")
    return vals


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}")
    return v


def _factors(text: str) -> tuple:
    from .core import factors

    names = tuple(f.strip() for f in text.split(",") if f.strip())
    bad = [f for f in names if f not in factors.plannable()]
    if bad or not names:
        hint = factors.suggest(bad[0]) if bad else None
        raise argparse.ArgumentTypeError(
            f"unknown factor {', '.join(bad) or text!r}"
            + (f" (did you mean {hint}?)" if hint else "")
            + f"; choose from {', '.join(factors.plannable())}")
    return names


def _dataset_args(p, default=None):
    p.add_argument("--dataset", default=default,
                   help="dataset name: 'synthetic' (built in) or one stored by `kit data import`")
    p.add_argument("--n", type=_positive, help="use the first N proteins (synthetic: generate N)")


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=1, sort_keys=True, default=str)
    sys.stdout.write("\n")


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line usage error that names where the fix is documented."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _parser() -> argparse.ArgumentParser:
    from .core.factors import plannable

    FACTORS = plannable()
    ap = _Parser(prog="kit", description="Reproducibility budget for a "
                 "protein-sequence pipeline: what to pin first.")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("run", help="run the pairs that measure one or more factors",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="factors:\n" + "\n".join(f"  {k:12} {v}" for k, v in FACTORS.items()))
    p.add_argument("--factor", type=_factors, required=True, help="factor name(s), comma-separated")
    _dataset_args(p, default="synthetic")
    p.add_argument("--stack", default="host",
                   help="stack for single-stack factors (default: host, kit's own interpreter)")
    p.add_argument("--threads", type=_threads, default=(), help="thread counts, e.g. 1,2 (default 1..cores)")
    p.add_argument("--seeds", type=_int_list, default=(), help="seeds, e.g. 0-9 (first is the reference)")
    p.add_argument("--iters", type=_counts, default=None, help="svd-iters levels (default 5,10,20,50)")
    p.add_argument("--jobs", type=_positive, default=1, help="runs at once (default 1)")
    p.add_argument("--eps", type=_floats, default=(), help="perturb: noise sizes, e.g. 1e-13,1e-7")
    p.add_argument("--device", choices=("cpu", "mps", "cuda"),
                   help="torch-device: the accelerator to compare with the CPU")
    p.add_argument("--torch-stack", metavar="NAME",
                   help="torch factors: run in this stack (e.g. one added with `kit stacks add`)")
    p.add_argument("--yes", action="store_true",
                   help="do not ask before a large plan or before building stacks (for scripts)")
    p.add_argument("--json", action="store_true", help="print the budget as JSON")

    p = sub.add_parser("budget", help="the budget table of the stored pairs")
    _dataset_args(p)
    p.add_argument("--factor", help="show this factor's pairs one by one")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("verdicts", help="stability of the twelve model-comparison verdicts")
    _dataset_args(p)
    p.add_argument("--set", dest="run_set", help="one run set: seeds, stacks or a factor name")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("amplify", help="how each model amplifies a small embedding perturbation")
    _dataset_args(p)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("advise", help="what to pin first, from the measured budget")
    _dataset_args(p)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("report", help="write report.md and a self-contained report.html")
    _dataset_args(p)
    p.add_argument("--out", required=True, help="folder to write into")

    p = sub.add_parser("export", help="write runs into one portable, checksummed bundle")
    _dataset_args(p)
    p.add_argument("--out", required=True, help="bundle file to write (e.g. lab.kit.tgz)")
    p.add_argument("--factor", type=_factors, help="only the runs of these factors' pairs")
    p.add_argument("--arrays", action="store_true", help="include the stage arrays (for magnitudes)")

    p = sub.add_parser("import", help="merge a bundle into the store (verified, idempotent)")
    p.add_argument("file", help="a bundle written by `kit export`")

    p = sub.add_parser("compare", help="rerun a bundle's runs here and say how far they differ",
                       description="Import a lab's bundle (`kit export`), rerun each of its runs on "
                       "this machine (same dataset, seeds, threads and stack), pair each with its "
                       "twin as the factor `host`, and answer: reproduced, bits only, within the "
                       "budget, beyond it, or a changed conclusion.")
    p.add_argument("file", help="the bundle (e.g. lab.kit)")
    p.add_argument("--jobs", type=_positive, default=1, help="runs at once (default 1)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")

    p = sub.add_parser("doctor", help="null experiment, thread control and BLAS, with remedies")
    p.add_argument("--n", type=_positive, default=200, help="proteins in the null experiment")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("store", help="verify the stored arrays and datasets; repair damage")
    ssub2 = p.add_subparsers(dest="store_cmd", required=True, metavar="ACTION", parser_class=_Parser)
    q = ssub2.add_parser("check", help="hash every stored array and dataset file again")
    q.add_argument("--repair", action="store_true",
                   help="drop damaged arrays and the runs that used them (the next `kit run` "
                        "makes them again), and orphan files")
    q.add_argument("--json", action="store_true")

    p = sub.add_parser("tui", help="the terminal app: setup, plan, run, budget, verdicts, advice")
    p.add_argument("--dataset", default="synthetic")
    from .data.dataset import FIRST_LOOK_N

    p.add_argument("--n", type=_positive, default=FIRST_LOOK_N,
                   help=f"proteins (default {FIRST_LOOK_N}: the smallest size at which all four "
                        "models learn on the built-in set)")
    p.add_argument("--threads", type=_threads, default=(), help="prefill the plan's thread counts")
    p.add_argument("--seeds", type=_int_list, default=(), help="prefill the plan's seeds")

    p = sub.add_parser("runs", help="list stored runs")
    _dataset_args(p)
    p.add_argument("--kind", choices=("pipeline", "torch", "perturb"), help="only runs of this kind")
    p.add_argument("--stack", help="only runs in this stack")
    p.add_argument("--factor", type=_factors, help="only runs in pairs of these factors")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("data", help="datasets: import, info, list")
    dsub = p.add_subparsers(dest="data_cmd", required=True, metavar="ACTION", parser_class=_Parser)
    from .data.importer import FORMATS

    q = dsub.add_parser("import", help="import a TSV or FASTA file as a dataset",
                        description="Import your own proteins as a dataset (nothing is written "
                        "unless every row is accepted).\n\n" + FORMATS,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    q.add_argument("file")
    q.add_argument("--name", required=True, help="the dataset's name (--dataset NAME later)")
    q.add_argument("--replace", action="store_true",
                   help="overwrite an imported dataset of the same name")
    q.add_argument("--no-shuffle", action="store_true",
                   help="keep the file's order (first 2/3 train) for a file already shuffled")
    q.add_argument("--filter", action="store_true",
                   help="drop (and count) rows that cannot be imported: non-standard residues, "
                        "lengths outside 60-700, unreadable labels or columns")
    q.add_argument("--split-seed", type=int, default=None, help="seed of the train/test shuffle")
    q = dsub.add_parser("info", help="what a dataset holds")
    q.add_argument("name", nargs="?", default="synthetic")
    q.add_argument("--n", type=_positive)
    q.add_argument("--json", action="store_true")
    q = dsub.add_parser("list", help="stored datasets")
    q.add_argument("--json", action="store_true")
    q = dsub.add_parser("fetch", help="fetch the paper's Swiss-Prot subset from UniProt (cached)")
    q.add_argument("--base-url", help="UniProt REST base URL (env KIT_UNIPROT_URL; a mirror)")
    q.add_argument("--refresh", action="store_true", help="fetch again even if cached")
    q.add_argument("--per-organism", type=_positive, default=1000, help="proteins sampled per organism")
    q.add_argument("--keep", type=_positive, default=6000, help="proteins kept from the shuffled pool")
    q.add_argument("--seed", type=int, default=20261005, help="sampling and shuffling seed")
    q.add_argument("--deadline", type=_positive, metavar="SECONDS",
                   help="give up after this long in all (default 1800; env KIT_FETCH_DEADLINE)")
    q.add_argument("--max-retry-after", type=_positive, metavar="SECONDS",
                   help="wait at most this long when UniProt asks to (default 120; env "
                        "KIT_FETCH_RETRY_AFTER_MAX)")
    q = dsub.add_parser("verify", help="re-hash a dataset (swissprot: its cached pages too)")
    q.add_argument("name", nargs="?", default="swissprot")
    q.add_argument("--json", action="store_true")

    p = sub.add_parser("stacks", help="pinned environments: list, build, doctor, lock")
    p.add_argument("--json", action="store_true")
    ssub = p.add_subparsers(dest="stacks_cmd", metavar="ACTION", parser_class=_Parser)
    q = ssub.add_parser("build", help="build stacks from their lock files (default: all available here)")
    q.add_argument("names", nargs="*")
    q = ssub.add_parser("doctor", help="import each built stack and record what it really has")
    q.add_argument("names", nargs="*")
    q.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    q = ssub.add_parser("factors", help="the cross-stack factors whose stacks are built here")
    q.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    q = ssub.add_parser("add", help="register an existing interpreter (a cluster's or GPU "
                        "image's PyTorch, a conda env) as a stack")
    q.add_argument("name")
    q.add_argument("python", help="path of its python executable")
    q = ssub.add_parser("remove", help="forget an external stack (its interpreter is untouched)")
    q.add_argument("name")
    q = ssub.add_parser("lock", help="regenerate uv.lock files from the stacks' pyproject.toml")
    q.add_argument("names", nargs="*")
    q.add_argument("--upgrade", action="store_true", help="allow newer versions where not pinned")
    return ap


def _select(args, store):
    """The dataset a read command shows, and why; said on stderr beside JSON output."""
    from .app.selection import select_dataset

    sel = select_dataset(store, args.dataset, args.n)
    if getattr(args, "json", False):
        from .views.tables import dataset_line

        print(dataset_line(sel.summary, sel.why), file=sys.stderr)
    return sel


def _cmd_run(args) -> int:
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    from .app import audit as au
    from .analysis.budget import budget
    from .runs.plan import SVD_ITERS, PlanOptions
    from .runs.store import Store
    from .views.tables import budget_text

    err = Console(stderr=True)
    opts = PlanOptions(threads=args.threads, seeds=args.seeds, svd_iters=args.iters or SVD_ITERS,
                       device=args.device, eps=args.eps, torch_stack=args.torch_stack)
    a = au.prepare(args.factor, args.dataset, args.n, opts, args.stack)
    if a.dataset.synthetic:
        err.print(f"[yellow]dataset {a.dataset.name}: the built-in SYNTHETIC set ({a.dataset.n} proteins)[/]")
    _build_for(a, err, args.yes)
    au.plan_runs(a)
    store = Store()
    todo = len(au.todo(a, store))
    err.print(f"{len(a.pairs)} pair(s), {len(a.specs)} run(s): {len(a.specs) - todo} stored, "
              f"{todo} to run")
    if todo > au.ASK_ABOVE and not args.yes:
        est = au.estimate_seconds(a, store)
        _confirm(err, f"{todo} runs to do" + (f" (about {est / 3600:.1f} h from past timings)"
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

        au.execute(a, store, jobs=args.jobs, on_done=done)
    b = budget(store, a.dataset.sha256)
    _print_json(b) if args.json else print(budget_text(b))
    return 0


def _build_for(a, err, yes: bool) -> None:
    """Say which stacks the plan needs built and how big they are, ask on a terminal, then build
    each with its own progress line (a script without a terminal proceeds, as it always has)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from .app import audit as au

    todo = au.stacks_to_build(a)
    if not todo:
        return
    total = sum(b or 0 for _, b in todo)
    err.print("The plan needs stacks that are not built yet: " + ", ".join(
        f"{n} (~{b / 2**20:.0f} MB)" if b else n for n, b in todo)
        + f"; about {total / 2**20:,.0f} MB to download (more once unpacked, shared through uv's "
          "cache).")
    if sys.stdin.isatty() and not yes:
        _confirm(err, "Build them now?", "")
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


def _confirm(err, what: str, refusal: str) -> None:
    """Ask on a terminal; without one, refuse (the message says how to go ahead)."""
    if not sys.stdin.isatty():
        raise KitError(f"{what} {refusal}")
    answer = err.input(f"{what} [y/N] " if what.endswith("?") else f"{what} Go ahead? [y/N] ")
    answer = answer.strip().lower()
    if answer not in ("y", "yes"):
        raise KitError("not started; nothing was run")


def _cmd_budget(args) -> int:
    from .analysis.budget import budget, pair_details
    from .runs.store import Store
    from .views.tables import budget_text, pairs_text

    from .views.tables import dataset_line

    store = Store()
    sel = _select(args, store)
    if args.factor:
        rows = pair_details(store, sel.sha256, args.factor)
        if not rows:
            raise KitError(f"no pairs of factor {args.factor!r} on dataset "
                           f"{sel.summary.get('name', sel.sha256[:12])}")
        _print_json(rows) if args.json else print(dataset_line(sel.summary, sel.why) + "\n\n"
                                                  + pairs_text(rows))
        return 0
    b = budget(store, sel.sha256, sel.summary)
    _print_json(b) if args.json else print(budget_text(b, sel.why))
    return 0


def _cmd_verdicts(args) -> int:
    from .runs.store import Store
    from .views.tables import verdicts_text
    from .analysis.verdicts import stability_report

    from .views.tables import dataset_line

    store = Store()
    sel = _select(args, store)
    rep = stability_report(store, sel.sha256, args.run_set)
    _print_json(rep) if args.json else print(dataset_line(sel.summary, sel.why) + "\n\n"
                                             + (verdicts_text(rep) or "no pairs with verdicts yet"))
    return 0


def _cmd_amplify(args) -> int:
    from .analysis.amplify import report
    from .analysis.budget import budget
    from .runs.store import Store
    from .views.tables import amplify_text

    from .views.tables import dataset_line

    store = Store()
    sel = _select(args, store)
    rep = report(budget(store, sel.sha256)["rows"])
    _print_json(rep) if args.json else print(dataset_line(sel.summary, sel.why) + "\n\n"
                                             + amplify_text(rep))
    return 0


def _cmd_advise(args) -> int:
    from .analysis.advice import advise
    from .analysis.budget import budget
    from .runs.store import Store
    from .views.tables import advice_text

    store = Store()
    sel = _select(args, store)
    a = advise(store, sel.sha256, budget(store, sel.sha256, sel.summary))
    _print_json(a) if args.json else print(advice_text(a, sel.why))
    return 0


def _cmd_report(args) -> int:
    from rich.console import Console

    from .views.report import write
    from .runs.store import Store

    from .views.tables import dataset_line

    store = Store()
    sel = _select(args, store)
    with Console(stderr=True).status("writing the report (bootstrap verdicts are computed once)"):
        out = write(store, sel.sha256, args.out)
    print(dataset_line(sel.summary, sel.why))
    print(f"wrote {out['markdown']} and {out['html']} ({len(out['plots'])} plots)")
    return 0


def _cmd_export(args) -> int:
    from rich.console import Console

    from .app.bundle import export, plan_export
    from .runs.store import Store

    from .views.tables import dataset_line

    store = Store()
    sel = _select(args, store)
    ds = sel.sha256
    Console(stderr=True).print(dataset_line(sel.summary, sel.why))
    if args.factor:
        ids = [r for p in store.pairs(ds) if p["factor"] in args.factor for r in (p["a"], p["b"])]
    else:
        ids = [r["id"] for r in store.runs(ds)]
    ids = list(dict.fromkeys(ids))
    p = plan_export(store, ids, args.arrays)
    Console(stderr=True).print(
        f"exporting {len(p['runs'])} runs, {len(p['pairs'])} pairs"
        + (f", {len(p['blobs'])} arrays ({p['array_bytes'] / 2**20:.1f} MiB before compression)"
           if args.arrays else ", hashes only (add --arrays for magnitudes)"))
    out = export(store, ids, args.out, args.arrays)
    print(f"wrote {out['file']}: {out['runs']} runs, {out['bytes'] / 2**20:.2f} MiB, "
          f"sha256 {out['sha256']}")
    return 0


def _cmd_import(args) -> int:
    from .app.bundle import import_bundle
    from .runs.store import Store

    out = import_bundle(Store(), args.file)
    print(f"imported {out['added']} new of {out['runs']} runs ({out['arrays']} arrays) from "
          f"{out['host']['name']} ({out['created']})")
    return 0


def _cmd_compare(args) -> int:
    from rich.console import Console

    from .app.reproduce import compare_bundle
    from .runs.store import Store
    from .views.tables import compare_text

    err = Console(stderr=True)
    with err.status("comparing") as status:
        rep = compare_bundle(Store(), args.file, jobs=args.jobs, log=status.update,
                             on_done=lambda s: err.print(f"ran {s.run_id[:12]} here"))
    _print_json(rep) if args.json else print(compare_text(rep))
    return 0


def _cmd_doctor(args) -> int:
    from rich.console import Console

    from .app.doctor import machine_doctor
    from .envs.platforms import detect
    from .views.tables import doctor_text

    with Console(stderr=True).status("null experiment, thread probe, BLAS"):
        rep = machine_doctor(detect(), args.n)
    _print_json(rep) if args.json else print(doctor_text(rep))
    return 0 if rep["ok"] else 1


def _cmd_tui(args) -> int:
    from .tui.app import run

    return run(args.dataset, args.n, ",".join(map(str, args.threads)),
               ",".join(map(str, args.seeds)))


def _cmd_runs(args) -> int:
    from .runs.store import Store
    from .views.tables import runs_text

    store = Store()
    ds = _select(args, store).sha256 if (args.dataset or args.n) else None
    runs = store.runs(ds)
    if args.kind:
        runs = [r for r in runs if r["spec"].get("kind", "pipeline") == args.kind]
    if args.stack:
        runs = [r for r in runs if r["spec"]["stack"] == args.stack]
    if args.factor:
        ids = {x for p in store.pairs(ds) if p["factor"] in args.factor for x in (p["a"], p["b"])}
        runs = [r for r in runs if r["id"] in ids]
    if args.json:
        _print_json(runs)
    else:
        print(runs_text(runs, store.datasets()) if runs else "no runs stored"
              + (" that match" if args.kind or args.stack or args.factor else ""))
    return 0


def _cmd_data(args) -> int:
    from .data import load_dataset, stored_datasets

    if args.data_cmd == "import":
        from .data.dataset import SPLIT_SEED
        from .data.importer import import_file

        seed = SPLIT_SEED if args.split_seed is None else args.split_seed
        ds, dropped = import_file(args.file, args.name, shuffle=not args.no_shuffle,
                                  filter_bad=args.filter, split_seed=seed, replace=args.replace)
        s = ds.summary()
        why = ", ".join(f"{n} {reason}" for reason, n in sorted(dropped.items()))
        print(f"imported {s['rows']} proteins as {ds.name!r} ({s['train']} train, {s['test']} test, "
              f"{s['positives']} positive), {sum(dropped.values())} dropped"
              + (f" ({why})" if why else "") + f"; sha256 {ds.sha256[:12]}")
        return 0
    if args.data_cmd == "fetch":
        return _data_fetch(args)
    if args.data_cmd == "verify":
        from .data import uniprot

        from .data.dataset import verify_worker_files

        if args.name == uniprot.NAME:
            out = uniprot.verify()
        else:
            ds = load_dataset(args.name)
            out = {"dataset": ds.name, "sha256": ds.sha256, "ok": True}
        out["worker_files"] = verify_worker_files()  # what runs really read, by dataset hash
        _print_json(out) if args.json else print(f"{out['dataset']}: ok, sha256 {out['sha256'][:12]}")
        return 0
    if args.data_cmd == "list":
        names = stored_datasets()
        if args.json:
            _print_json({"builtin": ["synthetic"], "stored": names})
        else:
            print("\n".join(["synthetic (built in; generated for any --n)"] + names))
        return 0
    s = load_dataset(args.name, args.n).summary()
    if args.json:
        _print_json(s)
    else:
        from tabulate import tabulate

        print(tabulate([(k, v) for k, v in s.items()], disable_numparse=True))
    return 0


def _build_stacks(names, plat, err) -> None:
    """Build each named stack that is not built yet, one status line per step."""
    from .envs.build import build_named

    for n in names:
        with err.status(f"stack {n}") as status:
            if build_named(n, plat, log=lambda msg: status.update(msg)):
                err.print(f"built stack {n}")


def _cmd_stacks(args) -> int:
    from rich.console import Console

    from .envs import external
    from .envs.platforms import detect
    from .envs.stacks import definitions, listing
    from .views.tables import stacks_text

    plat = detect()
    err = Console(stderr=True)
    defs = definitions()
    if args.stacks_cmd in ("add", "remove"):
        return _stacks_external(args, err)
    names = getattr(args, "names", None) or []
    ext = external.registry()
    for n in names:
        if n in ext and args.stacks_cmd != "doctor":
            raise KitError(f"stack {n} is external: kit runs it as it is and never builds or locks it")
        if n not in defs and n not in ext:
            raise KitError(f"unknown stack {n!r}; `kit stacks` lists them")
    if args.stacks_cmd == "build":
        avail = [s["name"] for s in listing(plat) if s["status"] != "unavailable" and s["name"] in defs]
        _build_stacks(names or avail, plat, err)
        return 0
    if args.stacks_cmd == "lock":
        from .envs.build import lock

        for lk in dict.fromkeys(defs[n].lock for n in (names or defs)):
            with err.status(f"locking {lk}"):
                lock(next(d for d in defs.values() if d.lock == lk), upgrade=args.upgrade)
            err.print(f"locked stacks/{lk}/uv.lock")
        return 0
    if args.stacks_cmd == "factors":
        from .runs.plan import STACK_FACTORS, availability

        rows = [r for r in availability(plat) if r["factor"] in STACK_FACTORS]
        if args.json:
            _print_json(rows)
        else:
            print("\n".join(r["factor"] for r in rows if r["available"] and r["built"]))
        return 0
    if args.stacks_cmd == "doctor":
        from .app.doctor import stack_doctor

        report = stack_doctor(names, plat)
        _print_json(report) if args.json else print(stacks_text(report, doctor=True))
        return 0
    rows = listing(plat)
    _print_json(rows) if args.json else print(f"platform {plat.key}\n" + stacks_text(rows))
    return 0


def _stacks_external(args, err) -> int:
    from .envs import external

    if args.stacks_cmd == "remove":
        external.remove(args.name)
        err.print(f"removed external stack {args.name} (its interpreter is untouched)")
        return 0
    with err.status(f"probing {args.python}"):
        e = external.add(args.name, args.python)
    f = e["facts"]
    pk = ", ".join(f"{k} {v}" for k, v in f["packages"].items() if k != "torch")
    torch = f["torch"]
    print(f"added external stack {args.name}: Python {f['python']} ({f['machine']}), {pk}"
          + (f", torch {torch['version']} (devices: {', '.join(f['devices'])})" if torch else ""))
    uses = external.uses(f)
    if "pipeline" in uses:
        print(f"  pipeline factors: kit run --factor seed --stack {args.name}")
    if "torch" in uses:
        print(f"  torch factors:    kit run --factor torch-seed --torch-stack {args.name}")
    return 0


def _data_fetch(args) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from .data import uniprot

    err = Console(stderr=True)
    proto = uniprot.Protocol(per_organism=args.per_organism, keep=args.keep, seed=args.seed)
    tasks = {}
    with Progress(TextColumn("{task.description:>24}"), BarColumn(), MofNCompleteColumn(),
                  console=err) as bar:
        def progress(taxid, name, done, total):
            if taxid not in tasks:
                tasks[taxid] = bar.add_task(name, total=total)
            bar.update(tasks[taxid], completed=done, total=total)

        from .data.http import Limits

        limits = Limits.from_env(deadline_s=args.deadline, retry_after_max_s=args.max_retry_after)
        ds = uniprot.fetch_dataset(args.base_url, args.refresh, proto, progress, limits)
    s = ds.summary()
    print(f"swissprot: {s['rows']} proteins ({s['train']} train, {s['test']} test), "
          f"{s['positives']} with a transmembrane segment; UniProt release {s['release']} "
          f"({s['release_date']}); sha256 {ds.sha256[:12]}")
    return 0


def _cmd_store(args) -> int:
    from rich.console import Console

    from .runs.repair import check_store
    from .runs.store import Store
    from .views.tables import store_check_text

    with Console(stderr=True).status("hashing every stored array and dataset file"):
        rep = check_store(Store(), repair=args.repair)
    _print_json(rep) if args.json else print(store_check_text(rep))
    return 0 if rep["ok"] or rep["repaired"] else 1


_COMMANDS = {"store": _cmd_store, "run": _cmd_run, "budget": _cmd_budget, "runs": _cmd_runs, "data": _cmd_data,
             "stacks": _cmd_stacks, "verdicts": _cmd_verdicts, "advise": _cmd_advise,
             "report": _cmd_report, "tui": _cmd_tui, "export": _cmd_export,
             "import": _cmd_import, "compare": _cmd_compare, "doctor": _cmd_doctor,
             "amplify": _cmd_amplify}


class _Terminated(Exception):
    """SIGTERM: end as an interrupt does (workers killed, finished runs kept), and say so."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def main(argv=None) -> int:
    import signal

    args = _parser().parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return _COMMANDS[args.cmd](args)
    except KitError as e:
        print(f"kit: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kit: interrupted; finished runs are stored, run the same command to resume",
              file=sys.stderr)
        return 130
    except _Terminated:
        print("kit: terminated; finished runs are stored, run the same command to resume",
              file=sys.stderr)
        return 143
    except BrokenPipeError:
        # the reader went away (`kit runs | head`): end quietly, as `ls | head` does
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:  # a bug: one line for the user, the traceback in a file
        print(f"kit: internal error: {type(e).__name__}: {e} (a bug in kit; the traceback is in "
              f"{_log_traceback(e)})", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)


def _log_traceback(error: BaseException) -> str:
    """Write the traceback where a bug report can find it; returns the file's path."""
    import tempfile
    import traceback
    from datetime import datetime
    from pathlib import Path

    from .core.paths import kit_home

    text = "".join(traceback.format_exception(error))
    name = f"kit-error-{datetime.now():%Y%m%d-%H%M%S}.log"
    for folder in (lambda: kit_home() / "logs", tempfile.gettempdir):
        try:
            path = Path(folder()) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            return str(path)
        except Exception:  # noqa: BLE001 - KIT_HOME may be the problem: try the next folder
            continue
    return "nowhere (no writable folder)"


if __name__ == "__main__":
    sys.exit(main())
