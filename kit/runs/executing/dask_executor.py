"""The cluster executor: each run a Dask task on a node, stored by the driver alone.

A task runs kit.runs.executing.on_node.make_run in a Dask worker, which makes the run in a
(warm) worker process on that node and hands back the manifest and the arrays' bytes; the
runner verifies every array's sha256 before storing it, as it does for a local run. Runs go to
a node class by a worker resource (kit.runs.executing.node_classes), never by address. A run
whose worker or job dies is submitted again (TRIES in all, each retry said and counted); one
that fails on every try is reported and the plan goes on. Every wait has a bound.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from concurrent.futures import CancelledError
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import KitError
from ...core.spec import RunSpec
from ...core.waits import bounded
from ...data.pipelines import shipment
from . import on_node as node
from .answers import unpacked
from .cluster_kinds import CONNECT_S, ClusterKind, cluster_kind
from .job_templates import PRELOAD, QUIET, RESOURCE
from .node_classes import ClassTable, class_resource
from .queued_jobs import LOOK_S
from .runner import Executor, RunFailed

if TYPE_CHECKING:  # distributed is imported as a cluster starts, not with kit
    from distributed import Client

TRIES = 3  # submissions of one run before it counts as failed
POLL_S = 0.5  # how often a waiting run looks at the cluster (and at a stop)
RUN_S = 6 * 3600  # the longest one run's task may take: a stuck node must not hang a plan
# a worker lost mid-run fails its task at once (Dask would quietly resubmit it up to 3 times):
# kit resubmits it itself, so that every retry is counted and said
ROUTING = {"distributed.scheduler.allowed-failures": 0, "distributed.worker.preload": [PRELOAD]}
# Dask's servers in kit's process (the scheduler; a local cluster's nannies) time their event
# loop every 20 ms by default, 50 wake-ups a second each: most of the driver's CPU between runs
# (bench/cluster.py: 22-34 ms CPU a second idle on local:2, 5 ms at 1 s). A stalled loop is
# still logged: the limit that says so (distributed.admin.tick.limit) is 3 s. Work stealing
# looks every 100 ms; a kit run takes seconds, so once a second balances as well.
PACE = {
    "distributed.admin.tick.interval": "1s",
    "distributed.scheduler.work-stealing-interval": "1s",
}

_ENDED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # {future: set as it ends}
_ENDED_LOCK = threading.Lock()


def _ended(fut) -> threading.Event:
    """An event set once ``fut`` ends (finished, failed or cancelled): a thread waits on it
    without asking Dask's event loop anything; one done-callback per future."""
    with _ENDED_LOCK:
        ended = _ENDED.get(fut)
        if ended is None:
            ended = _ENDED[fut] = threading.Event()
            fut.add_done_callback(lambda _: ended.set())
    return ended


def _forget(fut) -> None:
    """``fut`` ended and then did not (its answer was lost with its worker, and the task runs
    again): the next wait waits for its new end."""
    with _ENDED_LOCK:
        _ENDED.pop(fut, None)


def poll(fut, seconds: float) -> tuple:
    """(True, the task's answer) once it ended, (False, None) while it has not, after waiting
    up to ``seconds``; the task's own exception, a lost worker and a cancellation are raised.

    Waiting costs the driver nothing: a thread waits on an event the future's done-callback
    sets, asking Dask's event loop nothing (hundreds of waiting runs asked twice a second).
    The answer is fetched once the task has ended, and never with a timeout: a fetch that timed
    out (``fut.result(timeout=...)``) cancelled the client's gather midway, which distributed's
    ``sync`` then raised as an UnboundLocalError (1 run in ~250 at a 0.5 s poll, 655 of 1,500
    at 0.05 s: finished runs thrown away as "its task raised"), and a gather cancelled before it
    started stays the one every later gather of the client joins: none got an answer again (a
    10 ms poll on a busy machine hung so)."""
    if not _ended(fut).wait(seconds):
        return False, None
    if fut.status == "error":  # the task's own (KilledWorker: its worker was lost)
        raise fut.exception() from None
    if fut.status == "cancelled":
        raise CancelledError(fut.key)
    for n in range(3):  # no timeout: nothing cancels the gather; a fetch that fails (a
        try:  # connection dropped midway) is tried again, three times at most
            return True, fut.result()
        except Exception:
            if fut.status != "finished":  # lost meanwhile (its worker died): waited on again
                _forget(fut)
                return False, None
            if n == 2:  # an answer that cannot be fetched at all (it cannot be unpickled)
                raise
    return False, None


