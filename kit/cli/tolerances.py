"""`kit tolerances`: per output, the rtol/atol a lab's own regression tests need across machines."""

from __future__ import annotations

import sys

from ..core.atomic import out_file, write_bytes
from .common import dataset_args, path, subject


def add(sub) -> None:
    from ..views.tolerances import FORMATS

    p = sub.add_parser(
        "tolerances",
        help="per output, the rtol/atol the measured environment factors need "
        "(threads, BLAS, stacks, hosts; never seeds) for your regression tests",
    )
    p.add_argument(
        "--pipeline",
        type=path,
        metavar="FILE.py|HASH",
        help="your own pipeline: its file, or the hash prefix `kit runs` shows "
        "(default: kit's own pipeline on a dataset)",
    )
    dataset_args(p)
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text (a table), json (a list of {output, rtol, atol, factor, level, "
        "pin}), pytest-regressions (a YAML file of tolerances for "
        "ndarrays_regression/num_regression), numpy (np.testing asserts)",
    )
    p.add_argument(
        "--pin",
        metavar="FACTOR[,FACTOR]",
        default="",
        help="factors your lab will pin (e.g. sklearn,blas): left out of every "
        "tolerance, and said so in what is written",
    )
    p.add_argument(
        "--out", type=path, metavar="FILE", help="write it to FILE (default: standard output)"
    )
    p.set_defaults(func=_cmd_tolerances)


def _cmd_tolerances(args) -> int:
    from ..app.facade import Kit
    from ..views.tolerances import SUFFIX
    from ..views.verbs import tolerances_page

    # --out's one rule (kit.core.atomic.out_file), said before anything is read; its example
    # is a file of the format asked for (a YAML file for pytest-regressions, not a .py)
    out = None if args.out is None else out_file(args.out, f"tolerances{SUFFIX[args.format]}")
    k = Kit()
    pin = [f.strip() for f in args.pin.split(",") if f.strip()]
    rec = k.tolerances(
        subject(
            args,
            k,
            clash="--pipeline reads its own data: --dataset and --n are for kit's pipeline",
        ),
        pin=pin,
    )
    text = tolerances_page(rec, args.format).out
    if out is None:
        sys.stdout.write(text)
    else:
        write_bytes(out, text.encode())
        print(
            f"kit: wrote {args.format} tolerances of {len(rec.data['tolerances'])} output(s) "
            f"to {out}",
            file=sys.stderr,
        )
    return 0
