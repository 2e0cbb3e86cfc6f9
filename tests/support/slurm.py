"""A real single-node Slurm for tests: munged, slurmctld and slurmd started in a temp folder.

Needs root and Debian's slurm-wlm and munge packages (`.ci/run` installs them). ``start`` says
why it cannot run instead of failing, so a machine without them skips the test with a reason.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

CONF = """\
ClusterName=kittest
SlurmctldHost={host}
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
StateSaveLocation={tmp}/state
SlurmdSpoolDir={tmp}/spool
SlurmctldPidFile={tmp}/slurmctld.pid
SlurmdPidFile={tmp}/slurmd.pid
SlurmctldLogFile={tmp}/ctld.log
SlurmdLogFile={tmp}/d.log
ReturnToService=2
NodeName={host} CPUs={cpus} RealMemory=20000 State=UNKNOWN
PartitionName=main Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def unavailable() -> str | None:
    """Why a Slurm cannot be started here (None: it can)."""
    if os.geteuid() != 0:
        return "starting slurmctld and slurmd needs root"
    missing = [
        b
        for b in ("slurmctld", "slurmd", "srun", "sbatch", "munged")
        if not shutil.which(b) and not Path(f"/usr/sbin/{b}").exists()
    ]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install slurm-wlm munge)"
    return None


def _munge() -> None:
    if subprocess.run(["munge", "-n"], capture_output=True).returncode == 0:
        return  # a munged already answers
    if not Path("/etc/munge/munge.key").exists():
        subprocess.run(["mungekey", "-c"], check=True, capture_output=True)
    Path("/run/munge").mkdir(exist_ok=True)
    shutil.chown("/run/munge", "munge", "munge")
    subprocess.run(
        ["runuser", "-u", "munge", "--", "/usr/sbin/munged"], check=True, capture_output=True
    )


def _free_port() -> int:
    """A port nothing listens on now: this Slurm's own, so a machine's Slurm (or another test's)
    on the default 6817/6818 neither blocks it nor shows its jobs in this one's squeue."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(tmp: Path) -> dict:
    """Start Slurm with its state under ``tmp``; returns the environment that reaches it."""
    host = socket.gethostname().split(".")[0]
    for d in ("state", "spool"):
        (tmp / d).mkdir(parents=True, exist_ok=True)
    conf = tmp / "slurm.conf"
    conf.write_text(
        CONF.format(
            host=host,
            tmp=tmp,
            cpus=os.cpu_count() or 1,
            ctld_port=_free_port(),
            d_port=_free_port(),
        )
    )
    env = dict(os.environ, SLURM_CONF=str(conf))
    _munge()
    subprocess.run(["/usr/sbin/slurmctld"], env=env, check=True, capture_output=True)
    subprocess.run(["/usr/sbin/slurmd"], env=env, check=True, capture_output=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        p = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True)
        if p.returncode == 0 and p.stdout.strip() in ("idle", "mixed", "allocated"):
            return env
        time.sleep(0.5)
    stop(tmp)
    raise RuntimeError("slurm did not come up: " + (tmp / "ctld.log").read_text()[-500:])


def stop(tmp: Path) -> None:
    for pid_file in ("slurmd.pid", "slurmctld.pid"):
        try:
            os.kill(int((tmp / pid_file).read_text()), 15)
        except (OSError, ValueError):
            pass


def until(what, seconds: float):
    """``what()``'s first true answer within ``seconds`` (asked every half second), else None:
    a queue changes in its own time."""
    end = time.time() + seconds
    while time.time() < end:
        got = what()
        if got:
            return got
        time.sleep(0.5)
    return None
