"""The ``kit`` command line: thin over the library, tables on stdout, progress on stderr.

One module per command group (run, read, bundles, data, stacks, cluster, system) over shared argument
helpers (common); ``main`` is the one place errors become one line and an exit status.
"""

from __future__ import annotations

import sys

from ..core.errors import KitError
from ..core.logs import log_traceback
from . import bundles, cluster, data, read, run, stacks, system
from .common import Parser

GROUPS = (run, read, bundles, data, stacks, cluster, system)


def parser() -> Parser:
    ap = Parser(prog="kit", description="Reproducibility budget for a protein-sequence pipeline: "
                "what to pin first.")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND", parser_class=Parser)
    for group in GROUPS:
        group.add(sub)
    return ap


class _Terminated(Exception):
    """SIGTERM: end as an interrupt does (workers killed, finished runs kept), and say so."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def main(argv=None) -> int:
    import signal

    args = parser().parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return args.func(args)
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
              f"{log_traceback(e)})", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
