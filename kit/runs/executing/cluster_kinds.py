"""The Dask clusters kit can start or join, one class per kind.

``--cluster`` names one: ``local[:N]`` (worker processes on this machine), ``tcp://HOST:PORT``
(a scheduler someone started), ``slurm``, ``pbs``, ``sge``, ``lsf``, ``htcondor`` (batch jobs
through dask-jobqueue) or ``ssh`` (a lab's machines). Their settings live in
``$KIT_HOME/cluster.toml`` (cluster_settings; `kit cluster show`); kit schedules nothing itself.

Every worker kit starts declares a ``cores`` resource, and every run asks for as many as it has
threads, so Dask never puts more threads on a node than it has cores.
"""

from __future__ import annotations

from ...core.errors import KitError
from ...core.logs import cluster_logs_to_file
from ...core.processes import cores
from ...worker.names import unknown
from .cluster_settings import SETTING_BOUNDS, init_settings, settings, settings_path, shown
from .job_templates import (
    PRELOAD,
    QUIET,
    RESOURCE,
    SYSTEMS,
    cluster_class,
    cluster_kwargs,
    job_kwargs,
    job_scripts,
    templates,
    worker_name,
)
from .node_classes import LOCAL_VAR
from .queued_jobs import QueuedJobs

JOBQUEUE = tuple(SYSTEMS)
__all__ = [
    "ClusterKind",
    "PRELOAD",
    "QUIET",
    "RESOURCE",
    "SETTING_BOUNDS",
    "cluster_kind",
    "init_settings",
    "parse_cluster",
    "settings",
    "settings_path",
]


class ClusterKind:
    """How to reach one kind of cluster: ``start()`` -> (cluster or None, scheduler address)."""

    expected = 1  # workers to wait for
    verb = "starting"  # what kit does to reach it, as said to the user

    def __init__(self, conf: dict):
        self.conf = conf

    def start(self):
        raise NotImplementedError

    def planned(self) -> dict:
        """{node class: (workers, cores each)} this kind starts, known before any worker joins
        (named job templates); {}: the classes are the workers' own, seen once they join."""
        return {}

    def replace_lost(self, cluster) -> None:
        """Start again the workers a cluster kit started has lost (a cancelled job, a nanny
        SpecCluster closed): the same number again, so SpecCluster starts anew each one whose
        worker left (after distributed.deploy.lost-worker-timeout) and keeps the others.
        A scheduler someone else runs sees to its own workers."""
        if cluster is not None and hasattr(cluster, "worker_spec"):
            cluster.scale(len(cluster.worker_spec))

    def queued_jobs(self, tries: int):
        """The batch jobs to watch until their workers join (QueuedJobs), None: this kind
        submits none."""
        return None

    def describe(self) -> str:
        raise NotImplementedError


