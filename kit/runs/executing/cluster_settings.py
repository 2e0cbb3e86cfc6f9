"""kit's one cluster settings file, $KIT_HOME/cluster.toml: its defaults, bounds and checks.

Every value is checked when read (a typo or an out-of-range number is one line naming it), so a
cluster is never started from a half-understood file. ``[jobqueue.CLASS]`` sub-tables are job
templates of one node class each (`node_classes`).
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from ...core import processes
from ...core.atomic import create_once
from ...core.errors import KitError
from ...core.paths import kit_home
from ...core.small_files import read_home
from ...worker.names import unknown
from ..planning.options import Bound

# what each kind reads from cluster.toml, with its default (a TOML value: a string, a number, a
# list or a table); anything else is a typo
DEFAULTS: dict[str, dict[str, Any]] = {
    "local": {"workers": 2},
    "jobqueue": {
        "queue": "",
        "account": "",
        "constraint": "",
        "cores": 2,
        "memory": "4GB",
        "walltime": "01:00:00",
        "jobs": 1,
        "python": "",
        "kit_home": "",
        "interface": "",
        "log_directory": "",
        "prologue": [],
        "directives": [],
        "worker_args": [],
        "wait_s": 300,
        "extra": {},
    },
    "ssh": {
        "hosts": [],
        "cores": 2,
        "python": "",
        "kit_home": "",
        "interface": "",
        "port": 8786,
        "env": {},
        "wait_s": 120,
    },
}
# what a [jobqueue.CLASS] table may override: what differs between a lab's node types
CLASS_KEYS = (
    "queue",
    "account",
    "constraint",
    "cores",
    "memory",
    "walltime",
    "prologue",
    "directives",
    "worker_args",
    "jobs",
)
# also a shell word and a job name; a leading digit is allowed since a host id (hex) names the
# class of the runs made on that host
_CLASS_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
# the bounds of cluster.toml's numbers (and of local:N): a typo must not start 10**6 jobs
SETTING_BOUNDS = {
    "workers": Bound(
        "worker processes",
        1,
        lambda: processes.cores() * 4,
        why="worker processes: 4 per core of this machine",
    ),
    "cores": Bound("cores", 1, 1_024, why="cores per node; the largest nodes have a few hundred"),
    "jobs": Bound("jobs", 1, 1_000, why="jobs (nodes) at once; a plan is a few hundred runs"),
    "wait_s": Bound("seconds", 1, 86_400, why="seconds, a day: a queue may hold jobs for hours"),
}
MEMORY_TOP = 64 * 2**40  # 64 TiB per job: more than any node holds
MAX_HOSTS = 1_000
MAX_LINES = 200  # prologue / directives / worker_args entries: a job script, not a program
_SIZE = re.compile(r"(\d+(?:\.\d+)?) *([kmgtp]i?)?b?", re.IGNORECASE)
_WALLTIME = re.compile(r"(\d+-)?\d+(:\d+){0,2}")  # minutes, HH:MM:SS, D-HH:MM ... (Slurm, PBS)
TEMPLATE = """\
# kit's cluster settings: `kit cluster show` reads this file, `kit run --cluster NAME` uses it.
[local]             # --cluster local or local:N: worker processes on this machine
workers = 2

[jobqueue]          # --cluster slurm | pbs | sge | lsf | htcondor (dask-jobqueue)
queue = ""          # partition or queue ("" = the system's default)
account = ""
constraint = ""     # Slurm node features, e.g. "skylake" (#SBATCH --constraint=...)
cores = 2           # cores per job: runs x threads on one node never exceed it
memory = "4GB"
walltime = "01:00:00"
jobs = 1            # jobs (nodes) to start
python = ""         # the workers' Python with kit installed ("" = this one, on a shared disk)
kit_home = ""       # the workers' KIT_HOME ("" = this one, on a shared disk)
interface = ""      # network interface the scheduler listens on, e.g. "ib0" ("" = default)
log_directory = ""  # the jobs' own output ("" = $KIT_HOME/logs/<system>)
prologue = []       # shell lines run before the worker, after kit's, e.g. ["module load gcc"]
directives = []     # extra #SBATCH / #PBS lines, e.g. ["--exclusive"]
worker_args = []    # extra `dask worker` arguments, e.g. ["--lifetime", "55m"]
wait_s = 300        # how long to wait for the first worker
extra = {}          # any other dask-jobqueue keyword, e.g. { job_cpu = 4 }

# one table per node class: its own jobs, each exporting KIT_NODE_CLASS=<name>, e.g.
# [jobqueue.skylake]
# queue = "skylake"
# jobs = 2

