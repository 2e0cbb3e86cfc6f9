"""What every command shares: argument types, a one-line usage error, JSON, the words that name
a command's subject, a page printed, and the question asked before a large job."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import textwrap

from ..core.errors import KitError
from ..runs.planning.options import (
    BOUNDS,
    parse_eps,
    parse_int,
    parse_iters,
    parse_jobs,
    parse_seeds,
    parse_thread_counts,
    parse_threads,
)
from ..worker.names import unknown


def argtype(parse):
    """An argparse type from a parser of kit.runs.planning.options (their ValueError is a usage error)."""

    def convert(text):
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    convert.__name__ = parse.__name__
    return convert


def int_list(text: str) -> tuple:
    """Seeds: '0-9', '1,2,4' (kit.runs.planning.options.BOUNDS['--seeds'])."""
    return argtype(parse_seeds)(text)


def counts(text: str) -> tuple:
    """Power iteration counts (svd-iters levels)."""
    return argtype(parse_iters)(text)


def threads(text: str) -> tuple:
    """Thread counts from 1 to this machine's cores: more would measure oversubscription."""
    return argtype(parse_threads)(text)


def thread_counts(text: str) -> tuple:
    """Thread counts of 1 or more: `kit run` holds them to the cores of where runs go."""
    return argtype(parse_thread_counts)(text)


def jobs_arg(text: str):
    """--jobs: "auto" or a number of runs at once (at most 4 per core)."""
    return argtype(parse_jobs)(text)


def cluster_arg(text: str) -> str:
    """--cluster: a value kit.runs.executing.cluster_kinds.parse_cluster takes, as typed (a
    malformed one is a usage error before anything starts)."""
    from ..runs.executing.cluster_kinds import parse_cluster

    argtype(parse_cluster)(text)
    return text


def names_list(text: str) -> tuple:
    """Comma-separated names (--hosts), at least two, none repeated."""
    vals = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    if len(vals) < 2:
        raise argparse.ArgumentTypeError(f"name at least two, comma-separated, not {text!r}")
    return vals


def floats(text: str) -> tuple:
    """Noise sizes (--eps): finite, 0 to 1."""
    return argtype(parse_eps)(text)


def fraction(text: str) -> float:
    """--identity, --coverage: a fraction above 0 and at most 1 (NaN and inf are neither)."""
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(
            f"give a fraction above 0 and at most 1 (0.3 = 30%), not {text!r}"
        )
    return v


def bounded(option: str):
    """The argparse type of one whole-number ``option`` within its bound (options.BOUNDS)."""
    assert option in BOUNDS, option  # every numeric option has its row in the one table
    convert = argtype(lambda text: parse_int(text, option))
    convert.__name__ = option.lstrip("-")
    return convert


positive = bounded("--n")  # a number of proteins


def add_timeout(
    p,
    default: str = "10x the slowest stored run of the subject, at least 600; "
    "7200 before any is stored",
) -> None:
    """--timeout SECONDS: each run's deadline, the same for every command that makes runs."""
    p.add_argument(
        "--timeout",
        type=bounded("--timeout"),
        metavar="SECONDS",
        help=f"end a run still going after SECONDS and record it as failed (default: {default})",
    )


def path(text: str) -> str:
    """A file or folder typed (--pipeline, --out, a bundle, a data file): an empty one is a
    usage error, not "." (`kit import ""` said ". is not a file", and `kit run --pipeline ""`
    ran kit's own pipeline as if no file were named)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path names no file; give a path")
    return text


def factor_list(text: str) -> tuple:
    """--factor of a command that also takes --pipeline: names split here, checked by the verb
    (kit.app.verbs): against kit's own factor names for a dataset, or against the pipeline's
    stored pairs (seed:NAME is any name of the file's SEEDS, which kit's own table does not
    know)."""
    return tuple(f.strip() for f in text.split(",") if f.strip())


def dataset_args(p, default=None):
    p.add_argument(
        "--dataset",
        default=default,
        help="dataset name: 'synthetic' (built in) or one stored by `kit data import` "
        "(default: the one your most recent runs used)",
    )
    p.add_argument("--n", type=positive, help="use the first N proteins (synthetic: generate N)")


def print_json(obj) -> None:
    from ..runs.store.records import as_json

    json.dump(as_json(obj), sys.stdout, indent=1, sort_keys=True, default=str)
    sys.stdout.write("\n")


def help_width() -> int:
    """--help's width: COLUMNS or the terminal's, at most 100 (long lines read badly); 80 piped."""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 20:
        return min(int(cols), 100)
    return min(shutil.get_terminal_size().columns, 100) if sys.stdout.isatty() else 80


class _Help(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs keep their line breaks, and a long line wraps under its text
    (a table of names wraps under the description column)."""

    def __init__(self, prog, **kw):
        kw.setdefault("width", help_width() - 2)  # argparse's own margin
        super().__init__(prog, **kw)

    def _fill_text(self, text, width, indent):
        out = []
        for line in text.splitlines():
            lead = re.match(r"\s+\S+\s{2,}|\s*", line).group(0)  # "  name   " of a name table
            out.append(
                textwrap.fill(
                    line,
                    width,
                    initial_indent=indent,
                    subsequent_indent=indent + " " * len(lead),
                    break_on_hyphens=False,
                )
                if line.strip()
                else ""
            )
        return "\n".join(out)