class LocalKind(ClusterKind):
    def __init__(self, conf, workers: int | None):
        super().__init__(conf)
        # local:N is held to its bounds by parse_cluster, [local] workers by cluster_settings
        self.expected = int(conf["workers"]) if workers is None else workers

    def start(self):
        import dask
        from distributed import LocalCluster

        cluster_logs_to_file()
        each = max(1, cores() // self.expected)

        with dask.config.set(QUIET):  # the worker processes inherit the settings
            cluster = LocalCluster(
                n_workers=self.expected,
                threads_per_worker=each,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",  # no fixed port to clash on
                memory_limit=0,
                resources={RESOURCE: each},
                silence_logs=50,
                # in each worker's spec: a replaced worker declares it too
                preload=[PRELOAD],
                env={LOCAL_VAR: "1"},
            )
        return cluster, cluster.scheduler_address

    def describe(self):
        return f"a local Dask cluster of {self.expected} worker process(es)"


class AddressKind(ClusterKind):
    verb = "joining"

    def __init__(self, conf, address: str):
        super().__init__(conf)
        self.address = address

    def start(self):
        cluster_logs_to_file()  # the Client's own messages (a lost connection, ...) as well
        _answers(self.address, CONNECT_S)
        return None, self.address

    def describe(self):
        return f"the Dask scheduler at {self.address}"


def _answers(address: str, seconds: float) -> None:
    """Return once a Dask scheduler at ``address`` answered Dask's handshake, within ``seconds``
    in all (KitError otherwise). Dask bounds the connect but not the wait for the handshake
    after it: anything else listening there (a web server) held a Client for good."""
    import asyncio

    from distributed.comm import connect

    async def handshake():
        comm = await connect(address, timeout=seconds)
        await comm.close()

    try:
        asyncio.run(asyncio.wait_for(handshake(), seconds))
    except TimeoutError:  # Dask's own connect timeout is an OSError
        raise KitError(
            f"{address} did not answer as a Dask scheduler within {seconds:.0f} s"
        ) from None
    except OSError:
        raise  # nothing listens there, or it hung up: DaskExecutor says it cannot reach it
    except Exception as e:  # noqa: BLE001
        # it answered, not in Dask's protocol: an SSH server's greeting
        # read as frame sizes asked numpy for exabytes (MemoryError)
        raise KitError(
            f"{address} did not answer as a Dask scheduler (its answer is not "
            f"Dask's: {type(e).__name__})"
        ) from None


class JobQueueKind(ClusterKind):
    """Batch jobs through dask-jobqueue: one scheduler here, one Dask worker per job, the jobs of
    every node class ([jobqueue.CLASS]) in the one cluster's ``worker_spec``."""

    def __init__(self, conf, system: str):
        super().__init__(conf)
        self.system = system
        self.templates = templates(conf)  # {class or "": jobs}
        self.expected = sum(self.templates.values())
        self.slots: dict = {}  # {worker spec name: its node class ("": the workers' own)}
        for node_class in self.templates:  # a wrong setting is one line now, not after a job
            job_kwargs(conf, system, node_class)

    def planned(self) -> dict:
        return {
            c: (jobs, int(job_kwargs(self.conf, self.system, c)["cores"]))
            for c, jobs in self.templates.items()
            if c
        }

    def job_scripts(self) -> dict:
        """{node class or "": the exact job script}, nothing started or submitted."""
        return job_scripts(self.conf, self.system)

    def start(self):
        cls = cluster_class(self.system)
        cluster_logs_to_file()
        classes = list(self.templates)
        base = job_kwargs(self.conf, self.system, classes[0])
        try:
            cluster = cls(**base, **cluster_kwargs(self.conf, self.system))
        except (TypeError, ValueError) as e:  # a value dask-jobqueue cannot use (HTCondor's disk)
            raise KitError(
                f"[jobqueue]: dask-jobqueue refused the {self.system} cluster: "
                f"{str(e).splitlines()[0]}"
            ) from None
        try:
            spec = cluster.new_spec  # what JobQueueCluster adds to every job (config_name, ...)
            added = {k: v for k, v in spec["options"].items() if k not in base}
            for node_class, jobs in self.templates.items():
                for i in range(jobs):
                    if not node_class:  # one template: dask-jobqueue's own names, as scale() gives
                        new = cluster.new_worker_spec()
                        cluster.worker_spec.update(new)
                        self.slots.update(dict.fromkeys(new, ""))
                        continue
                    options = {**added, **job_kwargs(self.conf, self.system, node_class)}
                    cluster.worker_spec[worker_name(node_class, i)] = {
                        "cls": spec["cls"],
                        "options": options,
                    }
                    self.slots[worker_name(node_class, i)] = node_class
            self._submit(cluster)
        except BaseException:
            from distributed.core import Status

            # a job whose submit failed is one: SpecCluster's close asserts every job it made
            # has started, closed or failed
            for job in cluster.workers.values():
                if getattr(job, "job_id", None) is None:
                    job.status = Status.failed
            cluster.close()  # cancels the jobs that were submitted
            raise
        return cluster, cluster.scheduler_address

    def queued_jobs(self, tries: int) -> QueuedJobs:
        return QueuedJobs(self.system, tries, self.slots)

    def resubmit(self, cluster, slot: str, job) -> str | None:
        """Submit a job again in the place of ``job``, which left the queue before its worker
        joined: the new job's id (None: it had been replaced meanwhile, or its worker came)."""
        from distributed.core import Status

        async def again():
            if cluster.workers.get(slot) is not job or any(
                w.get("name") == slot for w in cluster.scheduler_info["workers"].values()
            ):
                return None
            del cluster.workers[slot]  # SpecCluster's own step then submits the slot anew
            job.status = Status.closed  # it left the queue: nothing to cancel at close
            try:
                await cluster._correct_state()
            except BaseException:
                new = cluster.workers.get(slot)
                if new is not None and getattr(new, "job_id", None) is None:
                    new.status = Status.failed  # as in start(): close asserts a state
                raise
            return getattr(cluster.workers.get(slot), "job_id", None)

        wait = float(self.conf["wait_s"])
        try:
            return cluster.sync(again, callback_timeout=wait)
        except RuntimeError as e:  # dask-jobqueue's Job._call: the command's exit and output
            raise KitError(_submit_failed(cluster.job_cls.submit_command, str(e))) from None
        except TimeoutError:
            raise KitError(
                f"{cluster.job_cls.submit_command} did not answer within {wait:.0f} s"
            ) from None

    def _submit(self, cluster) -> None:
        """Submit every job now and wait for the submit commands (not for the jobs to start), so
        a broken batch system is one line naming its command, not a logged traceback and a wait
        for workers that never come."""
        command = cluster.job_cls.submit_command
        wait = float(self.conf["wait_s"])
        try:
            # SpecCluster's own step from worker_spec to submitted jobs (scale() schedules it on
            # the loop and drops its error into the log; called here, its error is ours)
            cluster.sync(cluster._correct_state, callback_timeout=wait)
        except FileNotFoundError:
            raise KitError(
                f"{command} not found on PATH: run kit where {self.system}'s commands "
                "work (a login node)"
            ) from None
        except RuntimeError as e:  # dask-jobqueue's Job._call: the command's exit and output
            raise KitError(_submit_failed(command, str(e))) from None
        except ValueError as e:  # the command answered without a job id
            raise KitError(f"{command} gave no job id: {str(e).splitlines()[-1][:200]}") from None
        except TimeoutError:
            raise KitError(
                f"{command} did not answer within {wait:.0f} s (wait_s): is the "
                f"{self.system} controller up?"
            ) from None

    def describe(self):
        if list(self.templates) == [""]:
            return f"{self.expected} {self.system} job(s) through dask-jobqueue"
        each = ", ".join(f"{n} {c}" for c, n in self.templates.items())
        return f"{self.expected} {self.system} job(s) ({each}) through dask-jobqueue"


def _submit_failed(command: str, text: str) -> str:
    """One line from dask-jobqueue's 'Command exited with non-zero exit code' message."""
    lines = text.splitlines()
    code = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Exit code:")), "?")
    err = text.split("stderr:", 1)[1] if "stderr:" in text else text
    out = text.split("stdout:", 1)[1].split("stderr:", 1)[0] if "stdout:" in text else ""
    said = [ln.strip() for ln in (err.strip() or out.strip()).splitlines() if ln.strip()]
    return f"{command} failed (exit {code}): " + (said[-1][:300] if said else "no output")


class SSHKind(ClusterKind):
    def __init__(self, conf):
        super().__init__(conf)
        if not conf["hosts"]:
            raise KitError(f"--cluster ssh needs hosts = [...] in [ssh] of {settings_path()}")
        self.expected = len(conf["hosts"])

    def start(self):
        try:
            import asyncssh  # SSHCluster imports it only once it connects
            from distributed import SSHCluster
        except ImportError:
            raise KitError(
                "--cluster ssh needs the asyncssh package: `pip install asyncssh` in "
                "kit's environment"
            ) from None
        cluster_logs_to_file()
        c = self.conf
        cores = int(c["cores"])
        env = {**({"KIT_HOME": c["kit_home"]} if c["kit_home"] else {}), **c["env"]}
        net = {"interface": c["interface"]} if c["interface"] else {}
        try:
            cluster = SSHCluster(
                [c["hosts"][0], *c["hosts"]],
                remote_python=c["python"] or None,
                scheduler_options={
                    "port": int(c["port"]),
                    **net,
                    "dashboard_address": ":0",
                },  # no clash
                # a host that does not answer is an error within wait_s
                connect_options={"connect_timeout": float(c["wait_s"])},
                worker_options={
                    "nthreads": cores,
                    "resources": {RESOURCE: cores},
                    "env": env,
                    "preload": [PRELOAD],
                    **net,
                },
            )
        except (OSError, RuntimeError, asyncssh.Error) as e:  # unreachable, refused, no key
            raise KitError(f"cannot start Dask over SSH on {c['hosts'][0]}: {e}") from None
        except Exception as e:  # noqa: BLE001
            # SSHCluster's own "Worker failed to start": the reason is logged
            raise KitError(
                f"cannot start Dask over SSH on {', '.join(c['hosts'])}: {e} (the "
                f"remote side's messages are in {cluster_logs_to_file()})"
            ) from None
        return cluster, cluster.scheduler_address

    def describe(self):
        return f"the lab machines {', '.join(self.conf['hosts'])} over SSH"


FORMS = "local[:N], tcp://HOST:PORT, " + ", ".join(JOBQUEUE) + " or ssh"  # what --cluster takes
KINDS = ("local", "tcp", *JOBQUEUE, "ssh")
CONNECT_S = 30  # how long a scheduler at tcp://HOST:PORT has to answer as one


def parse_cluster(text: str) -> tuple:
    """(kind, its argument) of a ``--cluster`` value: ("local", workers or None), ("tcp",
    the scheduler's address), (a batch system or "ssh", None). The one parser of every command's
    --cluster, read before anything starts; ValueError: one line naming the value and the forms
    it may take."""
    name, colon, arg = text.partition(":")

    def wrong(problem: str) -> ValueError:
        return ValueError(f"{shown(text)} {problem}: use {FORMS}")

    if not text.strip():
        raise wrong("names no cluster")
    if name == "local":
        if not colon:
            return "local", None
        if not arg.isascii() or not arg.isdigit():
            raise wrong("takes a number of workers (local:N)")
        bound = SETTING_BOUNDS["workers"].limit_problem(int(arg))
        if bound:
            raise wrong(f"asks for {int(arg):,} workers; {bound}")
        return "local", int(arg)
    if name == "tls" and arg.startswith("//"):  # Dask's TLS needs certificates kit has no place for
        raise ValueError(
            f"{shown(text)}: tls:// is not supported (kit has no setting for its "
            "certificates); join a scheduler that listens on tcp://HOST:PORT (an "
            "SSH tunnel keeps it off the network)"
        )
    if name == "tcp" and arg.startswith("//"):
        host, colon, port = arg[2:].rpartition(":")
        if not colon or not host:
            raise wrong(
                "names no host and port"
                if not arg[2:]
                else "names no port"
                if not colon
                else "names no host"
            )
        if ":" in host and not (host.startswith("[") and host.endswith("]")):
            raise wrong("names an IPv6 host without [brackets]")
        if not port.isascii() or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise wrong(f"has port {shown(port)}; a port is a number from 1 to 65535")
        return "tcp", text
    if name in (*JOBQUEUE, "ssh") and not colon:
        return name, None
    # a slip of case or a letter or two: the form the user meant, with what followed the kind
    typed = {
        "local": f"local:{arg}" if colon else "local",
        "tcp": "tcp://" + arg.lstrip("/") if colon else "tcp",
    }
    meant = [m for m in (typed.get(k, k) for k in KINDS) if m != text]
    raise ValueError(unknown("unknown cluster", text, meant, f": use {FORMS}"))


def cluster_kind(target: str) -> ClusterKind:
    """The kind of cluster ``--cluster`` names (parse_cluster's one line for anything else)."""
    try:
        kind, arg = parse_cluster(target)
    except ValueError as e:
        raise KitError(str(e)) from None
    conf = settings()
    if kind == "local":
        return LocalKind(conf["local"], arg)
    if kind == "tcp":
        return AddressKind(conf, arg)
    if kind == "ssh":
        return SSHKind(conf["ssh"])
    return JobQueueKind(conf["jobqueue"], kind)
