"""`kit run --cluster` when every run of the plan is stored: no job is started (issue 56: it
started Slurm jobs to make nothing, and failed where sbatch cannot submit). Real runs made here,
a cluster.toml naming one node class, and no Slurm needed: the line `kit: starting ...` is
what the real cluster executor says first, and it must not be said."""

import pytest

from kit.cli import main
from kit.runs.store.hosts import host_id

RUN = ["run", "--factor", "repeat", "--threads", "1", "--n", "100"]


def settings(home):
    """One named node class, this machine's host id, so the runs made here are that class's:
    a plan on it is known before any job starts (wait_s 1: a job that starts fails at once)."""
    (home / "cluster.toml").write_text(
        f'[jobqueue]\ncores = 1\njobs = 1\nwait_s = 1\n\n[jobqueue."{host_id()}"]\n'
    )


@pytest.mark.slow
def test_a_plan_whose_runs_are_all_stored_starts_no_job(kit_home, capsys):
    assert main(RUN) == 0
    capsys.readouterr()
    settings(kit_home)
    assert main(RUN + ["--cluster", "slurm"]) == 0
    err = capsys.readouterr().err
    assert (
        f"kit: every run of the plan is stored (2 on node class {host_id()}): no job of "
        "slurm started"
    ) in " ".join(err.split()), err
    assert "starting" not in err and "2 stored, 0 to run" in err and "Traceback" not in err
    # a plan with a run to make does start the cluster (here sbatch cannot submit, or no
    # worker joins within wait_s: one line, exit 1)
    code = main(
        [
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
        ]
    )
    err = capsys.readouterr().err
    assert "kit: starting 1 slurm job(s)" in err and "no job of slurm started" not in err, err
    assert code != 0 or "0 to run" not in err
