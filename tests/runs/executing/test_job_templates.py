"""[jobqueue]'s job settings on real batch commands: a prologue line that runs in the job, two
node-class templates that make a host pair (a real single-node Slurm, started by the test), and
a broken sbatch (a failing one on PATH, or a Slurm config whose controller is not running):
one line naming the command, within seconds."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

KIT = str(Path(sys.executable).with_name("kit"))
BASE = (
    '[jobqueue]\nqueue = "main"\ncores = 1\nmemory = "2GB"\nwalltime = "00:20:00"\n'
    'jobs = 1\ninterface = "lo"\nwait_s = 180\n'
)


def kit(home, *args, timeout=600, env=None):
    return subprocess.run(
        [KIT, *args],
        env=dict(os.environ, KIT_HOME=str(home), **(env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def manifests(home) -> list:
    db = sqlite3.connect(home / "store.sqlite")
    return [
        (json.loads(s), json.loads(m)) for s, m in db.execute("SELECT spec, manifest FROM runs")
    ]


def _squeue_empty(env) -> bool:
    got = subprocess.run(
        ["squeue", "-h"], env=dict(os.environ, **env), capture_output=True, text=True
    )
    return got.returncode == 0 and got.stdout.strip() == ""


@pytest.mark.slow
def test_a_prologue_line_is_in_the_job_script_and_runs(tmp_path, slurm_env):
    home = tmp_path / "h"
    home.mkdir()
    (home / "cluster.toml").write_text(BASE + 'prologue = ["echo ran > $KIT_HOME/prologue-ran"]\n')
    shown = kit(home, "cluster", "show", "--job-script")
    assert shown.returncode == 0, shown.stderr
    assert "echo ran > $KIT_HOME/prologue-ran" in shown.stdout.splitlines()
    got = kit(
        home,
        "run",
        "--factor",
        "seed",
        "--seeds",
        "0,1",
        "--threads",
        "1",
        "--n",
        "100",
        "--cluster",
        "slurm",
        env=slurm_env,
    )
    assert got.returncode == 0, got.stderr
    assert len(manifests(home)) == 2
    assert (home / "prologue-ran").read_text() == "ran\n"
    assert _squeue_empty(slurm_env)


@pytest.mark.slow
def test_two_class_templates_run_the_host_factor_on_slurm(tmp_path, slurm_env):
    home = tmp_path / "h"
    home.mkdir()
    # two jobs of one core each: both fit the test's node of 2 CPUs
    (home / "cluster.toml").write_text(BASE + "[jobqueue.a]\n[jobqueue.b]\n")
    got = kit(
        home,
        "run",
        "--factor",
        "host",
        "--hosts",
        "a,b",
        "--n",
        "100",
        "--cluster",
        "slurm",
        "--json",
        env=slurm_env,
    )
    assert got.returncode == 0, got.stderr
    assert "2 slurm job(s) (1 a, 1 b)" in got.stderr
    assert sorted((s["host"], m["node"]["class"]) for s, m in manifests(home)) == [
        ("a", "a"),
        ("b", "b"),
    ]
    assert _squeue_empty(slurm_env)


def _fake_sbatch(folder: Path) -> dict:
    folder.mkdir()
    (folder / "sbatch").write_text(
        "#!/bin/sh\necho 'sbatch: error: Batch job submission failed: "
        "Unable to contact slurm controller' >&2\nexit 1\n"
    )
    (folder / "sbatch").chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def _no_controller(folder: Path) -> dict:
    if not shutil.which("sbatch"):
        pytest.skip("no sbatch here (apt-get install slurm-wlm)")
    folder.mkdir()
    host = os.uname().nodename.split(".")[0]
    (folder / "slurm.conf").write_text(  # a port no slurmctld listens on
        f"ClusterName=nobody\nSlurmctldHost={host}\nSlurmctldPort=6999\nAuthType=auth/munge\n"
        f"NodeName={host} CPUs=2 State=UNKNOWN\nPartitionName=main Nodes={host} Default=YES\n"
    )
    return {"SLURM_CONF": str(folder / "slurm.conf")}


@pytest.mark.slow
@pytest.mark.parametrize("broken", [_fake_sbatch, _no_controller])
def test_a_broken_sbatch_is_one_line_within_seconds(tmp_path, broken):
    home = tmp_path / "h"
    home.mkdir()
    (home / "cluster.toml").write_text(BASE)  # wait_s = 180: the line must come long before
    env = broken(tmp_path / "slurm")
    start = time.monotonic()
    got = kit(
        home,
        "run",
        "--factor",
        "seed",
        "--seeds",
        "0,1",
        "--threads",
        "1",
        "--n",
        "100",
        "--cluster",
        "slurm",
        env=env,
        timeout=170,
    )
    took = time.monotonic() - start
    assert got.returncode == 1, got.stderr
    errors = [ln for ln in got.stderr.splitlines() if ln.startswith("kit: error")]
    assert errors == [errors[0]] and errors[0].startswith(
        "kit: error: sbatch failed (exit 1): "
        "sbatch: error: Batch job submission "
        "failed: Unable to contact slurm "
        "controller"
    ), got.stderr
    assert "Traceback" not in got.stderr and len(got.stderr.splitlines()) <= 3, got.stderr
    assert took < 60, f"{took:.0f} s"  # measured here: ~1 s (fake), ~10 s (sbatch's own retries)
