"""The Dask clusters kit can start or join, one class per kind, and their one settings file.

``--cluster`` names one: ``local[:N]`` (worker processes on this machine), ``tcp://HOST:PORT``
(a scheduler someone started), ``slurm``, ``pbs``, ``sge``, ``lsf``, ``htcondor`` (batch jobs
through dask-jobqueue) or ``ssh`` (a lab's machines). Their settings live in
``$KIT_HOME/cluster.toml`` (`kit cluster show`); kit schedules nothing itself.

Every worker kit starts declares a ``cores`` resource, and every run asks for as many as it has
threads, so Dask never puts more threads on a node than it has cores.
"""

from __future__ import annotations

import re
import sys
import tomllib

from ...core import processes
from ...core.errors import KitError
from ...core.processes import cores
from ...core.paths import kit_home
from ..planning.options import Bound

JOBQUEUE = ("slurm", "pbs", "sge", "lsf", "htcondor")
RESOURCE = "cores"
PRELOAD = "kit.runs.executing.node_classes"  # declares a worker's node class (a Dask preload)
# A kit task waits on a subprocess: Dask's sampling profiler and frequent monitors would only
# take CPU from the runs beside them.
QUIET = {"distributed.worker.profile.enabled": False,
         "distributed.admin.system-monitor.interval": "2s",
         "distributed.worker.memory.monitor-interval": "2s"}


def quiet_env() -> list:
    """The same settings as exports for workers started by a batch system."""
    return [f"export DASK_{k.upper().replace('.', '__').replace('-', '_')}={v}" for k, v in QUIET.items()]
# what each kind reads from cluster.toml, with its default; anything else is a typo
DEFAULTS = {
    "local": {"workers": 2},
    "jobqueue": {"queue": "", "account": "", "cores": 2, "memory": "4GB", "walltime": "01:00:00",
                 "jobs": 1, "python": "", "kit_home": "", "interface": "", "wait_s": 300,
                 "extra": {}},
    "ssh": {"hosts": [], "cores": 2, "python": "", "kit_home": "", "wait_s": 120},
}
# the bounds of cluster.toml's numbers (and of local:N): a typo must not start 10**6 jobs
SETTING_BOUNDS = {
    "workers": Bound("worker processes", 1, lambda: processes.cores() * 4,
                     why="worker processes: 4 per core of this machine"),
    "cores": Bound("cores", 1, 1_024, why="cores per node; the largest nodes have a few hundred"),
    "jobs": Bound("jobs", 1, 1_000, why="jobs (nodes) at once; a plan is a few hundred runs"),
    "wait_s": Bound("seconds", 1, 86_400, why="seconds, a day: a queue may hold jobs for hours"),
}
MEMORY_TOP = 64 * 2 ** 40  # 64 TiB per job: more than any node holds
MAX_HOSTS = 1_000
_SIZE = re.compile(r"(\d+(?:\.\d+)?) *([kmgtp]i?)?b?", re.IGNORECASE)
_WALLTIME = re.compile(r"(\d+-)?\d+(:\d+){0,2}")  # minutes, HH:MM:SS, D-HH:MM ... (Slurm, PBS)
TEMPLATE = """\
# kit's cluster settings: `kit cluster show` reads this file, `kit run --cluster NAME` uses it.
[local]             # --cluster local or local:N: worker processes on this machine
workers = 2

[jobqueue]          # --cluster slurm | pbs | sge | lsf | htcondor (dask-jobqueue)
queue = ""          # partition or queue ("" = the system's default)
account = ""
cores = 2           # cores per job: runs x threads on one node never exceed it
memory = "4GB"
walltime = "01:00:00"
jobs = 1            # jobs (nodes) to start
python = ""         # the workers' Python with kit installed ("" = this one, on a shared disk)
kit_home = ""       # the workers' KIT_HOME ("" = this one, on a shared disk)
interface = ""      # network interface the scheduler listens on, e.g. "ib0" ("" = default)
wait_s = 300        # how long to wait for the first worker
extra = {}          # any other dask-jobqueue keyword, e.g. { job_extra_directives = ["--exclusive"] }

[ssh]               # --cluster ssh: a lab's machines; the first also runs the scheduler
hosts = []
cores = 2
python = ""
kit_home = ""
wait_s = 120
"""


