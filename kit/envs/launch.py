"""Worker processes: how one starts (its folder of worker code, its environment, its command
line), which of them run now, and how they end; and a fingerprint taken by one.

The worker runs inside foreign interpreters (Python 3.9-3.14, old numpy): it is started with
only ``kit/worker`` on its PYTHONPATH and the thread variables fixed, and nothing else of kit.
Every worker kit starts is started and ended here, so ``terminate_workers`` reaches them all.
Each worker runs under a tether (``kit.core.tether``) that leads a session of its own and ends
every process below it, what a run forked, detached or daemonised included, when kit dies
(kill -9 too) and when the worker ends; kit ends the same family after each run
(``Worker.end_others``) and when it stops a worker. Its answers come on a pipe of their own
(KIT_CHANNEL), its stderr's end is kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ..core import scratch, tether
from ..core.errors import KitError, one_line
from ..core.paths import named_home, subdir
from ..core.processes import alive
from ..core.spec import RunSpec
from ..core.spools import discard
from .containers.command import CONTAINED, container_name
from .containers.inside import CHANNEL_FD

THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)
ANSWER_BYTES = 256 * 1024  # what a worker may answer to one request (or print as its JSON)
TAIL_BYTES = 64 * 1024  # the end of a worker's stderr kept: its log, and its error line
_WORKER_SRC = Path(__file__).resolve().parents[1] / "worker"
_live: set = set()  # workers running now (killed, with their groups, if kit is interrupted)
_live_lock = threading.Lock()


class PastDeadline(KitError):
    """A worker that did not answer, or end, within its run's deadline: ended, its group too."""


class TooLong(KitError):
    """A worker whose answer passed ANSWER_BYTES: nothing of it was kept past the bound."""


def worker_root() -> Path:
    """A directory holding only ``kit/worker``: the PYTHONPATH of every worker process.

    Foreign interpreters then see no other kit module and none of kit's dependencies. It lies
    outside KIT_HOME (kit.core.scratch), content-addressed: the worker's PYTHONPATH names no
    path into the store. A copy found with a file changed or gone (a cleaner of the temporary
    folder) is made anew; files added beside it (bytecode) are kept.
    """
    files = {f.name: f.read_bytes() for f in sorted(_WORKER_SRC.glob("*.py"))}
    digest = hashlib.sha256(b"".join(n.encode() + b for n, b in files.items())).hexdigest()
    root = scratch.root() / f"worker-{digest[:16]}"
    if _whole(root, files):
        return root
    tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=f".tmp-{os.getpid()}-"))
    (tmp / "kit" / "worker").mkdir(parents=True)
    (tmp / "kit" / "__init__.py").write_text(_STUB)
    for name, data in files.items():
        (tmp / "kit" / "worker" / name).write_bytes(data)
    if root.exists() or root.is_symlink():
        discard(root)
    try:
        os.replace(tmp, root)
    except OSError:  # another process won the race with identical content
        shutil.rmtree(tmp, ignore_errors=True)
    return root


_STUB = '"""Worker-only copy of kit."""\n'


def _whole(root: Path, files: dict) -> bool:
    """Whether ``root`` holds every worker file as it is now, and the stub beside them."""
    try:
        return (root / "kit" / "__init__.py").read_text() == _STUB and all(
            (root / "kit" / "worker" / n).read_bytes() == b for n, b in files.items()
        )
    except OSError:
        return False


def home_mark(home) -> str:
    """Which KIT_HOME a worker is of, as a mark and never a path (KIT_WORKER_OF in its
    environment): ``ps e`` and the tests find a home's workers, and all they started, by it."""
    return hashlib.sha256(os.path.abspath(home).encode()).hexdigest()[:16]


def _into_home(value: str, homes: tuple) -> bool:
    """Whether ``value`` names the home anywhere in it: a path list (PATH), an option with a
    path (``--dir=...``), the home itself (a longer path beside it is dropped too: harmless)."""
    return any(h in value for h in homes)


