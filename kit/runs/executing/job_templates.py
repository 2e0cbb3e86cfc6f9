"""The dask-jobqueue keywords of kit's batch jobs: kit's own, the user's, one set per node class.

kit sets what it needs (KIT_HOME, quiet Dask monitors, the workers' ``cores`` resource, one
worker per job); the user's named settings (prologue, directives, worker_args, constraint) come
after kit's, and ``extra`` may pass any other keyword of the chosen dask-jobqueue class. Nothing
is passed twice: a list keyword in ``extra`` is appended to kit's, ``scheduler_options`` merged,
and a key that a named setting covers (or that the class does not take) is one line saying so.
"""

from __future__ import annotations

import inspect
import shlex
import sys

from ...core.errors import KitError
from ...core.paths import kit_home
from ...core.processes import keeping_signal_handlers
from ...worker.names import did_you_mean
from .cluster_settings import DEFAULTS, node_classes

CLASS_VAR = "KIT_NODE_CLASS"  # what kit.runs.executing.on_node.node_class() reads on the node
RESOURCE = "cores"
PRELOAD = "kit.runs.executing.node_classes"  # declares a worker's node class (a Dask preload)
# A kit task waits on a subprocess: Dask's sampling profiler and frequent monitors would only
# take CPU from the runs beside them, and from the driver, whose process holds the scheduler
# (each system-monitor look is a round of psutil calls: ~1 ms of CPU a second at 2 s, three
# servers in the driver of local:2).
QUIET = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "10s",
    "distributed.worker.memory.monitor-interval": "2s",
}
SYSTEMS = {
    "slurm": "SLURMCluster",
    "pbs": "PBSCluster",
    "sge": "SGECluster",
    "lsf": "LSFCluster",
    "htcondor": "HTCondorCluster",
}
# keywords of extra that a named setting (or kit itself) covers: the setting to use instead
COVERED = {
    "cores": "cores",
    "memory": "memory",
    "queue": "queue",
    "account": "account",
    "project": "account",
    "walltime": "walltime",
    "python": "python",
    "log_directory": "log_directory",
    "interface": "interface",
    "n_workers": "jobs",
    "env_extra": "prologue",
    "job_extra": "directives",
    "extra": "worker_args",
    "processes": "none: kit runs one Dask worker per job",
    "name": "none: kit names the jobs",
    "scheduler": "none: kit starts the scheduler",
    "job_cls": "none: --cluster chooses it",
    "loop": "none",
    "asynchronous": "none",
    "dashboard_address": "scheduler_options in extra",
    "host": "scheduler_options in extra",
}
LISTS = (
    "job_script_prologue",
    "job_extra_directives",
    "worker_extra_args",
    "job_directives_skip",
    "header_skip",
)
# JobQueueCluster's own keywords: they shape the scheduler, not a job's script
_CLUSTER_ONLY = (
    "security",
    "shared_temp_directory",
    "silence_logs",
    "scheduler_options",
    "scheduler_cls",
    "protocol",
)


def quiet_env() -> list:
    """The QUIET settings as exports for workers started by a batch system."""
    return [
        f"export DASK_{k.upper().replace('.', '__').replace('-', '_')}={v}"
        for k, v in QUIET.items()
    ]


def cluster_class(system: str):
    with keeping_signal_handlers():  # its runner module sets SIGINT to sys.exit() on import:
        import dask_jobqueue  # an interrupted plan would end with exit 0

    return getattr(dask_jobqueue, SYSTEMS[system])


def accepted(system: str) -> set:
    """Every keyword the system's cluster class and its Job class take."""
    cls = cluster_class(system)
    out = set()
    for f in (
        cls.__init__,
        cls.__mro__[1].__init__,
        cls.job_cls.__init__,
        cls.job_cls.__mro__[1].__init__,
    ):
        out |= {
            n
            for n, p in inspect.signature(f).parameters.items()
            if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and n != "self"
        }
    return out


def _extra(conf: dict, system: str) -> dict:
    extra = conf["extra"]
    known = accepted(system)
    for key in extra:
        if key in COVERED:
            use = COVERED[key]
            raise KitError(
                f"[jobqueue] extra {key}: kit sets it; use "
                + (use[6:] if use.startswith("none: ") else f"the {use} setting")
            )
        if key not in known:
            hint = did_you_mean(key, sorted(known - set(COVERED)))
            raise KitError(
                f"[jobqueue] extra {key}: dask-jobqueue's {SYSTEMS[system]} takes no "
                f"such keyword" + (f"; {hint}" if hint else "")
            )
    return extra


def _class_conf(conf: dict, node_class: str) -> dict:
    return {**conf, **node_classes(conf)[node_class]} if node_class else conf