def settings_path():
    return kit_home() / "cluster.toml"


def settings() -> dict:
    """The settings of every kind: the file's values over the defaults (typos refused)."""
    path = settings_path()
    try:
        doc = tomllib.loads(path.read_text())
    except FileNotFoundError:
        doc = {}
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise KitError(f"{path}: {e}; fix it or remove it (`kit cluster init` writes a fresh one)")
    out = {}
    for kind, defaults in DEFAULTS.items():
        given = doc.get(kind, {})
        unknown = set(given) - set(defaults)
        if unknown:
            raise KitError(f"{path}: [{kind}] has no setting {sorted(unknown)[0]!r}; it knows "
                           + ", ".join(defaults))
        for key, value in given.items():
            wrong = _setting_problem(key, value, defaults[key])
            if wrong:
                raise KitError(f"{path}: [{kind}] {key} = {_shown(value)}: {wrong}")
        out[kind] = {**defaults, **given}
    unknown = set(doc) - set(DEFAULTS)
    if unknown:
        raise KitError(f"{path}: no section [{sorted(unknown)[0]}]; sections are "
                       + ", ".join(DEFAULTS))
    return out


def _setting_problem(key: str, value, default) -> str | None:
    """What is wrong with one value of cluster.toml (its type, then its bound), or None."""
    if key in SETTING_BOUNDS:
        b = SETTING_BOUNDS[key]
        whole = isinstance(value, int) and not isinstance(value, bool)
        if not (whole or key == "wait_s" and isinstance(value, float)):
            return f"expected a whole number from 1 to {b.top:,} ({b.why})"
        return b.limit_problem(value)
    if key == "memory":
        m = _SIZE.fullmatch(value.strip()) if isinstance(value, str) else None
        size = float(m[1]) * _unit(m[2]) if m else 0
        if isinstance(value, int) and not isinstance(value, bool):  # bytes, as Dask takes them
            size = value
        if not 2 ** 20 <= size <= MEMORY_TOP:
            return "expected a memory size per job like \"4GB\", from 1 MiB to 64 TiB"
        return None
    if key == "walltime":
        if not (isinstance(value, str) and _WALLTIME.fullmatch(value.strip())):
            return "expected a time limit like \"01:00:00\" (HH:MM:SS) or \"1-00:00:00\""
        return None
    if key == "hosts":
        if not (isinstance(value, list) and len(value) <= MAX_HOSTS
                and all(isinstance(h, str) and 0 < len(h.strip()) <= 255 for h in value)):
            return f"expected a list of at most {MAX_HOSTS:,} host names, like [\"node1\", \"node2\"]"
        return None
    if not isinstance(value, type(default)):
        return f"expected {'a table' if isinstance(default, dict) else 'a string'}"
    return None


def _unit(prefix: str | None) -> int:
    if not prefix:
        return 1
    power = "kmgtp".index(prefix[0].lower()) + 1
    return (1024 if prefix.lower().endswith("i") else 1000) ** power


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def init_settings() -> str:
    """Write the commented template unless a settings file exists; returns its path."""
    from ...core.atomic import create_once

    create_once(settings_path(), TEMPLATE.encode())
    return str(settings_path())


class ClusterKind:
    """How to reach one kind of cluster: ``start()`` -> (cluster or None, scheduler address)."""

    expected = 1  # workers to wait for
    verb = "starting"  # what kit does to reach it, as said to the user

    def __init__(self, conf: dict):
        self.conf = conf

    def start(self):
        raise NotImplementedError

    def replace_lost(self, cluster) -> None:
        """Start again the workers a cluster kit started has lost (a cancelled job, a nanny
        that gave up): the same number again, so SpecCluster starts anew each one whose
        worker left (after distributed.deploy.lost-worker-timeout) and keeps the others.
        A scheduler someone else runs sees to its own workers."""
        if cluster is not None and hasattr(cluster, "worker_spec"):
            cluster.scale(len(cluster.worker_spec))

    def describe(self) -> str:
        raise NotImplementedError


