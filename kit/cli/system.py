"""The machine and the store: `kit doctor`, `kit store check`, and `kit tui`."""

from __future__ import annotations

from ..data.dataset import FIRST_LOOK_N, SYNTHETIC
from .common import Parser, add_timeout, emit, int_list, path, positive, print_json, threads, words


def add(sub) -> None:
    p = sub.add_parser("doctor", help="null experiment, thread control and BLAS, with remedies")
    p.add_argument("--n", type=positive, default=200, help="proteins in the null experiment")
    p.add_argument(
        "--pipeline",
        type=path,
        metavar="FILE.py",
        help="your own pipeline file: run its null experiment alone (each thread "
        "count twice); exit 1 when a generator is loose (docs/pipelines.md)",
    )
    # a --pipeline's runs: a stuck one ends as it does in `kit run`
    add_timeout(p, "7200: its runs are made in a store of their own, new each time")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_doctor)

    p = sub.add_parser(
        "store", help="check the stored arrays and datasets (kit store check); repair damage"
    )
    ssub2 = p.add_subparsers(dest="store_cmd", required=True, metavar="ACTION", parser_class=Parser)
    # "verify" is what the help said once, and what `kit data verify` calls it: both work
    q = ssub2.add_parser(
        "check", aliases=["verify"], help="hash every stored array and dataset file again"
    )
    q.add_argument(
        "--repair",
        action="store_true",
        help="drop damaged runs and arrays and the runs that used them, with their "
        "pairs and cached results (the next `kit run` makes them again), and "
        "orphan files",
    )
    q.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_store)

    p = sub.add_parser("tui", help="the terminal app: setup, plan, run, budget, verdicts, advice")

    p.add_argument("--dataset", help="default: the most recent run's dataset, else synthetic")
    p.add_argument(
        "--n",
        type=positive,
        help=f"proteins (default: the most recent run's dataset's size, else "
        f"{FIRST_LOOK_N}, the smallest at which all four models learn on the "
        "built-in set)",
    )
    p.add_argument("--threads", type=threads, default=(), help="prefill the plan's thread counts")
    p.add_argument("--seeds", type=int_list, default=(), help="prefill the plan's seeds")
    p.set_defaults(func=_cmd_tui)


def _cmd_doctor(args) -> int:
    from rich.console import Console

    from ..app.facade import Kit
    from ..views.verbs import doctor_page

    file = words(args)["pipeline"]
    if args.timeout and file is None:  # the machine's doctor makes no runs to bound
        args.parser.error("argument --timeout: bounds the runs of a --pipeline file")
    rec = Kit().doctor(file, args.n, busy=Console(stderr=True).status, timeout=args.timeout)
    emit(doctor_page(rec, args.json))
    return 0 if rec.ok else 1


def _cmd_store(args) -> int:
    from rich.console import Console

    from ..app.facade import Kit
    from ..views.health import store_check_text

    with Console(stderr=True).status("hashing every stored array and dataset file"):
        rep = Kit().check_store(args.repair)
    print_json(rep) if args.json else print(store_check_text(rep))
    return 0 if rep["ok"] or rep["repaired"] else 1


def _cmd_tui(args) -> int:
    from ..app.facade import Kit
    from ..tui.app import KitApp, run_app

    with Kit() as k:  # the app's store for its lifetime: it never opens one itself
        dataset, n = args.dataset, args.n
        if (
            dataset is None and n is None
        ):  # open where the user's last runs are, as `kit budget` does
            dataset, n = k.opening(FIRST_LOOK_N)
        elif dataset is None:
            dataset = SYNTHETIC
        if dataset == SYNTHETIC and n is None:
            n = FIRST_LOOK_N
        return run_app(
            KitApp(
                dataset,
                n,
                threads=",".join(map(str, args.threads)),
                seeds=",".join(map(str, args.seeds)),
                store=k.store,
            )
        )
