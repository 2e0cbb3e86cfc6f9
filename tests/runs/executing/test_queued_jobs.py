"""kit.runs.executing.queued_jobs: what became of a batch job whose worker never joined, in one
line: as a real Slurm says it (tests/support/slurm.py), and as PBS, SGE, LSF and HTCondor say it in
the output formats recorded below (fake commands first on PATH: none of them can be installed
here)."""

import os
import subprocess
import textwrap
from types import SimpleNamespace

import pytest
from slurm import until

from kit.runs.executing import queued_jobs
from kit.runs.executing.queued_jobs import QUEUES, JobEnd, QueuedJobs, said, slurm_jobs


def test_each_end_is_one_line_naming_the_job():
    assert said("12", JobEnd("CANCELLED")) == "job 12 was cancelled before it started"
    assert (
        said("12", JobEnd("CANCELLED", started=True))
        == "job 12 was cancelled before its worker joined"
    )
    assert (
        said("12", JobEnd("TIMEOUT", True))
        == "job 12 reached its walltime before its worker joined"
    )
    assert said("12", JobEnd("NODE_FAIL", True)) == "job 12 lost its node before its worker joined"
    assert said("12", JobEnd("")) == "job 12 left the queue before its worker joined"
    assert said("12", JobEnd("DEADLINE")) == "job 12 ended DEADLINE before its worker joined"


def test_a_failed_job_says_its_exit_code_and_the_last_line_of_its_stderr(tmp_path):
    err = tmp_path / "dask-worker-12.err"
    err.write_text("starting\n/opt/py/bin/python: No such file or directory\n\n")
    assert said("12", JobEnd("FAILED", True, "127:0", str(err))) == (
        "job 12 failed before its worker joined (exit code 127): /opt/py/bin/python: No such "
        "file or directory"
    )
    # a file on a node's own disk, not readable here: the line without it
    assert (
        said("12", JobEnd("FAILED", True, "1:0", str(tmp_path / "gone.err")))
        == "job 12 failed before its worker joined (exit code 1)"
    )