[ssh]               # --cluster ssh: a lab's machines; the first also runs the scheduler
hosts = []
cores = 2
python = ""
kit_home = ""
interface = ""      # network interface of the scheduler and workers, e.g. "eth0"
port = 8786         # the scheduler's port (0 = any free one)
env = {}            # the workers' environment, e.g. { KIT_NODE_CLASS = "lab" }
wait_s = 120
"""


def settings_path():
    return kit_home() / "cluster.toml"


def settings() -> dict:
    """The settings of every kind: the file's values over the defaults (typos refused).

    ``settings()["jobqueue"]`` also holds each ``[jobqueue.CLASS]`` table under its name."""
    path = settings_path()
    try:
        raw = read_home(path)
        doc = {} if raw is None else tomllib.loads(raw.decode())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise KitError(
            f"{path}: {e}; fix it or remove it (`kit cluster init` writes a fresh one)"
        ) from e
    extra = sorted(set(doc) - set(DEFAULTS))
    if extra:
        raise KitError(
            unknown(
                f"{path}: no section", extra[0], DEFAULTS, "; sections are " + ", ".join(DEFAULTS)
            )
        )
    out = {}
    for kind, defaults in DEFAULTS.items():
        given = dict(doc.get(kind, {}))
        classes = {
            k: given.pop(k)
            for k in list(given)
            if kind == "jobqueue" and k not in defaults and isinstance(given[k], dict)
        }
        _check(path, kind, given, defaults)
        for name, table in classes.items():
            if not _CLASS_NAME.fullmatch(name):
                raise KitError(
                    f"{path}: [jobqueue.{name}]: a node class is named by a letter or digit "
                    "then up to 31 letters, digits, '-' or '_'"
                )
            _check(path, f"jobqueue.{name}", table, {k: defaults[k] for k in CLASS_KEYS})
        out[kind] = {**defaults, **given, **classes}
    return out


def node_classes(conf: dict) -> dict:
    """{class: its [jobqueue.CLASS] table} of a [jobqueue] section, in the file's order."""
    return {k: v for k, v in conf.items() if k not in DEFAULTS["jobqueue"] and isinstance(v, dict)}


def _check(path, section: str, given: dict, defaults: dict) -> None:
    extra = sorted(set(given) - set(defaults))
    if extra:
        raise KitError(
            unknown(
                f"{path}: [{section}] has no setting",
                extra[0],
                defaults,
                "; it knows " + ", ".join(defaults),
            )
        )
    for key, value in given.items():
        wrong = _setting_problem(key, value, defaults[key])
        if wrong:
            raise KitError(f"{path}: [{section}] {key} = {shown(value)}: {wrong}")


def _setting_problem(key: str, value, default) -> str | None:
    """What is wrong with one value of cluster.toml (its type, then its bound), or None."""
    if key in SETTING_BOUNDS:
        b = SETTING_BOUNDS[key]
        whole = isinstance(value, int) and not isinstance(value, bool)
        if not (whole or key == "wait_s" and isinstance(value, float)):
            return f"expected a whole number from 1 to {b.top:,} ({b.why})"
        return b.limit_problem(value)
    if key == "port":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65_535:
            return "expected a TCP port from 0 (any free one) to 65535"
        return None
    if key == "memory":
        m = _SIZE.fullmatch(value.strip()) if isinstance(value, str) else None
        size = float(m[1]) * _unit(m[2]) if m else 0
        if isinstance(value, int) and not isinstance(value, bool):  # bytes, as Dask takes them
            size = value
        if not 2**20 <= size <= MEMORY_TOP:
            return 'expected a memory size per job like "4GB", from 1 MiB to 64 TiB'
        return None
    if key == "walltime":
        if not (isinstance(value, str) and _WALLTIME.fullmatch(value.strip())):
            return 'expected a time limit like "01:00:00" (HH:MM:SS) or "1-00:00:00"'
        return None
    if key == "hosts":
        if not (
            isinstance(value, list)
            and len(value) <= MAX_HOSTS
            and all(isinstance(h, str) and 0 < len(h.strip()) <= 255 for h in value)
        ):
            return f'expected a list of at most {MAX_HOSTS:,} host names, like ["node1", "node2"]'
        return None
    if isinstance(default, list):
        if not (
            isinstance(value, list)
            and len(value) <= MAX_LINES
            and all(isinstance(v, str) and "\n" not in v for v in value)
        ):
            return f'expected a list of at most {MAX_LINES} one-line strings, like ["..."]'
        return None
    if key == "env":
        if not (
            isinstance(value, dict)
            and all(
                re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) and isinstance(v, str)
                for k, v in value.items()
            )
        ):
            return 'expected a table of variable names to strings, like { KIT_NODE_CLASS = "lab" }'
        return None
    if not isinstance(value, type(default)):
        return f"expected {'a table' if isinstance(default, dict) else 'a string'}"
    if isinstance(value, str) and "\n" in value:
        return "expected one line"
    return None


def _unit(prefix: str | None) -> int:
    if not prefix:
        return 1
    power = "kmgtp".index(prefix[0].lower()) + 1
    return (1024 if prefix.lower().endswith("i") else 1000) ** power


def shown(value) -> str:
    """A value as an error line quotes it: its repr, cut at 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def init_settings() -> str:
    """Write the commented template unless a settings file exists; returns its path."""
    create_once(settings_path(), TEMPLATE.encode())
    return str(settings_path())
