"""Batch jobs whose worker has not joined yet: one that leaves the queue is named and replaced.

dask-jobqueue submits a job and then knows nothing of it: a job cancelled while pending, or one
that fails as it starts (a wrong python, a prologue that exits), never brings its worker, and
a plan would wait the whole wait_s and then guess why. So the batch system is asked (only
while some job's worker has not joined) what became of each such job; one that left the queue
is said in one line ("job 123 was cancelled before it started") and submitted again, up to the
tries a lost worker's run gets. Slurm is asked through squeue, then sacct where accounting is
on, else scontrol; PBS (OpenPBS, PBS Pro, Torque) through qstat -f, then its history (qstat -x);
SGE through qstat, then qacct; LSF through bjobs -json (10.1 or later); HTCondor through condor_q,
then condor_history. Only the Slurm reader has met a live system (tests/support/slurm.py); the
others are checked against the output formats these systems document and print, recorded in
tests/runs/executing/test_queued_jobs.py. A job still held in its queue (PBS H, SGE Eqw, HTCondor
held) has not left it: it is waited for, and named with its reason when no worker came.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

LOOK_S = 5.0  # how often the queue is asked, while some job's worker has not joined
ASK_S = 30.0  # the longest one squeue/sacct/scontrol may take: a slow controller is no answer
_NOT_STARTED = ("", "None", "Unknown", "(null)", "None assigned")


@dataclass(frozen=True)
class JobEnd:
    """How a job that left the queue ended, as far as its batch system still says."""

    state: str = ""  # CANCELLED, FAILED, TIMEOUT, ...; "" = no longer known
    started: bool = False
    code: str = ""  # the job's exit code ("127:0")
    err: str = ""  # its stderr file, as the batch system names it
    why: str = ""  # the system's own words (a PBS comment, an LSF exit reason), said when
    # the stderr file is not readable here


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
        return JobEnd(
            state.split()[0] if state.split() else "",
            start not in _NOT_STARTED and nodes not in _NOT_STARTED,
            code,
        )
    p = _ask(["scontrol", "show", "job", job, "-o"])
    if p is None or p.returncode != 0:
        return JobEnd()
    f = dict(re.findall(r"(\w+)=(\S*)", p.stdout))
    # older Slurm (22.05) names the file by its pattern: dask-worker-%J.err
    err = re.sub(r"%[jJ]", job, f.get("StdErr", "")).replace("%x", f.get("JobName", ""))
    return JobEnd(
        f.get("JobState", ""),
        f.get("BatchHost", "") not in _NOT_STARTED,
        f.get("ExitCode", ""),
        err,
    )


def slurm_jobs(jobs: list) -> dict:
    """{job id: None while it is in the queue, else its JobEnd}; {} when squeue does not answer
    (a controller that is down says nothing about the jobs)."""
    p = _ask(["squeue", "-h", "-j", ",".join(jobs), "-o", "%i %T %r"])
    if p is None or (p.returncode != 0 and "Invalid job id" not in p.stderr):
        return {}
    queued = {w[0]: " ".join(w[1:]) for w in map(str.split, p.stdout.splitlines()) if w}
    return {j: queued[j] if j in queued else _slurm_end(j) for j in jobs}


def _pbs_fields(text: str) -> dict:
    """{job number: {attribute: value}} from `qstat -f -1` (one line an attribute, the same in
    OpenPBS, PBS Pro and Torque): "Job Id: 123.server", then "    name = value" lines."""
    jobs: dict[str, dict[str, str]] = {}
    f: dict[str, str] | None = None
    for line in text.splitlines():
        if line.startswith("Job Id:"):
            f = jobs.setdefault(line.split(":", 1)[1].strip().split(".")[0], {})
        elif f is not None and " = " in line:
            name, _, value = line.partition(" = ")
            f[name.strip()] = value.strip()
    return jobs


# job_state of a job still in the queue; F (OpenPBS's history) and C (Torque) have ended
_PBS_QUEUED = {
    "Q": "PENDING",
    "W": "PENDING",
    "T": "PENDING",
    "H": "HELD",
    "R": "RUNNING",
    "E": "RUNNING",
    "B": "RUNNING",
    "S": "SUSPENDED",
    "U": "SUSPENDED",
}
# OpenPBS's negative Exit_status values that are a limit, not the job's own exit (job.h)
_PBS_LIMITS = {"-29": "TIMEOUT", "-27": "OUT_OF_MEMORY", "-26": "OUT_OF_MEMORY"}


def _pbs_end(f: dict) -> JobEnd:
    code = f.get("Exit_status", f.get("exit_status", ""))  # PBS Pro / OpenPBS, Torque
    started = bool(f.get("exec_host") or f.get("stime") or f.get("start_time"))
    err, why = f.get("Error_Path", "").partition(":")[2], f.get("comment", "")  # host:/path
    if f.get("job_state") not in ("F", "C"):  # M: moved to another server
        return JobEnd("", started, code, err, why)
    # substate 91 is OpenPBS's "terminated" (a qdel); Torque has no substate, and a job that
    # never ran and has no exit status can only have been deleted
    if f.get("substate") == "91" or not (started or code):
        return JobEnd("CANCELLED", started, code, err, why)
    state = _PBS_LIMITS.get(code, "COMPLETED" if code == "0" else "FAILED")
    return JobEnd(state, started, code, err, why)


def pbs_jobs(jobs: list) -> dict:
    """As slurm_jobs, for PBS: qstat -f, and qstat -x -f for the jobs it says have finished
    (OpenPBS keeps them in its history; Torque shows its own finished jobs as C)."""
    p = _ask(["qstat", "-f", "-1", *jobs])
    if p is None or (
        p.returncode != 0
        and "Job Id:" not in p.stdout
        and not re.search("Unknown Job Id|Job has finished", p.stderr)
    ):
        return {}
    seen = _pbs_fields(p.stdout)
    # "qstat: 123.server Job has finished, use -x or -H to obtain historical job information"
    done = [
        w[1].split(".")[0]
        for w in map(str.split, p.stderr.splitlines())
        if len(w) > 1 and "Job has finished" in " ".join(w)
    ]
    done = [j for j in jobs if j in done and j not in seen]
    if done:
        h = _ask(["qstat", "-x", "-f", "-1", *done])
        seen.update(_pbs_fields(h.stdout) if h else {})
    out = {}
    for j in jobs:
        f = seen.get(j)
        word = _PBS_QUEUED.get(f.get("job_state", "")) if f else None
        out[j] = (
            JobEnd()
            if f is None
            else _pbs_end(f)
            if word is None
            else f"{word} {f.get('comment', '')}".strip()
        )
    return out


def _sge_state(letters: str) -> str:
    """The word for SGE's state letters (qw, hqw, Eqw, r, t, dr, s, ...), first match wins."""
    for c, word in (
        ("E", "ERROR"),
        ("d", "DELETING"),
        ("h", "HELD"),
        ("r", "RUNNING"),
        ("t", "RUNNING"),
        ("s", "SUSPENDED"),
        ("S", "SUSPENDED"),
        ("T", "SUSPENDED"),
    ):
        if c in letters:
            return word
    return "PENDING"


