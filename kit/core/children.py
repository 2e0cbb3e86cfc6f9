"""Child tools (mmseqs, uv) run so that they end with kit, even after a kill -9 of kit.

A tool may start its own children (MMseqs2's workflows run a shell script that runs mmseqs
again; uv runs builds): killing the one process kit started leaves the rest running. So each
tool runs under a small tether, a Python process that leads its own process group (a new
session) and ends the whole group when kit goes away:

- on Linux the kernel tells the tether (``prctl(PR_SET_PDEATHSIG)``) the moment kit dies,
  however it dies;
- everywhere (macOS has no parent-death signal) the tether also polls its parent every
  ``_POLL`` seconds and ends the group once it has changed;
- kit itself kills the group (``killpg``) when the call ends in an exception (its SIGTERM and
  SIGINT handlers raise one), when the tool ends (a straggler of its group with it), and at exit.
"""

from __future__ import annotations

import atexit
import errno
import os
import shutil
import signal
import subprocess
import sys
import threading

_POLL = 0.5

# the tether: argv = [parent pid, command...]; exits with the tool's status (128+N for signal N)
_TETHER = r"""
import os, signal, subprocess, sys, threading, time
parent = int(sys.argv[1])
def end(*_):
    try:
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(137)
signal.signal(signal.SIGTERM, end)
if sys.platform.startswith("linux"):
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)
    except Exception:
        pass
def watch():
    while True:
        if os.getppid() != parent:
            end()
        time.sleep(%(poll)r)
threading.Thread(target=watch, daemon=True).start()
try:
    p = subprocess.Popen(sys.argv[2:])
except OSError as e:
    sys.stderr.write("kit: cannot run %%s: %%s\n" %% (sys.argv[2], e.strerror or e))
    os._exit(127)
rc = p.wait()
os._exit(rc if rc >= 0 else 128 - rc)
""" % {"poll": _POLL}

_groups: set = set()  # process groups of tethered tools still running
_lock = threading.Lock()


def run(cmd: list, *, cwd=None, env=None, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, errors=None, timeout=None) -> subprocess.CompletedProcess:
    """``subprocess.run`` of ``cmd``, tethered: the tool and every process it starts end with
    kit. An OSError (FileNotFoundError, PermissionError) when ``cmd[0]`` cannot be run, as
    ``subprocess.run`` would raise; ``subprocess.TimeoutExpired`` past ``timeout``, the group
    killed."""
    cmd = [str(c) for c in cmd]
    _check_runnable(cmd[0], cwd, env)
    proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _TETHER, str(os.getpid()), *cmd],
                            cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr,
                            text=text, errors=errors, start_new_session=True)
    with _lock:
        _groups.add(proc.pid)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        proc.communicate()
        raise subprocess.TimeoutExpired(cmd, timeout) from None
    except BaseException:  # an interrupt, SIGTERM (kit.cli raises one): the group goes
        kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        kill_group(proc.pid)  # a straggler the tool left in its group, if any
        with _lock:
            _groups.discard(proc.pid)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def kill_group(pgid: int) -> None:
    """SIGKILL every process of group ``pgid`` (none left: nothing to do)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _check_runnable(program: str, cwd, env) -> None:
    """The OSError ``subprocess.run`` would raise for a program that cannot be started (the
    tether would only say so on its standard error)."""
    if cwd is not None and not os.path.isdir(cwd):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(cwd))
    path = (env or os.environ).get("PATH") if os.sep not in program else None
    if shutil.which(program, path=path) is None:
        if os.path.exists(program) or (os.sep not in program and shutil.which(program)):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


@atexit.register
def _end_all() -> None:
    """At exit, the groups of tools still running (a thread's, when the main thread ended)."""
    with _lock:
        left = list(_groups)
    for pgid in left:
        kill_group(pgid)