def prints_tables(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Mark a command that prints a table yet has no ``--json`` (add_wide gives it ``--wide``)."""
    parser.set_defaults(prints_tables=True)
    return parser


def add_wide(parser: argparse.ArgumentParser) -> None:
    """``--wide`` on every command that prints tables (those with ``--json`` or ``--format``,
    and those marked by prints_tables): whole lines, no cell shortened."""
    actions = parser._actions
    if any({"--json", "--format"} & set(a.option_strings) for a in actions) or parser.get_default(
        "prints_tables"
    ):
        parser.add_argument(
            "--wide",
            action="store_true",
            default=argparse.SUPPRESS,
            help="print tables and paragraphs whole, at any width (default: "
            "fit COLUMNS, the terminal, or 80 columns when piped, wrapping "
            "cells between words and shortening what still does not fit)",
        )
    for a in actions:
        if isinstance(a, argparse._SubParsersAction):
            for child in dict.fromkeys(a.choices.values()):
                add_wide(child)


class Parser(argparse.ArgumentParser):
    """argparse with a one-line usage error that names where the fix is documented, and help
    that fits (help_width)."""

    def __init__(self, *args, **kw):
        if kw.get("formatter_class") in (
            None,
            argparse.HelpFormatter,
            argparse.RawDescriptionHelpFormatter,
        ):
            kw["formatter_class"] = _Help
        super().__init__(*args, **kw)
        # every command knows its own parser, so a verb's BadOption reads as this command's
        # usage error (kit.cli.main); a subcommand's default wins over its parent's
        self.set_defaults(parser=self)

    def _check_value(self, action, value):
        # a command, --kind, --format...: the closest choices, as every typed name's
        # (kit.worker.names); argparse's own line lists them all, and suggests nothing before 3.14
        if action.choices is not None and value not in action.choices:
            listed = ", ".join(map(repr, action.choices))
            raise argparse.ArgumentError(
                action,
                unknown("invalid choice:", value, action.choices, f" (choose from {listed})"),
            )

    def parse_args(self, args=None, namespace=None):
        # a word no command takes is said by the command it was given to, pointing at its own
        # help (argparse's root parser said "see `kit --help`" for `kit verdicts --factor x`)
        args, extra = self.parse_known_args(args, namespace)
        if extra:
            getattr(args, "parser", self).error(f"unrecognized arguments: {' '.join(extra)}")
        return args

    def error(self, message):
        # argparse quotes what was typed: a newline or a control character in it stays on one
        # line, escaped, and a huge argument is cut
        message = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
        if len(message) > 500:
            message = message[:500] + "..."
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def known_stack(args, option: str | None, *names: str) -> None:
    """The one rule of a stack named on the command line (--stack, --torch-stack, `kit stacks
    build NAME`): one kit does not know is a usage error of ``option`` (exit 2, as a mistyped
    --factor or --kind), in stack_kind's words with the closest names ("unknown stack 'hots':
    did you mean host?"; a positional NAME, ``option`` None: the line alone). `kit runs
    --stack`, which also takes a stored run's stack, says the same line through its verb
    (kit.app.verbs.reading)."""
    from ..envs.kinds import UnknownStack, stack_kind

    for name in names:
        try:
            stack_kind(name)
        except UnknownStack as e:
            args.parser.error(f"argument {option}: {e}" if option else str(e))


def words(args) -> dict:
    """The words of a command that name what it is about (kit.app.selection.select's)."""
    return {k: getattr(args, k, None) for k in ("dataset", "n", "pipeline")}


def subject(args, kit, **kw):
    """The Subject a read command's words name (kit.Kit.subject: kit.app.selection.select)."""
    return kit.subject(**words(args), **kw)


def pipeline_arg(p) -> None:
    p.add_argument(
        "--pipeline",
        type=path,
        metavar="FILE.py|HASH",
        help="a lab's own pipeline (kit run --pipeline): its file, or the hash prefix "
        "`kit runs` shows",
    )


def emit(page) -> None:
    """A kit.views.verbs Page: its stderr lines first, then its output as it is."""
    for line in page.err:
        print(line, file=sys.stderr)
    sys.stdout.write(page.out)


def say_stacks(err, who: str, stacks: list) -> None:
    """Which stacks ``who`` needs built, and about how much they download."""
    total = sum(b or 0 for _, b in stacks)
    err.print(
        f"{who} needs stacks that are not built yet: "
        + ", ".join(f"{n} (~{b / 2**20:.0f} MB)" if b else n for n, b in stacks)
        + f"; about {total / 2**20:,.0f} MB of wheels to download or copy (every wheel their "
        "uv.lock lists, a local one by its file; more once unpacked, shared through uv's "
        "cache)."
    )


def confirm(err, what: str, refusal: str) -> None:
    """Ask on a terminal; without one, refuse (the message says how to go ahead)."""
    if not sys.stdin.isatty():
        raise KitError(f"{what} {refusal}")
    answer = err.input(f"{what} [y/N] " if what.endswith("?") else f"{what} Go ahead? [y/N] ")
    answer = answer.strip().lower()
    if answer not in ("y", "yes"):
        raise KitError("not started; nothing was run")


CLUSTERS = (
    "local[:N], tcp://HOST:PORT, slurm, pbs, sge, lsf, htcondor or ssh (settings: "
    "`kit cluster show`; docs/cluster.md)"
)