def worker_env(spec: RunSpec) -> dict:
    """The environment a worker starts with: kit's own, less KIT_HOME and every variable whose
    value names a path in it (a lab's code is handed no way into the store), with the thread
    variables and the run's own fixed."""
    home = named_home()
    homes = tuple({os.path.abspath(home), os.path.realpath(home)} - {"/"})
    env = {k: v for k, v in os.environ.items() if k != "KIT_HOME" and not _into_home(v, homes)}
    env["KIT_WORKER_OF"] = home_mark(home)
    # threads are fixed at process start, for every BLAS/OpenMP runtime at once
    env.update({v: str(spec.threads) for v in THREAD_VARS})
    env.update(dict(spec.env))
    if spec.deterministic:
        env["CUBLAS_WORKSPACE_CONFIG"] = (
            ":4096:8"  # deterministic cuBLAS needs it before CUDA starts
        )
    env["PYTHONPATH"] = str(worker_root())
    env["PYTHONNOUSERSITE"] = "1"
    # the worker exits when its parent is gone: the tether replaces this with its own pid
    env["KIT_PARENT_PID"] = str(os.getpid())
    env.pop("PYTHONHOME", None)
    return env


def container_mounts() -> list:
    """[(folder, writable)] every worker in a container sees, each at its own path: kit's
    worker code, the datasets and pipeline files (read-only); the folder its runs write in
    (a failed pipeline's traceback included) is the caller's to give (``writable``), the one
    place it may write."""
    return [(worker_root(), False), (subdir("datasets"), False), (subdir("pipelines"), False)]


class _Tail:
    """The last TAIL_BYTES of a stream, read by a thread as it comes: a worker's gigabytes of
    stderr never block it nor sit in kit's memory. Every read happens under the lock, so a
    ``take`` that drains the pipe first never misses a chunk the thread has read but not yet
    kept (CI lost a flood's last line to that window under load)."""

    def __init__(self, stream):
        self._stream = stream  # held: closing it is Popen's, reading it is this class's
        self._fd = stream.fileno()
        os.set_blocking(self._fd, False)
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._ended = False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        while not self._ended:
            try:
                if not _readable(self._fd, 1.0):
                    continue
            except (OSError, ValueError):
                return
            with self._lock:
                self._more()

    def _more(self) -> bool:
        """One read of what the pipe holds now, kept; the caller holds the lock. False when
        nothing more is there now (or ever: ``_ended``)."""
        try:
            chunk = os.read(self._fd, TAIL_BYTES)
        except BlockingIOError:
            return False
        except (OSError, ValueError):
            self._ended = True
            return False
        if not chunk:
            self._ended = True
            return False
        self._buf += chunk
        del self._buf[:-TAIL_BYTES]
        return True

    def take(self, wait: float = 0, settle: bool = False) -> str:
        """What was kept since the last take, as text; ``wait``: seconds to let the writer's
        last bytes arrive (the stream's end, when the process has exited); ``settle``: first
        take what the pipe holds now (a live worker's last lines before it answered), for at
        most a second (a forked child may go on writing)."""
        if wait:
            self._thread.join(wait)
        with self._lock:
            if settle:
                end = time.monotonic() + 1
                while self._more() and time.monotonic() < end:
                    pass
            data, self._buf = bytes(self._buf), bytearray()
        return data.decode("utf-8", "replace")


