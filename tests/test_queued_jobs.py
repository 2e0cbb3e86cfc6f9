"""kit.runs.executing.queued_jobs: what became of a batch job whose worker never joined, as a
real Slurm says it (tests/slurm.py), in one line."""

import os
import subprocess

from slurm import until

from kit.runs.executing.queued_jobs import JobEnd, said, slurm_jobs


def test_each_end_is_one_line_naming_the_job():
    assert said("12", JobEnd("CANCELLED")) == "job 12 was cancelled before it started"
    assert said("12", JobEnd("CANCELLED", started=True)) == \
        "job 12 was cancelled before its worker joined"
    assert said("12", JobEnd("TIMEOUT", True)) == \
        "job 12 reached its walltime before its worker joined"
    assert said("12", JobEnd("NODE_FAIL", True)) == "job 12 lost its node before its worker joined"
    assert said("12", JobEnd("")) == "job 12 left the queue before its worker joined"
    assert said("12", JobEnd("DEADLINE")) == "job 12 ended DEADLINE before its worker joined"


def test_a_failed_job_says_its_exit_code_and_the_last_line_of_its_stderr(tmp_path):
    err = tmp_path / "dask-worker-12.err"
    err.write_text("starting\n/opt/py/bin/python: No such file or directory\n\n")
    assert said("12", JobEnd("FAILED", True, "127:0", str(err))) == (
        "job 12 failed before its worker joined (exit code 127): /opt/py/bin/python: No such "
        "file or directory")
    # a file on a node's own disk, not readable here: the line without it
    assert said("12", JobEnd("FAILED", True, "1:0", str(tmp_path / "gone.err"))) == \
        "job 12 failed before its worker joined (exit code 1)"


def _sbatch(env, script, tmp_path, *args) -> str:
    path = tmp_path / f"job{len(list(tmp_path.glob('job*')))}.sh"
    path.write_text("#!/bin/bash\n" + script + "\n")
    out = subprocess.run(["sbatch", "--parsable", f"--error={tmp_path}/%j.err",
                          f"--output={tmp_path}/%j.out", *args, str(path)], env=env,
                         capture_output=True, text=True, check=True)
    return out.stdout.strip().split(";")[0]


def test_slurm_says_pending_cancelled_and_failed_jobs_apart(tmp_path, slurm_env, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", slurm_env["SLURM_CONF"])  # squeue, sacct, scontrol
    env = dict(os.environ)
    held = _sbatch(env, "sleep 60", tmp_path, "--hold")  # pending until released
    bad = _sbatch(env, "/nonexistent/python -m distributed.cli.dask_worker", tmp_path)
    gone = _sbatch(env, "sleep 60", tmp_path, "--hold")
    subprocess.run(["scancel", gone], env=env, check=True)
    assert until(lambda: not isinstance(slurm_jobs([bad])[bad], str), 60)  # ran and failed
    states = slurm_jobs([held, bad, gone, "999999"])
    assert states[held].startswith("PENDING")  # still queued: a string, its state and reason
    assert said(gone, states[gone]) == f"job {gone} was cancelled before it started"
    last = (tmp_path / f"{bad}.err").read_text().strip().splitlines()[-1]
    assert "No such file or directory" in last
    assert said(bad, states[bad]) == (f"job {bad} failed before its worker joined (exit code "
                                      f"127): {last}")
    assert said("999999", states["999999"]) == "job 999999 left the queue before its worker joined"
    subprocess.run(["scancel", held], env=env, check=True)
