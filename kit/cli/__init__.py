"""The ``kit`` command line: thin over the library, tables on stdout, progress on stderr.

One module per command group (run, read, explain, bundles, data, stacks, cluster, system,
tolerances) over shared argument helpers (common); ``main`` is the one place errors become one line and an exit status.
"""

from __future__ import annotations

import errno
import os
import signal
import sys

from ..core.errors import KitError, Refused
from ..core.said import RESUMES, Said, translate
from ..core.version import __version__
from . import bundles, cluster, data, explain, read, run, stacks, system, tolerances
from .common import Parser, add_wide

GROUPS = (run, read, explain, bundles, data, stacks, cluster, system, tolerances)


def parser() -> Parser:
    ap = Parser(
        prog="kit",
        description="Reproducibility budget for a protein-sequence pipeline: what to pin first.",
    )
    ap.add_argument("--version", action="version", version=f"kit {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND", parser_class=Parser)
    for group in GROUPS:
        group.add(sub)
    add_wide(ap)
    return ap


class _Terminated(Exception):
    """SIGTERM: end as an interrupt does (workers killed, finished runs kept), and say so."""


_signalled: list = []  # the signals received during this command, first first


def _on_signal(signum, frame):
    _signalled.append(signum)
    raise KeyboardInterrupt() if signum == signal.SIGINT else _Terminated()


_args: list = []  # the command being run: its words for what an interrupt kept


def _ended_by_signal(signum: int) -> int:
    """An interrupted command's message and exit status (130 for SIGINT, 143 for SIGTERM). What
    was kept is the command's to say (its parser's ``stopped``): runs for a plan, nothing
    half-made for a data command."""
    what = "interrupted" if signum == signal.SIGINT else "terminated"
    kept = getattr(_args[0], "stopped", RESUMES) if _args else RESUMES
    print(f"kit: {what}; {kept}", file=sys.stderr)
    return 128 + signum


def main(argv=None) -> int:
    from ..views.fit import HINT, para, shortened, unwrapped

    argv = sys.argv[1:] if argv is None else list(argv)
    ap = parser()
    if argv[:1] == ["--version"] and argv[1:]:  # argparse prints it and ignores what follows
        ap.error(f"unrecognized arguments: {' '.join(argv[1:])} (--version takes none)")
    args = ap.parse_args(argv)
    _args[:] = [args]
    unwrapped(getattr(args, "wide", False))
    # kit's own handlers for both: whatever a library does with the exception on its way up
    # (dask-jobqueue even sets SIGINT to sys.exit() when imported), a command that received
    # one ends with 130 or 143, never as if it had finished
    _signalled.clear()
    # a signal the shell told kit to ignore (nohup, a background job) stays ignored
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(s, _on_signal)
    try:
        code = args.func(args)
        if shortened():  # said once, under all it printed, whichever tables it shortened
            print(para(HINT))
        sys.stdout.flush()  # a failed write of the output is handled here, not at exit
        return _ended_by_signal(_signalled[0]) if _signalled else code
    except KitError as e:
        if isinstance(e, Refused) and e.option and getattr(args, "parser", None) is not None:
            args.parser.error(f"argument {e.option}: {e.reason}")  # said as a usage error
        if _signalled:  # the error an interrupt caused (a cluster closed under a run)
            return _ended_by_signal(_signalled[0])
        return _say(translate(e))
    except KeyboardInterrupt:
        return _ended_by_signal(signal.SIGINT)
    except _Terminated:
        return _ended_by_signal(signal.SIGTERM)
    except BrokenPipeError:
        if _signalled:
            return _ended_by_signal(_signalled[0])
        # the reader went away (`kit runs | head`): end quietly, as `ls | head` does
        _quiet_stdout()
        return 141
    except Exception as e:  # noqa: BLE001 - a bug: one line for the user, the traceback in a file
        if _signalled:  # a connection a signal closed under a run (a cluster's)
            return _ended_by_signal(_signalled[0])
        # a full disk under the output: named, and what is left of the output sent nowhere
        full = isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)
        said = translate(e, _output_path() if full else None)
        if full and not said.bug:
            _quiet_stdout()
        return _say(said)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _say(said: Said) -> int:
    print(said.line, file=sys.stderr)
    return said.exit_code


def _output_path() -> str | None:
    """The file standard output goes to, where the system says (Linux), else None."""
    try:
        path = os.readlink("/proc/self/fd/1")
    except OSError:
        return None
    return path if path.startswith("/") else None


def _quiet_stdout() -> None:
    """Send what is left of the output nowhere, so that exiting does not fail to write it again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
