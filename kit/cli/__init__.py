"""The ``kit`` command line: thin over the library, tables on stdout, progress on stderr.

One module per command group (run, read, explain, bundles, data, stacks, cluster, system,
tolerances) over shared argument helpers (common); ``main`` is the one place errors become one line and an exit status.
"""

from __future__ import annotations

import errno
import os
import signal
import sys

from ..core.errors import KitError
from ..core.logs import bug_line
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


RESUMES = "finished runs are stored, run the same command to resume"
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
        option = getattr(e, "option", None)  # kit.app.verbs.BadOption: --factor's value
        if option and getattr(args, "parser", None) is not None:  # said as a usage error
            args.parser.error(f"argument {option}: {e}")
        if _signalled:  # the error an interrupt caused (a cluster closed under a run)
            return _ended_by_signal(_signalled[0])
        print(f"kit: error: {e}", file=sys.stderr)
        return e.exit_code
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
    except OSError as e:
        if _signalled:  # a connection a signal closed under a run (a cluster's)
            return _ended_by_signal(_signalled[0])
        from ..core.machine_errors import machine_state

        # a full disk, a folder this user cannot write: the machine's state, not a bug
        said = machine_state(e, _output_path() if e.errno in (errno.ENOSPC, errno.EDQUOT) else None)
        if said is None:
            return _bug(e)
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            _quiet_stdout()
        print(f"kit: error: {said}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - a bug: one line for the user, the traceback in a file
        if _signalled:
            return _ended_by_signal(_signalled[0])
        return _bug(e)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _bug(e: Exception) -> int:
    print(f"kit: {bug_line(e)}", file=sys.stderr)
    return 1


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
