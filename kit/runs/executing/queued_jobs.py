"""Batch jobs whose worker has not joined yet: one that leaves the queue is named and replaced.

dask-jobqueue submits a job and then knows nothing of it: a job cancelled while pending, or one
that fails as it starts (a wrong python, a prologue that exits), never brings its worker, and
the plan used to wait the whole wait_s and guess why. Here the batch system is asked (only
while some job's worker has not joined) what became of each such job; one that left the queue
is said in one line ("job 123 was cancelled before it started") and submitted again, up to the
tries a lost worker's run gets. Slurm is asked through squeue, then sacct where accounting is
on, else scontrol; other systems are not watched (their jobs are waited for as before).
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from dataclasses import dataclass

LOOK_S = 5.0    # how often the queue is asked, while some job's worker has not joined
ASK_S = 30.0    # the longest one squeue/sacct/scontrol may take: a slow controller is no answer
_NOT_STARTED = ("", "None", "Unknown", "(null)", "None assigned")


@dataclass(frozen=True)
class JobEnd:
    """How a job that left the queue ended, as far as its batch system still says."""

    state: str = ""       # CANCELLED, FAILED, TIMEOUT, ...; "" = no longer known
    started: bool = False
    code: str = ""        # the job's exit code ("127:0")
    err: str = ""         # its stderr file, as the batch system names it


def _ask(argv: list) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=ASK_S)
    except (OSError, subprocess.SubprocessError):  # not on PATH, or no answer in time
        return None


def _slurm_end(job: str) -> JobEnd:
    """What Slurm still knows of a job that left its queue: sacct (accounting), else scontrol
    (ended jobs stay there for MinJobAge, 300 s by default), else nothing."""
    p = _ask(["sacct", "-n", "-X", "-P", "-j", job, "-o", "State,ExitCode,Start,NodeList"])
    line = p.stdout.strip().splitlines()[0] if p and p.returncode == 0 and p.stdout.strip() else ""
    if line.count("|") == 3:
        state, code, start, nodes = line.split("|")
        return JobEnd(state.split()[0] if state.split() else "",
                      start not in _NOT_STARTED and nodes not in _NOT_STARTED, code)
    p = _ask(["scontrol", "show", "job", job, "-o"])
    if p is None or p.returncode != 0:
        return JobEnd()
    f = dict(re.findall(r"(\w+)=(\S*)", p.stdout))
    # older Slurm (22.05) names the file by its pattern: dask-worker-%J.err
    err = re.sub(r"%[jJ]", job, f.get("StdErr", "")).replace("%x", f.get("JobName", ""))
    return JobEnd(f.get("JobState", ""), f.get("BatchHost", "") not in _NOT_STARTED,
                  f.get("ExitCode", ""), err)


def slurm_jobs(jobs: list) -> dict:
    """{job id: None while it is in the queue, else its JobEnd}; {} when squeue does not answer
    (a controller that is down says nothing about the jobs)."""
    p = _ask(["squeue", "-h", "-j", ",".join(jobs), "-o", "%i %T %r"])
    if p is None or (p.returncode != 0 and "Invalid job id" not in p.stderr):
        return {}
    queued = {w[0]: " ".join(w[1:]) for w in map(str.split, p.stdout.splitlines()) if w}
    return {j: queued[j] if j in queued else _slurm_end(j) for j in jobs}


# the systems whose queue is watched: {system: what slurm_jobs answers}
QUEUES = {"slurm": slurm_jobs}


def said(job: str, end: JobEnd) -> str:
    """One line: what became of a job that left the queue before its worker joined."""
    state = end.state.upper()
    if not state:
        return f"job {job} left the queue before its worker joined"
    if state == "CANCELLED":
        return (f"job {job} was cancelled before its worker joined" if end.started
                else f"job {job} was cancelled before it started")
    if state == "TIMEOUT":
        return f"job {job} reached its walltime before its worker joined"
    what = {"FAILED": "failed", "COMPLETED": "ended", "OUT_OF_MEMORY": "ran out of memory",
            "NODE_FAIL": "lost its node", "BOOT_FAIL": "failed to boot its node",
            "PREEMPTED": "was preempted"}.get(state, f"ended {state}")
    line = f"job {job} {what} before its worker joined"
    if end.code and state in ("FAILED", "COMPLETED"):
        line += f" (exit code {end.code.split(':')[0]})"
    tail = _last_line(end.err)
    return line + (f": {tail}" if tail else "")


def _last_line(path: str) -> str:
    """The last line of a job's stderr, when it is readable here (a shared file system)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 4096))
            lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [ln for ln in lines if ln]
    return lines[-1][:200] if lines else ""