class DaskExecutor(Executor):
    name = "dask"
    remote = True  # what comes back is checked as from a machine kit does not control

    def __init__(self, target: str, log=lambda msg: None):
        self.kind: ClusterKind = cluster_kind(target)
        self.target, self.log = target, log
        self.cluster: Any = None  # the kind's cluster (LocalCluster, a JobQueueCluster, ...)
        self.client: Client | None = None  # between _connect and close
        self.retried: list = []  # (run id, why) of every resubmission
        self._seen: tuple[float, dict] = (0.0, {})  # (when, {address: resources}) of the last look
        self._kept = 0.0  # when lost jobs were last replaced
        self._looking = False  # a thread is asking the scheduler for its workers
        self.jobs = None  # the batch jobs watched until their workers join
        self._lock = threading.Lock()
        self.wait_s = float(self.kind.conf.get("wait_s", 60))
        # a local cluster's nannies run in this process and set PYTHONHASHSEED in its
        # environment before each worker starts (distributed.nanny): kit's later local runs
        # would inherit it and differ from the earlier ones; given back on close
        self._environ = dict(os.environ)
        log(f"{self.kind.verb} {self.kind.describe()}")
        try:
            self._connect()
        except BaseException:
            self.close()
            raise

    def _connect(self):
        import dask
        from distributed import Client

        # after distributed's import, which sets its own: cluster.log tells Dask's story (workers
        # joining and lost, an SSH host's own output) from INFO up; kit speaks for its runs
        logging.getLogger("distributed").setLevel(logging.INFO)
        try:
            with dask.config.set({**QUIET, **ROUTING, **PACE}):  # in-process servers read them
                self.cluster, address = self.kind.start()
            self.client = Client(address, timeout=f"{CONNECT_S}s")
        except (OSError, TimeoutError) as e:
            raise KitError(f"cannot reach {self.kind.describe()}: {e}") from None
        self.jobs = self.kind.queued_jobs(TRIES)
        self._first_worker()
        self.refresh()

    def _connected(self) -> Client:
        if self.client is None:  # closed (a run's thread may outlive a plan's Ctrl-C)
            raise self._lost(OSError("the client is closed"))
        return self.client

    def _first_worker(self) -> None:
        """Wait for the first worker (the plan takes the others as they come), watching the
        jobs meanwhile: one that leaves the queue is submitted again, and when none is left
        to come the wait ends at once, naming what became of them."""
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                left = max(0.1, min(LOOK_S, deadline - time.monotonic()))
                self._connected().wait_for_workers(1, timeout=left)
                return
            except TimeoutError:
                pass
            self._watch()
            gone = self.jobs.hopeless() if self.jobs else None
            if gone:
                raise KitError(f"{self.kind.describe()}: no worker joined: {gone}")
            if time.monotonic() >= deadline:
                queued = self.jobs.waiting() if self.jobs else ""
                raise KitError(
                    f"{self.kind.describe()}: no worker joined within "
                    f"{self.wait_s:.0f} s ("
                    + (
                        f"{queued})"
                        if queued
                        else "is the queue full, or the workers' python unable to import kit?)"
                    )
                )

    def _watch(self) -> None:
        """Look at the jobs whose workers have not joined; say each that left the queue."""
        if self.jobs is not None and self.cluster is not None:
            for line in self.jobs.look(
                self.cluster, lambda slot, job: self.kind.resubmit(self.cluster, slot, job)
            ):
                self.log(line)

    def refresh(self) -> None:
        """Ask every worker what node it is on and how many cores it offers runs."""
        info = self._workers_info(self.wait_s)
        for a, w in info.items():
            have = w.get("resources") or {}
            if RESOURCE not in have:
                raise KitError(
                    f"worker {a} declares no {RESOURCE!r} resource, so kit cannot keep "
                    f"its runs within its cores; start workers with `dask worker "
                    f"--resources {RESOURCE}=N --preload {PRELOAD}` (N: the node's cores)"
                )
            if not any(r.startswith(class_resource("")) for r in have):
                raise KitError(
                    f"worker {a} declares no node class, so kit cannot route runs to "
                    f"it; start workers with `dask worker --resources {RESOURCE}=N "
                    f"--preload {PRELOAD}`"
                )
        facts = bounded(
            lambda: self._connected().run(node.facts), self.wait_s, f"the workers of {self.target}"
        )
        self.workers = {
            a: {**facts[a], "name": str(w.get("name", a)), "slots": int(w["resources"][RESOURCE])}
            for a, w in info.items()
            if a in facts
        }
        self.table = ClassTable(self.workers, self.target, self.kind.planned())

    # -- where runs go ------------------------------------------------------------------------
    def classes(self) -> dict:
        return self.table.classes()

    def default_host(self) -> str:
        return self.table.default()

    def fewest_cores(self) -> int:
        return self.table.fewest_cores()

    def resolve(self, names) -> tuple:
        return self.table.resolve(names)

    def unfit(self, spec: RunSpec) -> str | None:
        return self.table.unfit(spec)

    def refit(self, pair):
        return self.table.refit(pair)

    def slots(self, specs, jobs):
        # Dask places the runs by resources as workers come; kit keeps enough submitted to fill
        # every worker the cluster may have (a thread waits on each), not one per run
        threads = min((s.threads for s in specs), default=1)
        cores = max(
            sum(f["slots"] for f in self.workers.values()),
            self.kind.expected * max(f["slots"] for f in self.workers.values()),
        )
        return max(1, min(512, cores // threads))

    def check(self, spec: RunSpec):
        wrong = self.table.unfit(spec)
        if wrong:
            raise KitError(f"run {spec.run_id[:12]}: {wrong}; plan again on this cluster")

    # -- one run ------------------------------------------------------------------------------
    def run(self, spec, dataset, input_npy, out: Path, stop=lambda: False, held=frozenset()):
        from distributed import KilledWorker

        n, send = 1, None  # the dataset goes with a run only to a node that has not got it
        have = sorted(held)  # what need not come back: the store holds it
        need = {RESOURCE: spec.threads, class_resource(spec.host): spec.threads}
        while True:
            fut = self._connected().submit(
                node.make_run, spec.to_json(), send, input_npy, have, pure=False, resources=need
            )
            try:
                got = self._outcome(fut, spec, stop)
            except (KilledWorker, CancelledError) as e:
                if self._connected().status != "running":
                    raise self._lost(e) from None
                if stop():  # the plan is ending (a Ctrl-C reaches a local cluster's workers too)
                    return None
                why = (
                    "its worker was lost"
                    if isinstance(e, KilledWorker)
                    else f"its task was cancelled ({e})"
                )
                if n == TRIES:
                    raise RunFailed(
                        f"run {spec.run_id[:12]}: {why} on each of {TRIES} tries; "
                        "nothing of it was stored"
                    ) from None
                self.retried.append((spec.run_id, why))
                n += 1
                self.log(f"run {spec.run_id[:12]}: {why}; submitting it again (try {n} of {TRIES})")
                continue
            except KitError:
                raise
            except (OSError, TimeoutError) as e:
                raise self._lost(e) from None
            except Exception as e:  # noqa: BLE001
                # the task itself raised: said as a failed run, not a bug
                raise RunFailed(
                    f"run {spec.run_id[:12]}: its task raised {type(e).__name__}: {e}"
                ) from None
            finally:
                fut.release()
            if got is None:  # stopped while it ran: nothing to store
                return None
            if isinstance(got, dict) and got.get("missing") == "dataset" and send is None:
                send = dataset
                continue
            if (
                isinstance(got, dict)
                and got.get("missing") == "pipeline"
                and send is None
                and spec.pipeline
            ):  # the file's bytes, which the node hashes before keeping
                send = shipment(spec.pipeline)
                continue
            return unpacked(got, spec, out, held)

    def _outcome(self, fut, spec: RunSpec, stop):
        """The task's answer, or None when the plan stops; a bounded wait: RunFailed when no
        worker could take the run for wait_s, or it ran longer than RUN_S."""
        began = time.monotonic()
        homeless = None  # since when no worker of its class has had the cores it needs
        while True:
            ended, answer = poll(fut, POLL_S)  # returns within 20 ms of the task's end
            if ended:
                return answer
            if stop():
                try:
                    bounded(fut.cancel, 10, "the scheduler")
                except KitError:  # the plan ends anyway; closing the cluster ends the task
                    pass
                return None
            now = time.monotonic()
            self._replace_lost(now)
            if self._room(spec):
                homeless = None
            else:
                homeless = homeless or now
                if now - homeless > self.wait_s:
                    raise RunFailed(
                        f"run {spec.run_id[:12]}: no worker of node class {spec.host} "
                        f"offering {spec.threads} core(s) for {self.wait_s:.0f} s"
                    )
                gone = self.jobs.hopeless(spec.host) if self.jobs else None
                if gone:  # no job of its class is left to bring a worker: no use waiting
                    raise RunFailed(
                        f"run {spec.run_id[:12]}: no worker of node class "
                        f"{spec.host} can join: {gone}"
                    )
            if now - began > RUN_S:
                raise RunFailed(
                    f"run {spec.run_id[:12]}: its task ran longer than "
                    f"{RUN_S / 3600:.0f} h on {self.kind.describe()}"
                )

    def _room(self, spec: RunSpec) -> bool:
        """Whether a worker now offers the run's class and cores (one thread looks, every 2 s
        at most, however many runs wait; the others read its last look)."""
        with self._lock:
            when, seen = self._seen
            look = time.monotonic() - when > 2 and not self._looking
            self._looking = self._looking or look
        if look:
            try:
                if self._connected().status != "running":
                    raise self._lost(OSError("the client is closed"))
                seen = {a: w.get("resources") or {} for a, w in self._workers_info(30).items()}
                self._seen = (time.monotonic(), seen)
            finally:
                self._looking = False
        need = class_resource(spec.host)
        return any(
            r.get(need, 0) >= spec.threads and r.get(RESOURCE, 0) >= spec.threads
            for r in seen.values()
        )

    def _workers_info(self, seconds: float) -> dict:
        try:
            return bounded(
                lambda: self._connected().scheduler_info(n_workers=-1)["workers"],
                seconds,
                "the scheduler",
            )
        except KitError as e:
            raise self._lost(e) from None

    def _replace_lost(self, now: float) -> None:
        """Ask the cluster to start again the jobs it lost (every 5 s at most)."""
        with self._lock:
            if now - self._kept < 5:
                return
            self._kept = now
        self.kind.replace_lost(self.cluster)
        self._watch()

    def _lost(self, e) -> KitError:
        return KitError(
            f"lost {self.kind.describe()} ({type(e).__name__}: {e}); finished runs "
            "are stored, run the same command to resume"
        )

    def retried_text(self) -> str | None:
        """What was retried and why, and the jobs that left the queue before their workers
        joined, in one line (None: nothing was)."""
        jobs = self.jobs.text() if self.jobs else None
        if not self.retried:
            return jobs
        whys: dict = {}
        for _, why in self.retried:
            whys[why] = whys.get(why, 0) + 1
        runs = len({r for r, _ in self.retried})
        return (
            f"{runs} run(s) were submitted again ({len(self.retried)} retries): "
            + "; ".join(f"{why} ({n}x)" for why, n in whys.items())
            + (f". {jobs}" if jobs else "")
        )

    def close(self):
        for thing in (self.client, self.cluster):
            if thing is not None:
                try:
                    thing.close(timeout=20)  # bounded: a closing cluster never hangs kit
                except Exception:  # noqa: BLE001
                    # closing a half-started cluster must not hide the real error
                    pass
        self.client = self.cluster = None
        os.environ.clear()
        os.environ.update(self._environ)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
