"""The tether: a small process between kit and a worker or tool that ends every process under
it when kit goes away, however kit goes; and the process table it reads to find them.

kit starts the tether (``argv``) in a session of its own, by its own interpreter with ``-I -S``
(the standard library alone: it starts in a tenth of a second), and the tether starts the
command. Everything the command starts is then in the tether's process group or below it:

- on Linux the tether is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so a process whose
  parent dies, a daemon that forked twice and called ``setsid()`` included, becomes the
  tether's child rather than init's: still below it, found by its parent ids;
- on Linux the kernel signals the tether (``PR_SET_PDEATHSIG``, SIGTERM) the moment kit dies,
  kill -9 included; everywhere (macOS has no parent-death signal) a thread also polls its
  parent every ``POLL`` seconds;
- when kit dies, when the tether gets SIGTERM and when the command ends, the tether kills its
  group and every process below it (``end_family``), round after round until none is left,
  then exits: with the command's own status (a signal's death mirrored) when it ended.

The command's parent is the tether, so a KIT_PARENT_PID in its environment (a worker's: it
exits once its parent is gone) names the tether. A container is not below the tether (its processes belong
to the runtime's monitor), so a container worker's tether is given the command that removes it by
name (``after``), run whenever the tether ends, kit's kill -9 included. What escapes: a process
started outside this tree on the pipeline's behalf (a systemd unit, an ``at`` job, a daemon asked over a socket);
on macOS, a daemon whose parent died before the tether looked (it went to launchd). A cgroup
would hold those too, but needs root or systemd's delegation, which a lab's machine rarely
gives a user's command.
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
import time

TYPE_CHECKING = False  # importing typing would slow the tether (-I -S); mypy reads the name
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Iterable, Mapping, Sequence
    from types import FrameType
    from typing import Any

POLL = 0.5  # seconds between looks at the parent (the only way on macOS)
_ROUNDS = 50  # of kills: a process forked while a round killed is found by the next
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


# -- the process table: kit and the tether both read it ------------------------------------------


def table() -> list[tuple[int, int, int]]:
    """(pid, parent pid, process group) of every process on this machine but zombies (they
    hold nothing and go when reaped). Linux reads /proc; elsewhere ``ps``."""
    if os.path.exists("/proc/self/stat"):
        rows = []
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read().decode("ascii", "replace")
            except OSError:  # gone meanwhile
                continue
            # the name in parentheses may hold spaces and ')': the fields follow the last ')'
            fields = stat[stat.rfind(")") + 2 :].split()
            if len(fields) > 2 and fields[0] not in ("Z", "X"):
                rows.append((int(name), int(fields[1]), int(fields[2])))
        return rows
    import subprocess

    out = subprocess.run(
        ["ps", "-A", "-o", "pid=,ppid=,pgid=,stat="], capture_output=True, text=True
    ).stdout
    rows = []
    for row in out.splitlines():
        parts = row.split()
        if len(parts) >= 4 and parts[0].isdigit() and not parts[3].startswith("Z"):
            rows.append((int(parts[0]), int(parts[1]), int(parts[2])))
    return rows


def family(root: int) -> set[int]:
    """The processes of group ``root`` and every process below ``root`` by parent ids (one that
    left the group with setsid() included), ``root`` itself and this process left out."""
    rows = table()
    below: dict[int, list[int]] = {}
    for pid, ppid, _ in rows:
        below.setdefault(ppid, []).append(pid)
    found = {pid for pid, _, pgid in rows if pgid == root}
    todo = [root, *found]
    while todo:
        for child in below.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    found.discard(root)
    found.discard(os.getpid())
    return found


def end_family(root: int, keep: Iterable[int | None] = ()) -> int:
    """SIGKILL the family of ``root`` but ``keep``, round after round until none is left, then
    ``root`` itself unless kept (last: while it lives, the orphans of the others come to it).
    Returns how many kills were sent. ``root`` must be this process, or a child not yet reaped
    (its pid can then name no other process)."""
    keep = set(keep)
    sent = 0
    for _ in range(_ROUNDS):
        left = family(root) - keep
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
                sent += 1
            except (ProcessLookupError, PermissionError):
                pass
        _reap()
        time.sleep(0.002)  # the killed become zombies: the next round no longer sees them
    if root not in keep and root != os.getpid():
        try:
            os.kill(root, signal.SIGKILL)
            sent += 1
        except (ProcessLookupError, PermissionError):
            pass
    return sent


def _reap() -> None:
    """Collect this process's dead children that are no one's business (the tether's orphans):
    never called where a child's status is wanted (kit's own children are reaped by Popen)."""
    if not _TETHERING:
        return
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return


# -- kit's side ---------------------------------------------------------------------------------


def argv(
    cmd: Sequence[object],
    *,
    passed: Iterable[int] = (),
    pid_fd: int | None = None,
    dup: tuple[int, int] | None = None,
    after: Sequence[object] | None = None,
) -> list[str]:
    """The command line that runs ``cmd`` tethered to this process. ``passed``: descriptors the
    command gets (give them to Popen's pass_fds too); ``pid_fd``: the write end of a pipe the
    tether writes the command's pid into, then closes; ``dup``: (fd, number) the command gets
    ``fd`` as (a container runtime passes on 3 and up); ``after``: a command the tether runs
    when it ends, however it ends (a container's removal by name)."""
    flags = [f"--parent={os.getpid()}"]
    if passed:
        flags.append("--pass=" + ",".join(str(fd) for fd in passed))
    if pid_fd is not None:
        flags.append(f"--pid-fd={pid_fd}")
    if dup is not None:
        flags.append(f"--dup={dup[0]}:{dup[1]}")
    if after:
        import json

        flags.append("--after=" + json.dumps([str(a) for a in after]))
    return [
        sys.executable,
        "-I",
        "-S",
        os.path.abspath(__file__),
        *flags,
        "--",
        *(str(c) for c in cmd),
    ]


def check_runnable(
    program: str, cwd: str | os.PathLike[str] | None, env: Mapping[str, str] | None
) -> None:
    """The OSError ``subprocess.run`` would raise for a program that cannot be started (the
    tether would only say so on its standard error), raised in kit before the tether starts."""
    import errno
    import shutil

    if cwd is not None and not os.path.isdir(cwd):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(cwd))
    path = (env or os.environ).get("PATH") if os.sep not in program else None
    if shutil.which(program, path=path) is None:
        if os.path.exists(program) or (os.sep not in program and shutil.which(program)):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


def end(proc: subprocess.Popen[Any], keep: Iterable[int | None] = ()) -> int:
    """End a tethered ``subprocess.Popen``'s whole family (``keep`` aside), the tether last,
    while it is not yet reaped (once reaped, its pid may name another process): nothing then.
    Returns how many kills were sent."""
    if proc.returncode is None:
        return end_family(proc.pid, keep)
    return 0


# -- the tether's side --------------------------------------------------------------------------

_TETHERING = False  # True in the tether process: its orphans are its own to reap
_DEFAULTED = tuple(getattr(signal, s) for s in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, s))