def _sge_end(job: str) -> JobEnd:
    """What SGE's accounting says of a job that left its queue. A job deleted while pending has
    no record (qacct: "error: job id 12 not found"), so it can only be said to have left."""
    p = _ask(["qacct", "-j", job])
    if p is None or p.returncode != 0:
        return JobEnd()
    f = {}
    for line in p.stdout.splitlines():  # "failed       100 : assumedly after job"
        name, _, value = line.strip().partition(" ")
        f[name] = value.strip()  # a job array's tasks: the last record
    failed, _, why = f.get("failed", "0").partition(":")
    code, started = f.get("exit_status", ""), f.get("start_time", "-/-") != "-/-"
    if f.get("deleted_by"):  # Open Cluster Scheduler names who deleted a job
        return JobEnd("CANCELLED", started, code, "", f["deleted_by"])
    if failed.strip() != "0":  # SGE's own failure ("1 : assumedly before job"), not the job's exit
        return JobEnd("FAILED", started, "", "", why.strip())
    return JobEnd("COMPLETED" if code == "0" else "FAILED", started, code)


def sge_jobs(jobs: list) -> dict:
    """As slurm_jobs, for SGE (Son of Grid Engine, Univa/Altair GE, Open Cluster Scheduler):
    this user's jobs in qstat, then qacct -j for each that left it."""
    p = _ask(["qstat", "-u", getpass.getuser()])
    if p is None or p.returncode != 0:
        return {}
    queued = {}
    for w in map(str.split, p.stdout.splitlines()):  # job-ID prior name user state ...
        if len(w) > 4 and w[0].isdigit():
            queued[w[0]] = f"{_sge_state(w[4])} {w[4]}"
    return {j: queued[j] if j in queued else _sge_end(j) for j in jobs}


