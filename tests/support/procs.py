"""The kit processes running on this machine now (its workers, those of one KIT_HOME), read from
/proc (Linux)."""

import time
from pathlib import Path


def kit_workers():
    """(pid, argv as bytes) of every `python -m kit.worker` process."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            args = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"kit.worker" in args:
            yield int(d.name), args


def run_folder(args) -> str:
    """The name of the folder holding a fresh worker's spec.json ("" for a warm worker)."""
    spec = next((a.decode() for a in args if a.endswith(b"spec.json")), "")
    return Path(spec).parent.name if spec else ""


def of_home(home) -> list:
    """The pids of processes started with this KIT_HOME (kit, its tether, the tool, its
    children): /proc, each one's environment. A worker, and all it starts, carries no KIT_HOME
    (a lab's code is handed no path into the store) but the home's mark, KIT_WORKER_OF."""
    from kit.envs.launch import home_mark

    marks = (f"KIT_HOME={home}".encode(), f"KIT_WORKER_OF={home_mark(home)}".encode())
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if any(m in env for m in marks) and state != "Z":
            pids.append(int(d.name))
    return pids


def none_left(home, timeout=3.0) -> list:
    end = time.time() + timeout
    while of_home(home) and time.time() < end:
        time.sleep(0.1)
    return of_home(home)


def tool_running(home, name: str) -> bool:
    for pid in of_home(home):
        try:
            if name in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                return True
        except OSError:
            pass
    return False


def wait_until(cond, proc, timeout=120.0) -> bool:
    """Whether ``cond()`` came true within ``timeout`` seconds while ``proc`` ran."""
    end = time.time() + timeout
    while time.time() < end and proc.poll() is None:
        if cond():
            return True
        time.sleep(0.005)
    return False


def running(pids) -> list:
    """Those of ``pids`` still running (a zombie runs nothing: it waits to be reaped)."""
    left = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            left.append(pid)
    return left


def group_members(pgid: int) -> list:
    """The ids of the processes in process group ``pgid`` now (zombies left out: they hold no
    resources and end when reaped)."""
    from kit.core.tether import table

    return [pid for pid, _, group in table() if group == pgid]