class QueuedJobs:
    """The jobs of one dask-jobqueue cluster, watched until each one's worker joins.

    ``classes``: {worker spec name: its node class, "" when the workers name their own}. Each
    name is a slot: a job that leaves the queue before its worker joins is submitted again in
    it, ``tries`` jobs a slot in all (as a lost worker's run gets ``tries`` submissions)."""

    def __init__(self, system: str, tries: int, classes: dict):
        self.ask = QUEUES.get(system)
        self.tries, self.classes = tries, dict(classes)
        self.seen: dict = {}      # slot: the job ids it has had, in order
        self.joined: set = set()  # job ids whose worker joined
        self.ended: list = []     # (slot, line) of every job that left before its worker joined
        self.spent: dict = {}     # slot: the line of its last job, once its tries are spent
        self.queued: dict = {}    # job id: its queue state ("PENDING Resources"), at the last look
        self._last = 0.0
        self._busy = threading.Lock()

    def look(self, cluster, resubmit) -> list:
        """Ask the queue about the jobs whose worker has not joined (every LOOK_S at most) and
        submit again each that left it; returns what happened, one line each.
        ``resubmit(slot, job)``: the new job's id (raises when the submission fails)."""
        if self.ask is None or time.monotonic() - self._last < LOOK_S:
            return []
        if not self._busy.acquire(blocking=False):  # another thread is looking
            return []
        try:
            self._last = time.monotonic()
            return self._look(cluster, resubmit)
        finally:
            self._busy.release()

    def _look(self, cluster, resubmit) -> list:
        names = {str(w.get("name")) for w in list(dict(cluster.scheduler_info)
                                                   .get("workers", {}).values())}
        jobs = {}
        for slot, job in list(dict(cluster.workers).items()):
            jid = getattr(job, "job_id", None)
            if jid is None or slot in self.spent:
                continue
            if jid not in self.seen.setdefault(slot, []):
                self.seen[slot].append(jid)
            if slot in names:
                self.joined.add(jid)
            if jid not in self.joined:
                jobs[jid] = (slot, job)
        self.queued = {}
        if not jobs:
            return []
        states = self.ask(list(jobs))
        self.queued = {j: s for j, s in states.items() if isinstance(s, str)}
        out = []
        for jid, end in states.items():
            if isinstance(end, str) or jid not in jobs:
                continue
            slot, job = jobs[jid]
            line = said(jid, end)
            self.ended.append((slot, line))
            n = len(self.seen[slot])
            if n >= self.tries:
                self.spent[slot] = f"{line} ({n} jobs tried)"
                out.append(f"{line}; not submitted again ({n} of {self.tries} tries)")
                continue
            try:
                new = resubmit(slot, job)
            except Exception as e:  # the batch system refused it: the slot is spent
                self.spent[slot] = f"{line}; submitting another failed: {e}"
                out.append(self.spent[slot])
                continue
            if new is None:  # Dask's own step replaced it meanwhile (a worker lost after joining)
                continue
            self.seen[slot].append(new)
            out.append(f"{line}; submitted job {new} (try {n + 1} of {self.tries})")
        return out

    def hopeless(self, node_class: str | None = None) -> str | None:
        """Why no job can bring a worker (of ``node_class``; None: any) any more: each slot
        that could has spent its tries. None while some slot may still bring one."""
        slots = [s for s, c in self.classes.items()
                 if node_class is None or not c or c == node_class]
        if not slots or any(s not in self.spent for s in slots):
            return None
        return "; ".join(dict.fromkeys(self.spent[s] for s in slots))

    def waiting(self) -> str:
        """The jobs whose worker has not joined, as the queue held them at the last look."""
        out = []
        for job, state in self.queued.items():
            word, _, reason = state.partition(" ")
            if word == "PENDING":
                out.append(f"job {job} is pending" + (f" ({reason})" if reason else ""))
            elif word == "RUNNING":  # started, yet no worker: its python, its prologue
                out.append(f"job {job} is running but its worker has not joined (can the "
                           "workers' python import kit? the job's output says)")
            else:
                out.append(f"job {job} is {word.lower()}")
        return "; ".join(out)

    def text(self) -> str | None:
        """What left the queue before its worker joined, in one line (None: nothing did)."""
        if not self.ended:
            return None
        lines = [line for _, line in self.ended]
        return (f"{len(lines)} job(s) left the queue before their worker joined: "
                + "; ".join(lines[:3]) + ("; ..." if len(lines) > 3 else ""))