def job_kwargs(conf: dict, system: str, node_class: str = "") -> dict:
    """The keywords of one job of ``node_class`` ("" = no class): kit's, then the user's."""
    c = _class_conf(conf, node_class)
    where = f"[jobqueue.{node_class}]" if node_class else "[jobqueue]"
    directives = list(c["directives"])
    if c["constraint"]:
        if system != "slurm":
            raise KitError(
                f"{where} constraint is a Slurm setting; on {system} give the node "
                "features as directives = [...] instead"
            )
        directives.insert(0, f"--constraint={c['constraint']}")
    home = conf["kit_home"] or str(kit_home())
    prologue = [f"export KIT_HOME={shlex.quote(home)}", *quiet_env()]
    if node_class:
        prologue.append(f"export {CLASS_VAR}={node_class}")
    kw = dict(
        cores=int(c["cores"]),
        processes=1,
        memory=c["memory"],
        python=conf["python"] or sys.executable,
        job_script_prologue=[*prologue, *c["prologue"]],
        worker_extra_args=[
            "--resources",
            f"{RESOURCE}={int(c['cores'])}",
            "--preload",
            PRELOAD,
            *c["worker_args"],
        ],
        job_extra_directives=directives,
        # the jobs' own output (slurm-N.out, ...) beside kit's logs, not in the cwd
        log_directory=conf["log_directory"] or str(kit_home() / "logs" / system),
    )
    takes = accepted(system)
    for key, theirs in (
        ("queue", "queue"),
        ("account", "account" if "account" in takes else "project"),
        ("walltime", "walltime"),
    ):
        if theirs in takes and c[key]:
            kw[theirs] = c[key]
        elif c[key] and c[key] != DEFAULTS["jobqueue"][key]:
            raise KitError(
                f"{where} {key}: dask-jobqueue's {SYSTEMS[system]} has no such setting; "
                "give it as directives = [...] instead"
            )
    for key, value in _extra(conf, system).items():
        if key in _CLUSTER_ONLY:
            continue
        if key in LISTS:
            mine = kw.get(key, [])
            if isinstance(value, dict) and not mine:  # HTCondor's directives are a table
                kw[key] = value
            elif isinstance(value, list) and all(isinstance(v, str) for v in value):
                kw[key] = [*mine, *value]
            else:
                raise KitError(f"[jobqueue] extra {key}: expected a list of strings")
        else:
            kw[key] = value
    # from worker_args or from extra: a worker's resources are kit's (its cores, its class)
    if any(str(a).split("=")[0] == "--resources" for a in kw["worker_extra_args"][2:]):
        raise KitError(
            f"{where} worker_args: --resources is kit's (it declares the {RESOURCE} "
            "each worker offers runs); leave it out"
        )
    return kw


def cluster_kwargs(conf: dict, system: str) -> dict:
    """The keywords that shape the scheduler: its interface, and extra's scheduler_options."""
    extra = _extra(conf, system)
    options = {"interface": conf["interface"]} if conf["interface"] else {}
    theirs = extra.get("scheduler_options", {})
    if not isinstance(theirs, dict):
        raise KitError("[jobqueue] extra scheduler_options: expected a table")
    if "interface" in theirs and options:
        raise KitError("[jobqueue] extra scheduler_options interface: use the interface setting")
    kw = {k: v for k, v in extra.items() if k in _CLUSTER_ONLY}
    # the dashboard on a free port unless extra names one: a fixed 8787 clashes with any other
    # Dask on the machine (kit never shows the dashboard)
    kw["scheduler_options"] = {"dashboard_address": ":0", **options, **theirs}
    return kw


def templates(conf: dict) -> dict:
    """{node class or "": how many jobs of it}: one template per [jobqueue.CLASS], else one."""
    classes = node_classes(conf)
    if not classes:
        return {"": int(conf["jobs"])}
    return {name: int(table.get("jobs", conf["jobs"])) for name, table in classes.items()}


def worker_name(node_class: str, i: int) -> str:
    """The Dask worker name of job ``i`` of a class (kit's spec names: "skylake-0", ...)."""
    return f"{node_class}-{i}"


def job_scripts(conf: dict, system: str) -> dict:
    """{node class or "": the exact script its jobs are submitted with}, built without a
    scheduler (as dask-jobqueue's own ``job_script()`` does, with a placeholder address).
    Nothing is submitted; dask-jobqueue's Job does create the log directory it names."""
    job_cls = cluster_class(system).job_cls
    out = {}
    for node_class in templates(conf):
        kw = job_kwargs(conf, system, node_class)
        name = worker_name(node_class, 0) if node_class else "dummy-name"
        try:
            out[node_class] = job_cls(
                "tcp://<scheduler-address>:8786", name=name, **kw
            ).job_script()
        except (TypeError, ValueError) as e:  # a value dask-jobqueue cannot use
            raise KitError(
                f"[jobqueue{'.' + node_class if node_class else ''}]: dask-jobqueue "
                f"refused the job: {str(e).splitlines()[0]}"
            ) from None
    return out
