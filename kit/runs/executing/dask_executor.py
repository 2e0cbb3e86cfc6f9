"""The cluster executor: each run a Dask task on a node, stored by the driver alone.

A task runs kit.runs.executing.on_node.make_run in a Dask worker, which starts the stack's worker process on
that node and hands back the manifest and the arrays' bytes; the runner verifies every array's
sha256 before storing it, as it does for a local run. A worker that dies mid-run is Dask's to
retry (its allowed failures); a run that still fails is reported with its node and stderr.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import CancelledError
from pathlib import Path

from ...core.errors import KitError
from ...core.spec import RunSpec
from . import on_node as node
from .cluster_kinds import RESOURCE, ClusterKind, cluster_kind
from .runner import Executor


class DaskExecutor(Executor):
    name = "dask"

    def __init__(self, target: str, log=lambda msg: None):
        self.kind: ClusterKind = cluster_kind(target)
        self.target = target
        self.cluster = self.client = None
        self._data: dict = {}
        # a local cluster's nannies run in this process and set PYTHONHASHSEED in its
        # environment before each worker starts (distributed.nanny): kit's later local runs
        # would inherit it and differ from the earlier ones; given back on close
        self._environ = dict(os.environ)
        log(f"{self.kind.verb} {self.kind.describe()}")
        logging.getLogger("distributed").setLevel(logging.ERROR)  # kit speaks for its runs
        try:
            self._connect()
        except BaseException:
            self.close()
            raise

    def _connect(self):
        from distributed import Client

        try:
            self.cluster, address = self.kind.start()
            self.client = Client(address, timeout="30s")
        except (OSError, TimeoutError) as e:
            raise KitError(f"cannot reach {self.kind.describe()}: {e}") from None
        wait = float(self.kind.conf.get("wait_s", 60))
        try:
            self.client.wait_for_workers(self.kind.expected, timeout=wait)
        except TimeoutError:
            raise KitError(f"{self.kind.describe()}: no worker joined within {wait:.0f} s (is the "
                           "queue full, or the workers' python unable to import kit?)") from None
        self.refresh()

    def refresh(self) -> None:
        """Ask every worker what node it is on and how many cores it offers runs."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        bare = [a for a, w in info.items() if RESOURCE not in (w.get("resources") or {})]
        if bare:
            raise KitError(f"worker {bare[0]} declares no {RESOURCE!r} resource, so kit cannot keep "
                           f"its runs within its cores; start workers with `dask worker "
                           f"--resources {RESOURCE}=N` (N: the node's cores)")
        facts = self.client.run(node.facts)
        self.workers = {a: {**facts[a], "name": str(w.get("name", a)),
                            "slots": int(w["resources"][RESOURCE])} for a, w in info.items()}

    # -- where runs go ------------------------------------------------------------------------
    def classes(self) -> dict:
        """{node class: [worker addresses]}, the largest class first."""
        out: dict = {}
        for a, f in self.workers.items():
            out.setdefault(f["class"], []).append(a)
        return dict(sorted(out.items(), key=lambda kv: -sum(self.workers[a]["slots"] for a in kv[1])))

    def default_host(self) -> str:
        """The node class a plan's runs go to when no --hosts are named: the largest."""
        return next(iter(self.classes()))

    def matching(self, label: str) -> list:
        """Workers a run labelled ``label`` may go to: that class, host name or worker name."""
        return [a for a, f in self.workers.items() if label in (f["class"], f["host"], f["name"])]

    def resolve(self, names) -> tuple:
        """Check every name given to --hosts against the cluster's workers."""
        for n in names:
            if not self.matching(n):
                known = sorted({v for f in self.workers.values()
                                for v in (f["class"], f["host"], f["name"])})
                raise KitError(f"--hosts {n}: no worker of {self.target} is that node class, "
                               f"host or name; it has {', '.join(known)}")
        return tuple(names)

    def slots(self, specs, jobs):
        threads = min((s.threads for s in specs), default=1)
        return max(1, sum(f["slots"] for f in self.workers.values()) // threads)

    def check(self, spec: RunSpec):
        if spec.process == "warm":
            raise KitError("the process factor compares kit's warm workers with fresh ones on "
                           "this machine: run it without --cluster")
        where = self.matching(spec.host)
        if not where:
            raise KitError(f"run {spec.run_id[:12]} was planned for {spec.host!r}, which is not a "
                           f"node class, host or worker of {self.target}; plan again on this "
                           "cluster")
        if spec.threads > max(self.workers[a]["slots"] for a in where):
            raise KitError(f"{spec.threads} threads: no worker of {spec.host} offers that many "
                           f"cores ({RESOURCE} resource); lower --threads")

    # -- one run ------------------------------------------------------------------------------
    def _dataset(self, dataset):
        if dataset.sha256 not in self._data:  # sent once to every worker, by content
            self._data[dataset.sha256] = self.client.scatter(dataset, broadcast=True, hash=False)
        return self._data[dataset.sha256]

    def run(self, spec, dataset, input_npy, out: Path):
        from distributed import KilledWorker

        where = self.matching(spec.host)
        fut = self.client.submit(node.make_run, spec.to_json(), self._dataset(dataset), input_npy,
                                 resources={RESOURCE: spec.threads}, pure=False,
                                 workers=None if len(where) == len(self.workers) else where,
                                 allow_other_workers=False)
        try:
            got = fut.result()
        except KilledWorker as e:
            raise KitError(f"run {spec.run_id[:12]}: its Dask worker died on every try ({e}); "
                           "nothing of it was stored") from None
        except (OSError, CancelledError, TimeoutError) as e:
            raise KitError(f"lost {self.kind.describe()} ({type(e).__name__}: {e}); finished runs "
                           "are stored, run the same command to resume") from None
        finally:
            fut.release()
        if "error" in got:
            tail = "\n".join(f"    {line}" for line in got["tail"].splitlines()[-5:])
            raise KitError(f"run {spec.run_id[:12]} failed on node {got['node']['host']} "
                           f"({got['node']['class']}): {got['error']}"
                           + (f"\n  the worker's stderr ended:\n{tail}" if tail else ""))
        for name, data in got["arrays"].items():
            (out / Path(name).name).write_bytes(data)
        return got["manifest"]

    def close(self):
        for thing in (self.client, self.cluster):
            if thing is not None:
                try:
                    thing.close()
                except Exception:  # closing a half-started cluster must not hide the real error
                    pass
        self.client = self.cluster = None
        os.environ.clear()
        os.environ.update(self._environ)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def check_rows(executor: DaskExecutor, stack_names: list) -> list:
    """One row per worker for `kit cluster check`: its node and whether its stacks are the
    driver's (same identity: the same lock, or the same measured versions)."""
    from ...envs.kinds import stack_kind

    mine = {}
    for name in stack_names:
        try:
            mine[name] = stack_kind(name).runnable().identity
        except KitError:
            pass
    theirs = executor.client.run(node.stacks, list(mine))
    pools = executor.client.run(_threadpools)
    rows = []
    for a, f in executor.workers.items():
        has = theirs.get(a, {})
        states = {n: ("ok" if has.get(n, (None,))[0] == ident else
                      "missing" if has.get(n, (None,))[0] is None else "differs")
                  for n, ident in mine.items()}
        rows.append({"worker": f["name"], "address": a, "host": f["host"], "class": f["class"],
                     "cores": f["slots"], "cpu": f["cpu"], "blas": pools.get(a, "no answer"),
                     "stacks": states})
    return rows


def _threadpools():
    """The BLAS/OpenMP pools of kit's own interpreter on this node (its worker's fingerprint),
    or why they could not be read."""
    from ...envs.catalogue import HOST
    from ...envs.kinds import stack_kind
    from ...envs.launch import fingerprint

    try:
        fp = fingerprint(stack_kind(HOST).runnable().command)
        return {"threadpools": fp.get("threadpools"), "blas_build": fp.get("blas_build")}
    except Exception as e:  # a node that cannot start the worker says so in its row
        return f"cannot start the worker: {e}"