_LSF_QUEUED = {
    "PEND": "PENDING",
    "WAIT": "PENDING",
    "PROV": "PENDING",
    "PSUSP": "HELD",
    "RUN": "RUNNING",
    "USUSP": "SUSPENDED",
    "SSUSP": "SUSPENDED",
}
# LSF's termination reasons (bjobs exit_reason "TERM_OWNER: job killed by owner")
_LSF_TERM = {
    "TERM_OWNER": "CANCELLED",
    "TERM_ADMIN": "CANCELLED",
    "TERM_FORCE_OWNER": "CANCELLED",
    "TERM_FORCE_ADMIN": "CANCELLED",
    "TERM_RUNLIMIT": "TIMEOUT",
    "TERM_MEMLIMIT": "OUT_OF_MEMORY",
    "TERM_PREEMPT": "PREEMPTED",
}


def lsf_jobs(jobs: list) -> dict:
    """As slurm_jobs, for LSF: one bjobs -a -json (finished jobs stay for CLEAN_PERIOD)."""
    p = _ask(
        [
            "bjobs",
            "-a",
            "-json",
            "-o",
            "jobid stat exit_code exec_host exit_reason pend_reason error_file",
            *jobs,
        ]
    )
    if p is None:  # no answer
        return {}
    try:  # "Cannot connect to LSF. Please wait ..." may come before the JSON
        records = json.loads(p.stdout[p.stdout.index("{") :])["RECORDS"]
    except (ValueError, KeyError, TypeError):  # an LSF before 10.1
        return {}
    got = {str(r.get("JOBID")): r for r in records if isinstance(r, dict) and r.get("STAT")}
    out: dict[str, str | JobEnd] = {}
    for j in jobs:
        r = got.get(j, {})  # a job LSF no longer knows has a record with an error and no STAT
        stat = r.get("STAT", "")
        if stat in _LSF_QUEUED or stat not in ("", "DONE", "EXIT"):
            reason = r.get("PEND_REASON", "").strip(" ;") if stat == "PEND" else ""
            out[j] = f"{_LSF_QUEUED.get(stat, stat)} {reason}".strip()
            continue
        why = r.get("EXIT_REASON", "")
        state = (
            "COMPLETED"
            if stat == "DONE"
            else _LSF_TERM.get(why.split(":")[0], "FAILED")
            if stat
            else ""
        )
        out[j] = JobEnd(
            state,
            r.get("EXEC_HOST", "") not in ("", "-"),
            r.get("EXIT_CODE", ""),
            r.get("ERROR_FILE", "").replace("%J", j).replace("%I", "0"),
            why,
        )
    return out


_CONDOR_ATTRS = (
    "ClusterId,ProcId,JobStatus,ExitCode,ExitBySignal,ExitSignal,JobStartDate,"
    "HoldReason,RemoveReason,Err,Iwd"
)
# JobStatus of a job still in the queue: 1 idle, 2 running, 5 held, 6 transferring its
# output, 7 suspended; 3 (removed) and 4 (completed) have ended
_CONDOR_QUEUED = {1: "PENDING", 2: "RUNNING", 5: "HELD", 6: "RUNNING", 7: "SUSPENDED"}


def _condor_ads(argv: list) -> dict | None:
    """{"cluster.proc": its job ad} from condor_q or condor_history -json; None: no answer."""
    p = _ask(argv)
    if p is None or p.returncode != 0:
        return None
    try:
        ads = json.loads(p.stdout) if p.stdout.strip() else []  # no job matched: no output
    except ValueError:
        return None
    return {f"{a.get('ClusterId')}.{a.get('ProcId')}": a for a in ads if isinstance(a, dict)}


def _condor_end(ad: dict) -> JobEnd:
    started = "JobStartDate" in ad
    err = os.path.join(ad.get("Iwd", ""), ad["Err"]) if ad.get("Err") else ""
    if ad.get("JobStatus") == 3:  # condor_rm
        return JobEnd("CANCELLED", started, "", err, ad.get("RemoveReason", ""))
    if ad.get("JobStatus") != 4:
        return JobEnd("", started, "", err)
    if ad.get("ExitBySignal"):
        return JobEnd("FAILED", started, "", err, f"killed by signal {ad.get('ExitSignal', '?')}")
    code = str(ad.get("ExitCode", ""))
    return JobEnd("COMPLETED" if code == "0" else "FAILED", started, code, err)