_PARENT = 0  # kit's pid: the tether's parent while kit lives
_AFTER: list[list[str]] = []  # the command run when the tether ends (a container's removal), once
_ENDING = _thread.allocate_lock()  # held while the tether ends: _end waits for one under way
AFTER_SECONDS = 60


def _run_after() -> None:
    """The ``after`` command, once, waited for at most AFTER_SECONDS (then left to itself)."""
    if not _AFTER:
        return
    cmd = _AFTER.pop()
    try:
        null = os.open(os.devnull, os.O_RDWR)
        pid = os.posix_spawnp(
            cmd[0],
            cmd,
            dict(os.environ),
            setsigdef=_DEFAULTED,
            file_actions=[(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1)],
        )
        os.close(null)
    except OSError as e:
        sys.stderr.write(f"kit: cannot run {cmd[0]}: {e.strerror or e}\n")
        return
    end = time.monotonic() + AFTER_SECONDS
    while time.monotonic() < end:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.02)


def _end(signum: int | None = None, _frame: FrameType | None = None) -> None:
    """kit is gone (or asked by SIGTERM): everything below goes, then the tether. A SIGTERM
    while kit lives came from elsewhere (the run's own `os.killpg(0, SIGTERM)`, a user's kill):
    the tether then dies of it, so kit says "killed by signal 15", not "exit 137"."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with _ENDING:  # the main thread's own ending, if it is in it, finishes first
            _finish()
    finally:
        if signum == signal.SIGTERM and os.getppid() == _PARENT:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        os._exit(137)


def _finish() -> None:
    """The ``after`` command (a container removed by name while the runtime's monitor still
    lives to say it is gone: killed first, the monitor would leave it half-stopped), then
    every process below the tether."""
    _run_after()
    end_family(os.getpid(), keep={os.getpid()})


def _watch(parent: int) -> None:
    while True:
        if os.getppid() != parent:
            _end()
        time.sleep(POLL)


def _prctl(option: int, value: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def main(args: list[str]) -> None:
    global _TETHERING, _PARENT
    _TETHERING = True
    split = args.index("--")
    opts = dict(a[2:].split("=", 1) for a in args[:split])
    cmd = args[split + 1 :]
    parent = _PARENT = int(opts["parent"])
    passed = [int(fd) for fd in opts.get("pass", "").split(",") if fd]
    if "after" in opts:
        import json

        _AFTER.append(json.loads(opts["after"]))
    actions = []
    if "dup" in opts:  # the command's copy of a passed descriptor at the number it expects
        src, dst = (int(x) for x in opts["dup"].split(":"))
        actions.append((os.POSIX_SPAWN_DUP2, src, dst))
    signal.signal(signal.SIGTERM, _end)
    if sys.platform.startswith("linux"):
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
    if os.getppid() != parent:  # kit died before the kernel was asked to say so
        _end()
    _thread.start_new_thread(_watch, (parent,))
    env = dict(os.environ)
    if "KIT_PARENT_PID" in env:  # the command's parent is the tether: it dies with it
        env["KIT_PARENT_PID"] = str(os.getpid())
    pid_fd = int(opts["pid-fd"]) if "pid-fd" in opts else None
    if pid_fd is not None:
        os.set_inheritable(pid_fd, False)
    try:
        # SIGPIPE and SIGXFSZ at their defaults, as subprocess gives them (Python ignores both)
        child = os.posix_spawnp(cmd[0], cmd, env, setsigdef=_DEFAULTED, file_actions=actions)
    except OSError as e:
        sys.stderr.write(f"kit: cannot run {cmd[0]}: {e.strerror or e}\n")
        _run_after()
        os._exit(127)
    for fd in passed:  # the command holds them now: their end is its end
        os.close(fd)
    if pid_fd is not None:
        os.write(pid_fd, str(child).encode())
        os.close(pid_fd)
    while True:  # the command's status; orphans that came to the tether are collected meanwhile
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            break
    # what the command left behind, its `after` first; a SIGTERM meanwhile (kit died) waits
    # until both are done, so the removal is never killed halfway
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    with _ENDING:
        _finish()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    code = os.waitstatus_to_exitcode(status)
    if code < 0:  # killed by a signal: so is the tether, for kit to read the same status
        try:
            signal.signal(-code, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL and SIGSTOP keep theirs
            pass
        os.kill(os.getpid(), -code)
        time.sleep(1)  # a signal whose default is to be ignored: the exit below says it
    os._exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main(sys.argv[1:])