def _sbatch(env, script, tmp_path, *args) -> str:
    path = tmp_path / f"job{len(list(tmp_path.glob('job*')))}.sh"
    path.write_text("#!/bin/bash\n" + script + "\n")
    out = subprocess.run(
        [
            "sbatch",
            "--parsable",
            f"--error={tmp_path}/%j.err",
            f"--output={tmp_path}/%j.out",
            *args,
            str(path),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
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
    assert said(bad, states[bad]) == (
        f"job {bad} failed before its worker joined (exit code 127): {last}"
    )
    assert said("999999", states["999999"]) == "job 999999 left the queue before its worker joined"
    subprocess.run(["scancel", held], env=env, check=True)


# --- the other batch systems: no PBS, SGE, LSF or HTCondor can be installed here, so each reader
# is checked against fake commands first on PATH that print what the real commands print, in the
# formats named with each sample (not against a live system).


def _fake(bindir, name: str, cases: list) -> None:
    """A command ``name`` that answers the first case whose glob matches " its args ": each case
    (glob, stdout, stderr, exit status)."""
    bindir.mkdir(exist_ok=True)
    lines = ["#!/bin/bash", 'case " $* " in']
    for i, (glob, out, err, rc) in enumerate(cases):
        (bindir / f"{name}.{i}.out").write_text(textwrap.dedent(out).lstrip("\n"))
        (bindir / f"{name}.{i}.err").write_text(textwrap.dedent(err).lstrip("\n"))
        lines.append(f'  {glob}) cat "$0.{i}.out"; cat "$0.{i}.err" >&2; exit {rc};;')
    lines.append("esac")
    (bindir / name).write_text("\n".join(lines) + "\n")
    (bindir / name).chmod(0o755)


@pytest.fixture
def fake_bin(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    return bindir


def _pbs(bindir, tmp_path):
    (tmp_path / "dask-worker.e124").write_text(
        "/var/spool/pbs/mom_priv/jobs/124.pbs_master.SC: line 12: /opt/py/bin/python: No such "
        "file or directory\n"
    )
    # `qstat -f -1`: "Job Id: %s" then "    %s = %s" (openpbs/openpbs src/cmds/qstat.c
    # display_statjob, prt_attr); a finished job is refused with "qstat: %s Job has finished, use
    # -x or -H to obtain historical job information" and an unknown one with "qstat: Unknown Job
    # Id %s" (qstat.c, src/lib/Liblog/pbs_messages.c); substate 91 = terminated by qdel, 93 =
    # failed (src/include/job.h JOB_SUBSTATE_*, src/server/svr_jobfunc.c)
    _fake(
        bindir,
        "qstat",
        [
            (
                '*" -x "*',
                f"""
            Job Id: 124.pbs_master
                Job_Name = dask-worker
                job_state = F
                queue = workq
                Error_Path = pbs_master:{tmp_path}/dask-worker.e124
                exec_host = pbs_slave_1/0
                comment = Job run at Tue Jun 03 at 10:00 on (pbs_slave_1:ncpus=1) and failed
                Exit_status = 127
                stime = Tue Jun  3 10:00:01 2025
                substate = 93

            Job Id: 125.pbs_master
                Job_Name = dask-worker
                job_state = F
                queue = workq
                Error_Path = pbs_master:{tmp_path}/dask-worker.e125
                comment = Not Running: Insufficient amount of resource: ncpus (total 2 < 4) and te\
rminated
                substate = 91

            """,
                "",
                0,
            ),
            (
                "*",
                """
            Job Id: 123.pbs_master
                Job_Name = dask-worker
                Job_Owner = pbsuser@pbs_master
                job_state = Q
                queue = workq
                server = pbs_master
                Error_Path = pbs_master:/home/pbsuser/dask-worker.e123
                comment = Not Running: Insufficient amount of resource: ncpus (total 2 < 4)
                substate = 10

            """,
                """
            qstat: 124.pbs_master Job has finished, use -x or -H to obtain historical job informa\
tion
            qstat: 125.pbs_master Job has finished, use -x or -H to obtain historical job informa\
tion
            qstat: Unknown Job Id 126.pbs_master
            """,
                153,
            ),
        ],
    )
    return {"queued": "123", "failed": "124", "cancelled": "125", "unknown": "126"}


def _sge(bindir, tmp_path):
    # `qstat`: the job-ID prior name user state ... table (a real one: pastebin.com/ySwWxd9P);
    # `qacct -j`: 35-column labels (hpc-gridware/clusterscheduler source/clients/qacct/
    # ocs_qacct.cc showjob: SHOWJOB_STRING_20, SHOWJOB_U32_FAILED "%-3u %s %s") and "error: job
    # id %u not found" (source/common/msg_history.h) for a job with no record, as a job deleted
    # while pending has none (job_exit.cc writes records only for jobs that ran)
    _fake(
        bindir,
        "qstat",
        [
            (
                "*",
                """
        job-ID  prior   name       user         state submit/start at     queue                          slots ja-task-ID
        -----------------------------------------------------------------------------------------------------------------
            201 0.55500 dask-worke sgeuser      qw    06/03/2025 10:00:00                                    1
            204 0.55500 dask-worke sgeuser      Eqw   06/03/2025 10:00:00                                    1
        """,
                "",
                0,
            )
        ],
    )
    _fake(
        bindir,
        "qacct",
        [
            (
                '*" 202 "*',
                """
            ==============================================================
            qname                              all.q
            hostname                           sge-slave-one
            owner                              sgeuser
            jobname                            dask-worker
            jobnumber                          202
            taskid                             undefined
            qsub_time                          06/03/2025 10:00:00.000
            start_time                         06/03/2025 10:00:01.000
            end_time                           06/03/2025 10:00:02.000
            granted_pe                         NONE
            slots                              1
            failed                             0
            exit_status                        127
            ru_wallclock                       1
            """,
                "",
                0,
            ),
            (
                '*" 206 "*',
                """
            ==============================================================
            qname                              all.q
            hostname                           sge-slave-one
            jobnumber                          206
            start_time                         -/-
            failed                             1   : assumedly before job
            exit_status                        0
            """,
                "",
                0,
            ),
            ("*", "", "error: job id 203 not found\n", 1),  # 205 alike: only the exit counts
        ],
    )
    return {"queued": "201", "failed": "202", "cancelled": "203", "unknown": "205"}


def _lsf(bindir, tmp_path):
    (tmp_path / "dask-worker-302.err").write_text("/opt/py/bin/python: No such file or directory\n")
    # `bjobs -json -o ...`: {"COMMAND":"bjobs","JOBS":n,"RECORDS":[{FIELD: "value"}]}, "" for a
    # field with no value (buildtest's bjobs sample of a PSUSP job; roddy's LSFJobManagerSpec
    # RAW_JSON_OUTPUT; a killed job's "EXIT_REASON":"TERM_OWNER: job killed by owner" from
    # the toil orchestrator's LSF client test). What LSF puts in the record of a job it no longer
    # knows is not in those samples: any record without STAT is taken as that job being gone.
    _fake(
        bindir,
        "bjobs",
        [
            (
                "*",
                f"""
        {{
          "COMMAND":"bjobs",
          "JOBS":4,
          "RECORDS":[
            {{
              "JOBID":"301",
              "STAT":"PEND",
              "EXIT_CODE":"",
              "EXEC_HOST":"",
              "EXIT_REASON":"",
              "PEND_REASON":"New job is waiting for scheduling;",
              "ERROR_FILE":"{tmp_path}/dask-worker-%J.err"
            }},
            {{
              "JOBID":"302",
              "STAT":"EXIT",
              "EXIT_CODE":"127",
              "EXEC_HOST":"lsf-node1",
              "EXIT_REASON":"",
              "PEND_REASON":"",
              "ERROR_FILE":"{tmp_path}/dask-worker-%J.err"
            }},
            {{
              "JOBID":"303",
              "STAT":"EXIT",
              "EXIT_CODE":"",
              "EXEC_HOST":"",
              "EXIT_REASON":"TERM_OWNER: job killed by owner",
              "PEND_REASON":"",
              "ERROR_FILE":"{tmp_path}/dask-worker-%J.err"
            }},
            {{
              "JOBID":"304",
              "ERROR":"Job <304> is not found"
            }}
          ]
        }}
        """,
                "",
                0,
            )
        ],
    )
    return {"queued": "301", "failed": "302", "cancelled": "303", "unknown": "304"}


def _htcondor(bindir, tmp_path):
    (tmp_path / "worker-402.0.err").write_text("/opt/py/bin/python: No such file or directory\n")
    # `condor_q -json -attributes A,B ids` and condor_history likewise: a JSON list of job ads,
    # nothing at all when no job matches (used so by cms-sw's condor scripts); JobStatus 1 idle,
    # 2 running, 3 removed, 4 completed, 5 held (HTCondor's job ClassAd attributes)
    _fake(
        bindir,
        "condor_q",
        [
            (
                "*",
                """
        [
        {
          "ClusterId": 401,
          "Iwd": "/home/submituser",
          "JobStatus": 1,
          "ProcId": 0
        }
        ,
        {
          "ClusterId": 404,
          "HoldReason": "Error from slot1@htcondor-execute: Failed to open '/nonexistent/worker-404.0.out' as standard output: No such file or directory (errno 2)",
          "Iwd": "/home/submituser",
          "JobStatus": 5,
          "ProcId": 0
        }
        ]
        """,
                "",
                0,
            )
        ],
    )
    _fake(
        bindir,
        "condor_history",
        [
            (
                '*" 402.0 "*',
                f"""
            [
            {{
              "ClusterId": 402,
              "Err": "worker-402.0.err",
              "ExitBySignal": false,
              "ExitCode": 127,
              "Iwd": "{tmp_path}",
              "JobStartDate": 1748944801,
              "JobStatus": 4,
              "ProcId": 0
            }}
            ]
            """,
                "",
                0,
            ),
            (
                '*" 403.0 "*',
                """
            [
            {
              "ClusterId": 403,
              "Iwd": "/home/submituser",
              "JobStatus": 3,
              "ProcId": 0,
              "RemoveReason": "via condor_rm (by user submituser)"
            }
            ]
            """,
                "",
                0,
            ),
            ("*", "", "", 0),
        ],
    )
    return {"queued": "401.0", "failed": "402.0", "cancelled": "403.0", "unknown": "405.0"}


SYSTEMS = {"pbs": _pbs, "sge": _sge, "lsf": _lsf, "htcondor": _htcondor}
# what each says of a job cancelled while pending: SGE keeps no record of one
CANCELLED = {
    "pbs": "job {} was cancelled before it started",
    "sge": "job {} left the queue before its worker joined",
    "lsf": "job {} was cancelled before it started",
    "htcondor": "job {} was cancelled before it started",
}
FAILED = {
    "pbs": "job 124 failed before its worker joined (exit code 127): /var/spool/pbs/mom_priv/"
    "jobs/124.pbs_master.SC: line 12: /opt/py/bin/python: No such file or directory",
    "sge": "job 202 failed before its worker joined (exit code 127)",
    "lsf": "job 302 failed before its worker joined (exit code 127): /opt/py/bin/python: No "
    "such file or directory",
    "htcondor": "job 402.0 failed before its worker joined (exit code 127): /opt/py/bin/"
    "python: No such file or directory",
}


@pytest.mark.parametrize("system", SYSTEMS)
def test_each_system_says_queued_cancelled_failed_and_unknown_jobs_apart(
    system, fake_bin, tmp_path
):
    ids = SYSTEMS[system](fake_bin, tmp_path)
    states = QUEUES[system](list(ids.values()))
    assert set(states) == set(ids.values())
    assert isinstance(states[ids["queued"]], str) and states[ids["queued"]].startswith("PENDING")
    assert said(ids["cancelled"], states[ids["cancelled"]]) == CANCELLED[system].format(
        ids["cancelled"]
    )
    assert said(ids["failed"], states[ids["failed"]]) == FAILED[system]
    assert (
        said(ids["unknown"], states[ids["unknown"]])
        == f"job {ids['unknown']} left the queue before its worker joined"
    )


def test_a_job_held_in_its_queue_is_waited_for_and_named_with_why(fake_bin, tmp_path):
    _sge(fake_bin, tmp_path)
    _htcondor(fake_bin, tmp_path)
    assert QUEUES["sge"](["204"]) == {"204": "ERROR Eqw"}
    assert QUEUES["htcondor"](["404.0"])["404.0"].startswith("HELD Error from slot1@")
    jobs = QueuedJobs("sge", 3, {"w0": ""})
    jobs.queued = {"204": "ERROR Eqw", "201": "PENDING qw"}
    assert jobs.waiting() == "job 204 is in error (Eqw); job 201 is pending (qw)"
    # SGE's failed code is why it never ran: said without the job's own exit status
    assert (
        said("206", QUEUES["sge"](["206"])["206"])
        == "job 206 failed before its worker joined: assumedly before job"
    )


def test_a_system_that_does_not_answer_says_nothing_of_its_jobs(fake_bin, monkeypatch):
    fake_bin.mkdir()
    monkeypatch.setenv("PATH", str(fake_bin))  # none of their commands
    for system, ask in QUEUES.items():
        assert ask(["12"]) == {}, system
    # a command that does not answer within ASK_S, or answers with an error of its own
    for name in ("qstat", "bjobs", "condor_q"):
        (fake_bin / name).write_text("#!/bin/bash\nexec /bin/sleep 5\n")
        (fake_bin / name).chmod(0o755)
    monkeypatch.setattr(queued_jobs, "ASK_S", 0.3)
    assert QUEUES["pbs"](["12"]) == QUEUES["sge"](["12"]) == {}
    assert QUEUES["lsf"](["12"]) == QUEUES["htcondor"](["12.0"]) == {}
    monkeypatch.setattr(queued_jobs, "ASK_S", 30.0)
    _fake(
        fake_bin,
        "qstat",
        [
            (
                "*",
                "",
                "Connection refused\nqstat: cannot connect to server pbs_master (errno=15010)\n",
                2,
            )
        ],
    )
    _fake(fake_bin, "bjobs", [("*", "", "LSF is down. Please wait ...\n", 255)])
    _fake(
        fake_bin,
        "condor_q",
        [
            (
                "*",
                "",
                "-- Failed to fetch ads from: <10.0.0.2:9618> : "
                "submit\nCEDAR:6001:Failed to connect\n",
                1,
            )
        ],
    )
    assert QUEUES["pbs"](["12"]) == QUEUES["sge"](["12"]) == {}
    assert QUEUES["lsf"](["12"]) == QUEUES["htcondor"](["12.0"]) == {}


@pytest.mark.parametrize("system", SYSTEMS)
def test_a_job_cancelled_while_pending_is_submitted_again_in_its_slot(system, fake_bin, tmp_path):
    ids = SYSTEMS[system](fake_bin, tmp_path)
    gone = ids["cancelled"]
    # dask-jobqueue's cluster as QueuedJobs reads it: its jobs by slot, the workers that joined
    cluster = SimpleNamespace(
        workers={"w0": SimpleNamespace(job_id=gone), "w1": SimpleNamespace(job_id=ids["queued"])},
        scheduler_info={"workers": {}},
    )
    jobs = QueuedJobs(system, 3, {"w0": "", "w1": ""})
    asked = []
    lines = jobs.look(cluster, lambda slot, job: asked.append((slot, job.job_id)) or "999")
    first = CANCELLED[system].format(gone)
    assert lines == [f"{first}; submitted job 999 (try 2 of 3)"]
    assert asked == [("w0", gone)]
    assert jobs.text() == f"1 job(s) left the queue before their worker joined: {first}"
    assert jobs.waiting().startswith(f"job {ids['queued']} is pending")


def test_the_ids_read_are_those_dask_jobqueue_makes_from_each_submit_command():
    from kit.runs.executing.job_templates import cluster_class

    # what qsub (OpenPBS), qsub (SGE), bsub (gc3pie's LSF notes) and condor_submit (cms-sw's
    # condor scripts) print; dask-jobqueue's own parser keeps the number ("401.0" for HTCondor)
    said_by = {
        "pbs": ("123.pbs_master\n", "123"),
        "sge": ('Your job 201 ("dask-worker") has been submitted\n', "201"),
        "lsf": ("Job <301> is submitted to queue <normal>.\n", "301"),
        "htcondor": ("Submitting job(s).\n1 job(s) submitted to cluster 401.\n", "401.0"),
    }
    for system, (out, job) in said_by.items():
        cls = cluster_class(system).job_cls
        assert (
            cls._job_id_from_submit_output(SimpleNamespace(job_id_regexp=cls.job_id_regexp), out)
            == job
        ), system
