"""`kit tolerances`: per output, the rtol/atol a lab's own regression tests need across machines."""

from __future__ import annotations

import sys

from .common import dataset_args


def add(sub) -> None:
    from ..views.tolerances import FORMATS

    p = sub.add_parser("tolerances",
                       help="per output, the rtol/atol the measured environment factors need "
                            "(threads, BLAS, stacks, hosts; never seeds) for your regression tests")
    p.add_argument("--pipeline", metavar="FILE.py|HASH",
                   help="your own pipeline: its file, or the hash prefix `kit runs` shows "
                        "(default: kit's own pipeline on a dataset)")
    dataset_args(p)
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="text (a table), json (a list of {output, rtol, atol, factor, level, "
                        "pin}), pytest-regressions (a YAML file of tolerances for "
                        "ndarrays_regression/num_regression), numpy (np.testing asserts)")
    p.add_argument("--out", metavar="FILE", help="write it to FILE (default: standard output)")
    p.set_defaults(func=_cmd_tolerances)


def _cmd_tolerances(args) -> int:
    from pathlib import Path

    from ..analysis.tolerances import kit_tolerances, lab_tolerances
    from ..core.atomic import out_file, write_bytes
    from ..core.errors import KitError
    from ..runs.store import Store
    from ..views.tolerances import render
    from .common import select

    # --out's one rule (kit.core.atomic.out_file), said before anything is read
    out = out_file(args.out, "tolerances.py") if args.out else None
    if args.pipeline and (args.dataset or args.n):
        raise KitError("--pipeline reads its own data: --dataset and --n are for kit's pipeline")
    store = Store()
    if args.pipeline:
        from ..app.selection import select_pipeline

        # the file as given, when it is one (a hash prefix chooses stored runs, not a file)
        path = args.pipeline if Path(args.pipeline).is_file() else "FILE.py"
        t = lab_tolerances(store, select_pipeline(store, args.pipeline), path)
    else:
        t = kit_tolerances(store, select(args, store).sha256)
    text = render(t, args.format)
    if out is None:
        sys.stdout.write(text)
    else:
        write_bytes(out, text.encode())
        print(f"kit: wrote {args.format} tolerances of {len(t['tolerances'])} output(s) to {out}",
              file=sys.stderr)
    return 0