class LocalKind(ClusterKind):
    def __init__(self, conf, workers: int | None):
        super().__init__(conf)
        self.expected = int(conf["workers"]) if workers is None else workers
        if self.expected < 1:
            raise KitError("local:N needs at least one worker")
        wrong = SETTING_BOUNDS["workers"].limit_problem(self.expected)
        if wrong:
            raise KitError(f"--cluster local:{self.expected}: {wrong}")

    def start(self):
        from distributed import LocalCluster

        each = max(1, cores() // self.expected)
        import dask

        with dask.config.set(QUIET):  # the worker processes inherit the settings
            cluster = LocalCluster(n_workers=self.expected, threads_per_worker=each,
                                   processes=True, host="127.0.0.1",
                                   dashboard_address="127.0.0.1:0",  # no fixed port to clash on
                                   memory_limit=0, resources={RESOURCE: each}, silence_logs=50)
        return cluster, cluster.scheduler_address

    def describe(self):
        return f"a local Dask cluster of {self.expected} worker process(es)"


class AddressKind(ClusterKind):
    verb = "joining"

    def __init__(self, conf, address: str):
        super().__init__(conf)
        self.address = address

    def start(self):
        return None, self.address

    def describe(self):
        return f"the Dask scheduler at {self.address}"


class JobQueueKind(ClusterKind):
    def __init__(self, conf, system: str):
        super().__init__(conf)
        self.system = system
        self.expected = int(conf["jobs"])

    def start(self):
        import dask_jobqueue

        c = self.conf
        cls = getattr(dask_jobqueue, {"slurm": "SLURMCluster", "pbs": "PBSCluster",
                                      "sge": "SGECluster", "lsf": "LSFCluster",
                                      "htcondor": "HTCondorCluster"}[self.system])
        home = c["kit_home"] or str(kit_home())
        kw = dict(cores=int(c["cores"]), processes=1, memory=c["memory"], walltime=c["walltime"],
                  python=c["python"] or sys.executable,
                  job_script_prologue=[f"export KIT_HOME={home}", *quiet_env()],
                  worker_extra_args=["--resources", f"{RESOURCE}={int(c['cores'])}",
                                     "--preload", PRELOAD],
                  scheduler_options={"interface": c["interface"]} if c["interface"] else {},
                  # the jobs' own output (slurm-N.out, ...) beside kit's logs, not in the cwd
                  log_directory=str(kit_home() / "logs" / self.system),
                  **c["extra"])
        for key in ("queue", "account"):
            if c[key]:
                kw[key] = c[key]
        cluster = cls(**kw)
        cluster.scale(jobs=self.expected)
        return cluster, cluster.scheduler_address

    def describe(self):
        return f"{self.expected} {self.system} job(s) through dask-jobqueue"


class SSHKind(ClusterKind):
    def __init__(self, conf):
        super().__init__(conf)
        if not conf["hosts"]:
            raise KitError(f"--cluster ssh needs hosts = [...] in [ssh] of {settings_path()}")
        self.expected = len(conf["hosts"])

    def start(self):
        from distributed import SSHCluster

        c = self.conf
        cores = int(c["cores"])
        env = {"KIT_HOME": c["kit_home"]} if c["kit_home"] else {}
        cluster = SSHCluster([c["hosts"][0], *c["hosts"]], remote_python=c["python"] or None,
                             worker_options={"nthreads": cores, "resources": {RESOURCE: cores},
                                             "env": env, "preload": [PRELOAD]})
        return cluster, cluster.scheduler_address

    def describe(self):
        return f"the lab machines {', '.join(self.conf['hosts'])} over SSH"


def cluster_kind(target: str) -> ClusterKind:
    """The kind of cluster ``--cluster`` names (a one-line error for anything else)."""
    conf = settings()
    name, _, arg = target.partition(":")
    if name == "local":
        try:
            return LocalKind(conf["local"], int(arg) if arg else None)
        except ValueError:
            raise KitError(f"--cluster local:N takes a number of workers, not {_shown(arg)}") from None
    if name in ("tcp", "tls") and arg.startswith("//"):
        return AddressKind(conf, target)
    if name in JOBQUEUE and not arg:
        return JobQueueKind(conf["jobqueue"], name)
    if name == "ssh" and not arg:
        return SSHKind(conf["ssh"])
    raise KitError(f"unknown cluster {target!r}: use local[:N], tcp://HOST:PORT, "
                   + ", ".join(JOBQUEUE) + " or ssh")