def htcondor_jobs(jobs: list) -> dict:
    """As slurm_jobs, for HTCondor: condor_q, then condor_history for the jobs it no longer
    holds (job ids "12.0", as dask-jobqueue makes them)."""
    ads = _condor_ads(["condor_q", "-json", "-attributes", _CONDOR_ATTRS, *jobs])
    if ads is None:
        return {}
    out = {}
    for j in jobs:
        ad = ads.get(j) or (
            _condor_ads(["condor_history", "-json", "-attributes", _CONDOR_ATTRS, "-limit", "1", j])
            or {}
        ).get(j, {})
        word = _CONDOR_QUEUED.get(ad.get("JobStatus"))
        out[j] = (
            _condor_end(ad)
            if word is None
            else (f"{word} {ad.get('HoldReason', '')}".strip() if word == "HELD" else word)
        )
    return out


# the systems whose queue is watched: {system: its reader, answering as slurm_jobs does}
QUEUES = {
    "slurm": slurm_jobs,
    "pbs": pbs_jobs,
    "sge": sge_jobs,
    "lsf": lsf_jobs,
    "htcondor": htcondor_jobs,
}


def said(job: str, end: JobEnd) -> str:
    """One line: what became of a job that left the queue before its worker joined."""
    state = end.state.upper()
    if not state:
        return f"job {job} left the queue before its worker joined"
    if state == "CANCELLED":
        return (
            f"job {job} was cancelled before its worker joined"
            if end.started
            else f"job {job} was cancelled before it started"
        )
    if state == "TIMEOUT":
        return f"job {job} reached its walltime before its worker joined"
    what = {
        "FAILED": "failed",
        "COMPLETED": "ended",
        "OUT_OF_MEMORY": "ran out of memory",
        "NODE_FAIL": "lost its node",
        "BOOT_FAIL": "failed to boot its node",
        "PREEMPTED": "was preempted",
    }.get(state, f"ended {state}")
    line = f"job {job} {what} before its worker joined"
    if end.code and state in ("FAILED", "COMPLETED"):
        line += f" (exit code {end.code.split(':')[0]})"
    tail = _last_line(end.err) or end.why[:200]
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
        self.seen: dict = {}  # slot: the job ids it has had, in order
        self.joined: set = set()  # job ids whose worker joined
        self.ended: list = []  # (slot, line) of every job that left before its worker joined
        self.spent: dict = {}  # slot: the line of its last job, once its tries are spent
        self.queued: dict = {}  # job id: its queue state ("PENDING Resources"), at the last look
        self._last = 0.0
        self._busy = threading.Lock()

    def look(self, cluster, resubmit) -> list:
        """Ask the queue about the jobs whose worker has not joined (every LOOK_S at most) and
        submit again each that left it; returns what happened, one line each.
        ``resubmit(slot, job)``: the new job's id (raises when the submission fails)."""
        ask = self.ask
        if ask is None or time.monotonic() - self._last < LOOK_S:
            return []
        if not self._busy.acquire(blocking=False):  # another thread is looking
            return []
        try:
            self._last = time.monotonic()
            return self._look(ask, cluster, resubmit)
        finally:
            self._busy.release()

    def _look(self, ask: Callable[[list], dict], cluster, resubmit) -> list:
        names = {
            str(w.get("name"))
            for w in list(dict(cluster.scheduler_info).get("workers", {}).values())
        }
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
        states = ask(list(jobs))
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
            except Exception as e:  # noqa: BLE001 - the batch system refused it: the slot is spent
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
        slots = [
            s for s, c in self.classes.items() if node_class is None or not c or c == node_class
        ]
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
                out.append(
                    f"job {job} is running but its worker has not joined (can the "
                    "workers' python import kit? the job's output says)"
                )
            elif word in ("HELD", "ERROR"):  # held in its queue until someone releases it
                out.append(
                    f"job {job} is {'held' if word == 'HELD' else 'in error'}"
                    + (f" ({reason})" if reason else "")
                )
            else:
                out.append(f"job {job} is {word.lower()}")
        return "; ".join(out)

    def text(self) -> str | None:
        """What left the queue before its worker joined, in one line (None: nothing did)."""
        if not self.ended:
            return None
        lines = [line for _, line in self.ended]
        return (
            f"{len(lines)} job(s) left the queue before their worker joined: "
            + "; ".join(lines[:3])
            + ("; ..." if len(lines) > 3 else "")
        )
