"""Node classes on a Dask cluster: a worker resource per class, which runs ask for.

A run planned for node class C asks for ``cores`` and for the resource ``kit-class-C``; every
worker kit starts declares the resource of its own class (as many as its cores) before it
registers, through this module as a Dask preload. Routing thus never names a worker's address:
a worker a nanny restarts at a new address, or a job that replaces a cancelled one, declares
its class again and picks up the class's runs.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from dataclasses import replace

from ...core.errors import KitError
from ...core.logs import cluster_logs_to_file
from ...core.spec import RunSpec
from ...worker.names import unknown
from .job_templates import RESOURCE

# PRELOAD names this module: `dask worker --preload kit.runs.executing.node_classes`
PREFIX = "kit-class-"


def class_resource(name: str) -> str:
    """The Dask resource that marks a worker of node class ``name``."""
    return PREFIX + name


LOCAL_VAR = "KIT_LOCAL_WORKER"  # set for the workers of a local cluster (kit's own children)


def dask_setup(worker) -> None:
    """Dask's preload hook: declare this worker's node class before it registers, so the
    scheduler places the class's waiting runs on it the moment it joins."""
    from .on_node import node_class, sweep

    if os.environ.get(LOCAL_VAR) and _main_thread():
        # a local cluster's workers share kit's terminal: a Ctrl-C is kit's to handle (it closes
        # them within seconds), not theirs to answer with a traceback each on kit's stderr
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.environ.get(LOCAL_VAR):  # and their logging and warnings go to cluster.log, as kit's
        cluster_logs_to_file()
        logging.getLogger("distributed").setLevel(logging.WARNING)

    sweep()  # a killed worker's folders go with its replacement's start, not its first run
    cores = worker.state.total_resources.get(RESOURCE, 0)
    if cores:  # a worker without cores takes no run at all (the executor refuses it)
        name = class_resource(node_class())
        worker.state.total_resources[name] = cores
        worker.state.available_resources[name] = cores


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class ClassTable:
    """The workers of a cluster by node class, as they are at one moment (``workers``:
    {address: facts with "class", "host", "name", "slots"}), and the classes the cluster starts
    whose workers may not have joined yet (``planned``: {class: (workers, cores each)})."""

    def __init__(self, workers: dict, target: str, planned: dict | None = None):
        self.workers, self.target, self.planned = workers, target, dict(planned or {})

    def _cores(self) -> dict:
        """{node class: [cores of each worker, joined or planned]}"""
        out: dict = {c: [k] * n for c, (n, k) in self.planned.items()}
        for f in self.workers.values():
            out.setdefault(f["class"], [])
            if f["class"] not in self.planned:
                out[f["class"]].append(f["slots"])
        return out

    def classes(self) -> dict:
        """{node class: [worker addresses]}, the largest class (by cores) first (a planned
        class ranks by the workers it starts: the choice does not hang on which job ran first)."""
        cores = self._cores()
        out = {c: [a for a, f in self.workers.items() if f["class"] == c] for c in cores}
        return dict(sorted(out.items(), key=lambda kv: -sum(cores[kv[0]])))

    def default(self) -> str:
        """The node class a plan's runs go to when no --hosts are named: the largest."""
        return next(iter(self.classes()))

    def smallest_fitting(self, threads: int) -> str | None:
        """The node class whose largest worker offers ``threads`` cores with the fewest to
        spare (a 2-thread run goes to 2-core nodes, not to 32-core ones), the most workers
        breaking a tie; None when no class offers that many."""
        cores = self._cores()
        fit = [(max(ks), -len(ks), c) for c, ks in cores.items() if ks and max(ks) >= threads]
        return min(fit)[2] if fit else None

    def refit(self, pair):
        """Both runs of ``pair`` on the smallest node class that offers their cores, when the
        class they were planned for cannot; None otherwise (a `host` pair, whose classes differ
        on purpose, stays as it is)."""
        if pair.a.host != pair.b.host:
            return None
        to = self.smallest_fitting(max(pair.a.threads, pair.b.threads))
        if to is None or to == pair.a.host:
            return None
        return replace(pair, a=pair.a.with_(host=to), b=pair.b.with_(host=to))

    def fewest_cores(self) -> int:
        """The smallest worker's cores: a plan's default thread counts fit every worker."""
        return min(k for ks in self._cores().values() for k in ks)

    def resolve(self, names) -> tuple:
        """--hosts names node classes; a host or worker name is refused with its class."""
        classes = self.classes()
        for n in names:
            if n in classes:
                continue
            of = sorted({f["class"] for f in self.workers.values() if n in (f["host"], f["name"])})
            if len(of) == 1:
                raise KitError(
                    f"--hosts {n}: that is a host or worker of node class {of[0]}; "
                    f"--hosts takes node classes ({', '.join(classes)})"
                )
            if of:
                raise KitError(
                    f"--hosts {n}: that host spans the node classes {', '.join(of)}; "
                    "name the classes instead"
                )
            raise KitError(
                unknown(
                    "--hosts",
                    n,
                    classes,
                    f"; its classes are {', '.join(sorted(classes))}",
                    f": no worker of {self.target} is of that node class",
                )
            )
        return tuple(names)

    def unfit(self, spec: RunSpec) -> str | None:
        """Why no worker can take ``spec`` (not its class; fewer cores than its threads)."""
        cores = self._cores().get(spec.host)
        if cores is None:
            return (
                f"planned for node class {spec.host!r}, which {self.target} does not have "
                f"({', '.join(self.classes())})"
            )
        most = max(cores)
        if spec.threads > most:
            return (
                f"{spec.threads} threads: no worker of node class {spec.host} offers that many "
                f"cores (at most {most})"
            )
        return None