class Worker:
    """One worker process, under a tether that leads a session of its own (what a run forks is
    ended with it, and a Ctrl-C meant for kit is kit's to handle): its answers come on a pipe of
    their own (its fd named in KIT_CHANNEL), never on fd 1, which the worker points at its
    stderr, so nothing a pipeline or its libraries print can be taken for an answer; the end of
    its stderr is kept (``tail``). ``requests``: a pipe to its stdin (a serving worker's
    requests). ``proc`` is the tether's process, which ends with the worker's own status;
    ``pid`` the worker's."""

    def __init__(self, command, args: list, spec: RunSpec, cwd=None, requests=False, writable=()):
        env = worker_env(spec)
        read, write = os.pipe()
        said, pid_w = os.pipe()  # where the tether says the worker's pid
        env["KIT_CHANNEL"] = str(write)
        extra: dict = {}
        self._removal: list | None = None  # a container's removal by name, when kit ends it (kill)
        self._runtime_env: dict | None = None
        if isinstance(command, CONTAINED):  # the runtime starts the worker inside the image
            name = container_name()
            mounts = container_mounts() + [(Path(p), True) for p in writable]
            argv = [
                *command.argv(name, env, cwd, mounts, stdin=requests),
                "-m",
                "kit.worker",
                *args,
            ]
            env = {**env, **command.env()}
            removal = command.removal(name)  # none where no daemon keeps a container
            extra = {"dup": (write, CHANNEL_FD), **({"after": removal} if removal else {})}
            self._removal, self._runtime_env = removal, env
        else:
            argv = [*command, "-m", "kit.worker", *args]
        try:
            tether.check_runnable(argv[0], cwd, env)
        except BaseException:
            for fd in (read, write, said, pid_w):
                os.close(fd)
            raise
        try:
            self.proc = subprocess.Popen(
                tether.argv(argv, passed=(write,), pid_fd=pid_w, **extra),
                cwd=cwd,
                env=env,
                pass_fds=(write, pid_w),
                stdin=subprocess.PIPE if requests else subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except BaseException:
            os.close(read)
            os.close(said)
            raise
        finally:
            os.close(write)  # the worker holds the only write end: its exit is the channel's end
            os.close(pid_w)
        self.args = argv
        self._channel: int | None = read  # None once stopped
        self._pending = b""
        self._err = _Tail(self.proc.stderr)
        with _live_lock:
            _live.add(self)
        with os.fdopen(said, "rb") as f:  # empty: the tether could not start it (its stderr)
            got = f.read()
        self.pid = int(got) if got.isdigit() else None

    def send(self, request: dict) -> None:
        stdin = self.proc.stdin
        if stdin is None:  # started without ``requests``: it reads none
            raise ValueError("this worker takes no requests")
        stdin.write(json.dumps(request).encode() + b"\n")
        stdin.flush()

    def answer(self, deadline: float | None = None) -> bytes:
        """The worker's next line on its channel (b"" when it ended without one), read as it
        comes: PastDeadline once ``deadline`` (time.monotonic) passes, TooLong past ANSWER_BYTES."""
        while b"\n" not in self._pending:
            if not self._read(deadline):
                line, self._pending = self._pending, b""
                return line
        line, self._pending = self._pending.split(b"\n", 1)
        return line + b"\n"

    def everything(self, deadline: float | None = None) -> bytes:
        """All the worker says on its channel until it ends (PastDeadline, TooLong as answer)."""
        while self._read(deadline):
            pass
        got, self._pending = self._pending, b""
        return got

    def _read(self, deadline) -> bool:
        """More of the channel into ``_pending``; False at its end."""
        while True:
            channel = self._channel  # read each round: stop() may close it meanwhile
            if channel is None:  # stopped: its channel is closed
                return False
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise PastDeadline("did not answer within its deadline")
            if _readable(channel, min(left or 1.0, 1.0)):
                chunk = os.read(channel, 65536)
                if not chunk:
                    return False
                self._pending += chunk
                if len(self._pending) > ANSWER_BYTES:
                    raise TooLong(f"an answer longer than {ANSWER_BYTES // 1024} KiB")
                return True
            if self.proc.poll() is not None and not _readable(channel, 0):
                return False  # it ended; a child it forked may still hold the channel open

    def wait(self, deadline: float | None = None) -> int:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            return self.proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            raise PastDeadline("did not end within its deadline") from None

    def tail(self, wait: float = 0, settle: bool = False) -> str:
        """The end of its stderr since the last call (at most TAIL_BYTES)."""
        return self._err.take(wait, settle)

    def end_others(self) -> int:
        """Kill what the worker's runs left (forked, detached, daemonised), the worker kept;
        how many there were. In a container they live in its own process namespace, below the
        runtime's monitor, and end with the container (the worker is its first process)."""
        if self._removal is not None:
            return 0
        return tether.end(
            self.proc, keep={self.proc.pid, self.pid} if self.proc.poll() is None else ()
        )

    def kill(self, grace: float = 0) -> None:
        """The worker and its whole family, now; or once ``grace`` seconds have passed, if it
        does not end on its own first (a worker that closed its channel is ending: its status
        is its own, not the kill's)."""
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        if self._removal is not None and self.proc.returncode is None:
            self._remove_container()
        tether.end(self.proc)
        if self._removal is not None:  # whatever ended it, its container is gone too
            self._remove_container(tethered=False)
        try:
            self.proc.wait(timeout=10)  # gone once this returns: never handed out again
        except subprocess.TimeoutExpired:
            pass

    def _remove_container(self, tethered: bool = True) -> None:
        """A container worker's container, gone before its tether is killed: a tether whose
        runtime command ended is removing it (its `after`), and is given the time that takes
        (under load, podman's removal took longer than a warm worker's grace, and the kill cut
        it off, leaving the container half-removed); then kit removes it itself, until the
        runtime no longer knows it."""
        removal = self._removal
        if removal is None:  # no daemon keeps its container
            return
        if tethered and self.pid is not None and not alive(self.pid):
            try:
                self.proc.wait(timeout=tether.AFTER_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        name = removal[-1]
        exists = [*removal[: removal.index("rm")], "container", "exists", name]
        quiet: dict[str, Any] = {
            "env": self._runtime_env,
            "stdin": subprocess.DEVNULL,
            "stdout": subprocess.DEVNULL,
            "stderr": subprocess.DEVNULL,
            "timeout": 60,
        }
        end = time.monotonic() + tether.AFTER_SECONDS
        try:
            while subprocess.run(exists, **quiet).returncode == 0 and time.monotonic() < end:
                subprocess.run(removal, **quiet)
                time.sleep(0.2)
        except (OSError, subprocess.TimeoutExpired):
            pass

    def stop(self, grace: float = 0) -> None:
        """End the worker and stop tracking it: its stdin, if it has one, is closed (a serving
        worker's end of requests); it has ``grace`` seconds to exit, then is killed; what is
        left of its family is killed either way."""
        try:
            if self.proc.stdin:
                try:
                    self.proc.stdin.close()
                except OSError:  # it is gone: the flush of what was left to write failed
                    pass
            self.kill(grace)
        finally:
            if self._channel is not None:
                os.close(self._channel)
                self._channel = None
            with _live_lock:
                _live.discard(self)

    @property
    def returncode(self):
        return self.proc.returncode


def _readable(fd: int, seconds: float) -> bool:
    """Whether ``fd`` has bytes (or its end) within ``seconds``: poll, which takes any fd
    number (select stops at 1024)."""
    p = select.poll()
    p.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(p.poll(int(seconds * 1000)))


def start(command, args: list, spec: RunSpec, cwd=None, requests=False, writable=()) -> Worker:
    """Start ``python -m kit.worker ARGS`` in the interpreter ``command``, its environment that
    of ``spec``; it is tracked (``terminate_workers`` kills it) until ``stop``. ``writable``:
    the folders its runs write in, the only ones a container worker may write (a host worker
    is not confined)."""
    return Worker(command, args, spec, cwd, requests, writable)


def stop(worker: Worker, grace: float = 0) -> None:
    worker.stop(grace)


def run(
    command, args: list, spec: RunSpec, cwd=None, timeout: float | None = None, writable=()
) -> subprocess.CompletedProcess:
    """Run a worker to its end: its channel's text as stdout, the end of its stderr as stderr.
    Past ``timeout`` seconds it is ended with its group (PastDeadline); killed if waiting
    fails (an interrupt, an error), so none outlives the wait, nor anything it forked."""
    deadline = None if timeout is None else time.monotonic() + timeout
    w = start(command, args, spec, cwd, writable=writable)
    try:
        said = w.everything(deadline)
        code = w.wait(deadline)
    except BaseException:
        w.kill()
        raise
    finally:
        w.stop()
    return subprocess.CompletedProcess(
        w.args, code, said.decode("utf-8", "replace"), w.tail(wait=5)
    )


def terminate_workers() -> None:
    """Kill every worker this process started that is still running, and its group."""
    with _live_lock:
        workers = list(_live)
    for w in workers:
        w.kill()


def fingerprint(command: tuple, threads: int = 1, what: str = "--fingerprint") -> dict:
    """Run the worker's --fingerprint (or --probe-threads) in an interpreter."""
    spec = RunSpec(dataset="", stack="", stack_id="", threads=threads)
    try:
        proc = run(command, [what], spec, timeout=300)
    except (PastDeadline, TooLong) as e:  # said as any other interpreter that does not run it
        raise RuntimeError(f"its worker {e}") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(one_line(last))
    return json.loads(proc.stdout)
