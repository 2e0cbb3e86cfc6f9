"""The cluster executor on real Dask clusters on this machine (loopback only), and real Slurm.

The same plan through a LocalCluster gives the local executor's stage hashes; a Dask worker
killed mid-run is retried and the store stays intact; two node classes make a host pair;
`kit run --cluster slurm` goes through dask-jobqueue to a Slurm started by the test.
"""

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from every_kind import two_node_classes
from slurm import until

pytestmark = pytest.mark.slow
KIT = str(Path(sys.executable).with_name("kit"))


def kit(home, *args, timeout=600, env=None):
    return subprocess.run(
        [KIT, *args],
        env=dict(os.environ, KIT_HOME=str(home), **(env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def stage_hashes(home) -> dict:
    """{spec without its host: {stage: sha256}} of every stored run."""
    db = sqlite3.connect(home / "store.sqlite")
    out = {}
    for run, spec in db.execute("SELECT id, spec FROM runs"):
        d = json.loads(spec)
        d.pop("host")
        out[json.dumps(d, sort_keys=True)] = dict(
            db.execute("SELECT stage, sha256 FROM stages WHERE run=?", (run,)).fetchall()
        )
    return out


def manifests(home) -> list:
    db = sqlite3.connect(home / "store.sqlite")
    return [
        (json.loads(s), json.loads(m)) for s, m in db.execute("SELECT spec, manifest FROM runs")
    ]


SEED = ["run", "--factor", "seed", "--seeds", "0,1", "--threads", "1", "--n", "200"]
THREADS = ["run", "--factor", "threads", "--threads", "1,2", "--n", "200"]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the threads factor needs two cores")
def test_a_local_cluster_gives_the_local_executors_stage_hashes(tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    for args in (SEED, THREADS):
        assert kit(here, *args).returncode == 0
    got = kit(there, *SEED, "--cluster", "local:2")
    assert got.returncode == 0, got.stderr
    assert "runs go to node class node-" in got.stderr
    # one worker holding both cores: two workers of one core each could not run 2 threads
    got = kit(there, *THREADS, "--cluster", "local:1")
    assert got.returncode == 0, got.stderr
    a, b = stage_hashes(here), stage_hashes(there)
    assert len(a) == 3 and a == b
    assert all(m["node"]["class"] == s["host"] for s, m in manifests(there))


def test_runs_on_a_cluster_are_made_in_warm_workers_and_the_process_factor_passes(tmp_path):
    """Each Dask worker keeps a warm worker process per (stack, threads, env), as the local path
    does: a later run is made in a process that made runs before; the `process` pair (fresh vs
    warm) is bitwise identical on the cluster too."""
    got = kit(
        tmp_path,
        "run",
        "--factor",
        "process,repeat",
        "--threads",
        "1",
        "--n",
        "200",
        "--cluster",
        "local:1",
        "--json",
    )
    assert got.returncode == 0, got.stderr
    made = {(s.get("process", ""), m["runs_before"]) for s, m in manifests(tmp_path)}
    assert ("fresh", 0) in made and any(p == "warm" and n >= 1 for p, n in made)
    assert max(n for _, n in made) >= 1  # not a fresh process per run
    row = next(r for r in json.loads(got.stdout)["rows"] if r["factor"] == "process")
    assert row["pairs"] == 1 and row["all_identical"] == 1, row


def _kill_a_busy_worker(client, deadline=120) -> int | None:
    """kill -9 the Dask worker process running a kit run now; its pid (None: none was seen)."""
    end = time.time() + deadline
    while time.time() < end:
        busy = [
            a
            for a, keys in client.processing().items()
            if any(str(k).startswith("make_run") for k in keys)
        ]
        if busy:
            try:
                pid = client.run(os.getpid, workers=busy[:1])[busy[0]]
            except Exception:  # noqa: BLE001 - it finished or left meanwhile: look again
                continue
            os.kill(pid, signal.SIGKILL)
            return pid
        time.sleep(0.02)
    return None


@pytest.mark.parametrize("tries", [3, pytest.param(20, marks=pytest.mark.soak)])
def test_a_dask_worker_killed_mid_run_is_retried_every_time_and_the_store_stays_whole(tries):
    """TRIES plans (20 in the soak), a kill -9 of a busy worker in each: every plan completes
    (the nanny restarts the worker at a new address; runs go by node class, never by address)."""
    import threading

    from kit.app import audit as au
    from kit.runs.executing.dask_executor import DaskExecutor
    from kit.runs.planning.options import PlanOptions
    from kit.runs.store import Store

    killed = []
    store = Store()
    with DaskExecutor("local:2") as ex:
        for i in range(tries):
            opts = PlanOptions(
                threads=(1,),
                seeds=(2 * i, 2 * i + 1),
                host=ex.default_host(),
                cores=ex.fewest_cores(),
            )
            a = au.plan_runs(au.prepare(["seed"], "synthetic", 100, opts))
            failed = []
            t = threading.Thread(
                target=_catching, args=(failed, au.execute, a, store), kwargs={"executor": ex}
            )
            t.start()
            killed.append(_kill_a_busy_worker(ex.client))
            t.join(timeout=300)
            assert not t.is_alive(), f"try {i + 1}: the plan hung after a worker was killed"
            assert not failed, f"try {i + 1}: {failed[0]}"
            assert all(store.has_run(s.run_id) for s in a.specs), f"try {i + 1}"
        killed = [pid for pid in killed if pid]
        assert len(killed) >= tries // 2  # most kills hit a run (one may end just before)
        # every kill cost a try of the run it hit (a task placed on a dying worker may cost one more)
        assert len(ex.retried) >= len(killed) // 2
        assert {why for _, why in ex.retried} == {"its worker was lost"}
        assert "run(s) were submitted again" in ex.retried_text()
    # the killed workers' run folders were swept by the workers that replaced them
    tmp = Path(tempfile.gettempdir())
    assert not [d for pid in killed for d in tmp.glob(f"kit-run-{pid}-*")]
    check = subprocess.run([KIT, "store", "check"], capture_output=True, text=True)
    assert check.returncode == 0 and "Traceback" not in check.stderr, check.stdout + check.stderr


def _catching(errors: list, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except BaseException as e:  # noqa: BLE001 - the test thread reports it; pytest would not see it
        errors.append(e)


@pytest.fixture
def two_classes():
    """A scheduler and two workers whose nodes are named as two classes, a and b."""
    with two_node_classes(("a", "b")) as address:
        yield address


def test_two_node_classes_make_a_host_pair(tmp_path, two_classes):
    home = tmp_path / "h"
    check = kit(home, "cluster", "check", "--cluster", two_classes, "--json")
    assert check.returncode == 0, check.stderr
    assert sorted(r["class"] for r in json.loads(check.stdout)) == ["a", "b"]
    got = kit(
        home,
        "run",
        "--factor",
        "host",
        "--hosts",
        "a,b",
        "--n",
        "200",
        "--cluster",
        two_classes,
        "--json",
    )
    assert got.returncode == 0, got.stderr
    rows = [r for r in json.loads(got.stdout)["rows"] if r["factor"] == "host"]
    assert rows and rows[0]["pairs"] == 1
    assert sorted((s["host"], m["node"]["class"]) for s, m in manifests(home)) == [
        ("a", "a"),
        ("b", "b"),
    ]
    wrong = kit(
        home, "run", "--factor", "host", "--hosts", "a,zz", "--n", "200", "--cluster", two_classes
    )
    assert wrong.returncode == 1 and "--hosts 'zz': no worker" in wrong.stderr
    import socket

    spans = kit(
        home,
        "run",
        "--factor",
        "host",
        "--hosts",
        f"a,{socket.gethostname()}",
        "--n",
        "200",
        "--cluster",
        two_classes,
    )  # a host name, of workers of a and b
    assert spans.returncode == 1 and "spans the node classes a, b" in spans.stderr, spans.stderr


def _started(home, *args, env=None) -> subprocess.Popen:
    """`kit ARGS` in a session of its own, as a terminal runs it (a Ctrl-C reaches its group)."""
    # Ctrl-C as a terminal delivers it: a runner that started this suite in the background
    # (`cmd &` in a script) left SIGINT ignored, and an ignored signal stays ignored across exec
    return subprocess.Popen(
        [KIT, *args],
        env=dict(os.environ, KIT_HOME=str(home), **(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_for_runs(home, n: int, proc, deadline=300) -> None:
    end = time.time() + deadline
    while time.time() < end and proc.poll() is None:
        try:
            if len(manifests(home)) >= n:
                return
        except sqlite3.Error:  # the store is being made
            pass
        time.sleep(0.1)
    raise AssertionError(
        f"{n} run(s) were not stored in time: {proc.poll()} "
        f"{proc.stderr.read() if proc.poll() is not None else ''}"
    )


def test_a_restarted_worker_at_a_new_address_takes_its_classs_runs(tmp_path, two_classes):
    """Runs go to a class by a resource: the class-a worker killed mid-plan comes back at a new
    address (its nanny), declares class a again and makes the rest of a's runs; nothing hangs."""
    from distributed import Client

    home = tmp_path / "h"
    proc = _started(
        home,
        "run",
        "--factor",
        "host",
        "--hosts",
        "a,b",
        "--seeds",
        "0",
        "--n",
        "400",
        "--cluster",
        two_classes,
    )
    with Client(two_classes) as client:
        a = next(
            addr
            for addr, w in client.scheduler_info(n_workers=-1)["workers"].items()
            if "kit-class-a" in w["resources"]
        )
        while not client.processing().get(a) and proc.poll() is None:
            time.sleep(0.02)
        os.kill(client.run(os.getpid, workers=[a])[a], signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
        after = [
            addr
            for addr, w in client.scheduler_info(n_workers=-1)["workers"].items()
            if "kit-class-a" in w["resources"]
        ]
    assert proc.returncode == 0, err
    assert after and a not in after  # a new address for class a
    # a scheduler someone else runs has Dask's own allowed-failures: it resubmitted quietly
    assert sorted(m["node"]["class"] for _, m in manifests(home)) == ["a", "b"]


def test_a_run_that_fails_on_every_node_is_reported_and_the_plan_goes_on(tmp_path):
    """Class b's node cannot write the dataset (its KIT_HOME is a file): b's run fails, a's is
    stored and paired with nothing; the budget is printed, then the failure, exit 1."""
    bad = tmp_path / "not-a-folder"
    bad.write_text("")
    with two_node_classes(("a", "b"), env={"b": {"KIT_HOME": str(bad)}}) as address:
        got = kit(
            tmp_path / "h",
            "run",
            "--factor",
            "host",
            "--hosts",
            "a,b",
            "--n",
            "200",
            "--cluster",
            address,
        )
    assert got.returncode == 1
    assert "1 run(s) of this plan failed" in got.stderr and "(b)" in got.stderr, got.stderr
    assert "no pairs of host stored" in got.stdout  # the budget of what was made: a pair needs both
    assert [m["node"]["class"] for _, m in manifests(tmp_path / "h")] == ["a"]
    assert "Traceback" not in got.stderr


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores for one-core workers")
def test_thread_counts_fit_the_workers_and_a_larger_one_is_skipped_with_why(tmp_path):
    """local:2 on two cores: one-core workers. The threads factor's 2-thread run has no worker:
    skipped with a note, while the seed pairs run (it used to end the plan with 0 runs)."""
    got = kit(
        tmp_path,
        "run",
        "--factor",
        "seed,threads",
        "--seeds",
        "0,1",
        "--n",
        "200",
        "--cluster",
        "local:2",
    )
    assert got.returncode == 0, got.stderr
    assert "skipped 1 pair(s) (1 vs 2 threads): 2 threads: no worker of node class" in got.stderr
    assert "offers that many cores (at most 1)" in " ".join(got.stderr.split())
    assert len(manifests(tmp_path)) == 2 and all(s["threads"] == 1 for s, _ in manifests(tmp_path))
    # more threads than the driver's own cores: a cluster's nodes may have more (skipped here)
    wide = kit(
        tmp_path,
        "run",
        "--factor",
        "threads",
        "--threads",
        f"1,{4 * os.cpu_count()}",
        "--n",
        "200",
        "--cluster",
        "local:2",
    )
    assert f"{4 * os.cpu_count()} threads: no worker" in wide.stderr
    # every pair of that plan was skipped: it measured nothing, so it is not a success
    assert wide.returncode == 1 and "nothing of the plan could run" in wide.stderr


@pytest.mark.skipif(
    not shutil.which("taskset") or (os.cpu_count() or 1) < 2,
    reason="needs two cores (and taskset) for one-core workers",
)
def test_thread_counts_no_worker_offers_are_refused_before_a_build_and_said_alone(tmp_path):
    """On one-core workers (local:2 held to two cores), torch-threads is refused from a fresh
    store before its torch stack is built (it was built first, 16-28 s, then refused), and the
    threads factor's plan that ran nothing says only what applies (it advised `kit run --factor
    repeat`)."""
    two = ["taskset", "-c", "0,1", KIT]
    env = dict(os.environ, KIT_HOME=str(tmp_path))
    got = subprocess.run(
        [*two, "run", "--factor", "torch-threads", "--n", "150", "--cluster", "local:2", "--yes"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    said = " ".join(got.stderr.split())
    assert (
        got.returncode == 1
        and "the smallest worker of the cluster offers at most 1 core(s)" in said
    ), got.stderr
    assert "stack" not in said and "torch-threads" in got.stderr.splitlines()[-1]  # none built
    got = subprocess.run(
        [*two, "run", "--factor", "threads", "--n", "150", "--cluster", "local:2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert got.returncode == 1 and "nothing of the plan could run" in got.stderr
    assert "no pairs of threads stored" in got.stdout and "repeat" not in got.stdout, got.stdout


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores for one-core workers")
def test_torch_perturb_and_svd_iters_run_on_a_cluster_from_a_fresh_store(tmp_path):
    """Their reference run (the embedding torch and perturbed runs train on) is planned where
    their runs go, so a node makes it and they name it: from an empty store, each factor's
    pairs are made (svd-iters' levels too)."""
    for factor, kind, more in (
        ("perturb", "perturb", ()),
        ("torch-seed", "torch", ()),
        ("svd-iters", "pipeline", ("--iters", "5,10")),
    ):
        home = tmp_path / factor  # (torch-threads needs 2-core workers)
        got = kit(
            home,
            "run",
            "--factor",
            factor,
            "--seeds",
            "0,1",
            "--n",
            "150",
            *more,
            "--cluster",
            "local:2",
            "--yes",
            "--json",
        )  # torch's stack built if need be
        assert got.returncode == 0, got.stderr
        assert "skipped" not in got.stderr and "has no stage" not in got.stderr
        specs = [s for s, _ in manifests(home)]
        assert kind in {s["kind"] for s in specs}
        assert len({s["host"] for s in specs}) == 1 and specs[0]["host"].startswith("node-")
        rows = [r for r in json.loads(got.stdout)["rows"] if r["factor"] == factor]
        assert rows and all(r["pairs"] >= 1 for r in rows), rows
    assert sorted(r["level"] for r in rows) == ["10", "5"]  # svd-iters: a row per level


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores for one-core workers")
def test_explain_cross_feeds_a_clusters_pairs_on_the_cluster_from_a_fresh_store(tmp_path):
    """A pair made on local:2's node class is cross-fed there: `kit explain` alone says where
    and how (it used to say 'another machine'); with --cluster its cross-fed runs are made on
    the nodes, the pair is explained, and the explanation reads the same without --cluster."""
    assert kit(tmp_path, *SEED, "--cluster", "local:2").returncode == 0
    alone = kit(tmp_path, "explain", "seed", "--n", "200")
    assert alone.returncode == 0, alone.stderr
    said = " ".join(alone.stdout.split())
    assert "its b run was made on node class node-" in said and "kit explain --cluster" in said
    there = kit(tmp_path, "explain", "seed", "--n", "200", "--cluster", "local:2", "--json")
    assert there.returncode == 0, there.stderr
    assert "cross-fed run(s) to make" in there.stderr  # said as kit run says it:
    assert "\nkit: starting a local Dask cluster" in "\n" + there.stderr
    fed = [(s, m) for s, m in manifests(tmp_path) if s["kind"] == "feed"]
    assert fed and all(
        m["node"]["class"] == s["host"] and s["host"].startswith("node-") for s, m in fed
    )
    pair = json.loads(there.stdout)["pairs"][0]
    assert pair["first_origin"] == "svd_rand", pair  # a seed moves the randomized SVD first
    assert pair["stages"]["knn"]["origin"] == "inherited"
    again = kit(tmp_path, "explain", "seed", "--n", "200", "--json")  # read back, no cluster
    assert again.returncode == 0 and json.loads(again.stdout)["pairs"] == [pair]
    assert "Dask" not in again.stderr  # nothing left to make: no cluster started


@pytest.mark.parametrize(
    "sig, code, says", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_an_interrupted_cluster_plan_ends_with_its_signals_status_and_leaves_nothing(
    tmp_path, sig, code, says
):
    proc = _started(
        tmp_path,
        "run",
        "--factor",
        "seed",
        "--seeds",
        "0-5",
        "--threads",
        "1",
        "--n",
        "400",
        "--cluster",
        "local:2",
    )
    _wait_for_runs(tmp_path, 1, proc)
    t = time.time()
    # a terminal's Ctrl-C reaches the whole group; `timeout`'s SIGTERM only kit itself
    os.killpg(proc.pid, sig) if sig == signal.SIGINT else proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert f"kit: {says}; finished runs are stored" in err and "Traceback" not in err
    assert time.time() - t < 30
    time.sleep(2)
    left = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True)
    assert left.stdout.strip() == "", "processes of the plan outlived it"
    assert 1 <= len(manifests(tmp_path)) < 6


def test_workers_that_do_not_declare_their_cores_are_refused_with_the_fix(tmp_path):
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=1, threads_per_worker=1, dashboard_address="127.0.0.1:0", host="127.0.0.1"
    ) as cluster:
        got = kit(tmp_path, "cluster", "check", "--cluster", cluster.scheduler_address)
    assert got.returncode == 1
    assert "declares no 'cores' resource" in got.stderr and "--resources cores=N" in got.stderr
    assert "Traceback" not in got.stderr


def test_kit_run_on_slurm_through_dask_jobqueue(tmp_path, slurm_env):
    home = tmp_path / "h"
    home.mkdir()
    (home / "cluster.toml").write_text(
        '[jobqueue]\nqueue = "main"\ncores = 1\nmemory = "2GB"\n'
        'walltime = "00:20:00"\njobs = 1\ninterface = "lo"\n'
        "wait_s = 180\n"
    )
    got = kit(home, *SEED, "--cluster", "slurm", env=slurm_env)
    assert got.returncode == 0, got.stderr
    assert "1 slurm job(s) through dask-jobqueue" in got.stderr
    assert len(manifests(home)) == 2
    queue = subprocess.run(
        ["squeue", "-h"], env=dict(os.environ, **slurm_env), capture_output=True, text=True
    )
    assert queue.stdout.strip() == ""  # kit's jobs end with kit
    assert list((home / "logs" / "slurm").glob("*.out"))  # the job's output beside kit's logs


def test_a_local_cluster_gives_kit_its_environment_back(monkeypatch):
    """distributed's nannies run in kit's process and set PYTHONHASHSEED there before starting
    each worker: later local runs of the same process recorded it and differed from earlier ones
    (a `host` confound that came and went with the order of the commands)."""
    from kit.runs.executing.dask_executor import DaskExecutor

    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    before = dict(os.environ)
    with DaskExecutor("local:1"):
        pass
    assert dict(os.environ) == before


SLURM = (
    '[jobqueue]\nqueue = "main"\ncores = 1\nmemory = "2GB"\nwalltime = "00:20:00"\n'
    'jobs = 1\ninterface = "lo"\nwait_s = 180\n'
)


def _squeue(env) -> list:
    got = subprocess.run(
        ["squeue", "-h", "-o", "%i"], env=dict(os.environ, **env), capture_output=True, text=True
    )
    return got.stdout.split()


def _slurm_plan_under_way(home, seeds: str, env) -> subprocess.Popen:
    """A seed plan on one Slurm job of one core, once its first run is stored."""
    home.mkdir()
    (home / "cluster.toml").write_text(SLURM)
    proc = _started(
        home,
        "run",
        "--factor",
        "seed",
        "--seeds",
        seeds,
        "--threads",
        "1",
        "--n",
        "400",
        "--cluster",
        "slurm",
        env=env,
    )
    _wait_for_runs(home, 1, proc, deadline=240)
    return proc


def test_a_cancelled_slurm_job_is_replaced_and_the_plan_completes(tmp_path, slurm_env):
    """scancel of the only job mid-plan: its run is lost, kit submits a job again (SpecCluster,
    once the worker is gone) and the run again; the plan completes, every run stored."""
    home = tmp_path / "h"
    proc = _slurm_plan_under_way(home, "0-3", slurm_env)
    first = _squeue(slurm_env)
    assert len(first) == 1
    subprocess.run(["scancel", first[0]], env=dict(os.environ, **slurm_env), check=True)
    out, err = proc.communicate(timeout=400)
    assert proc.returncode == 0, err
    assert len(manifests(home)) == 4
    assert "Traceback" not in err
    assert _squeue(slurm_env) == []  # the replacement ended with kit


def test_ctrl_c_on_a_slurm_plan_exits_130_and_cancels_its_jobs(tmp_path, slurm_env):
    home = tmp_path / "h"
    proc = _slurm_plan_under_way(home, "0-5", slurm_env)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err  # dask-jobqueue's import had set SIGINT to sys.exit()
    assert "kit: interrupted; finished runs are stored" in err and "Traceback" not in err
    end = time.time() + 20
    while _squeue(slurm_env) and time.time() < end:
        time.sleep(0.5)
    assert _squeue(slurm_env) == []


def test_a_plan_starts_with_the_first_job_and_does_not_wait_for_the_rest(tmp_path, slurm_env):
    """jobs = 2 of 2 cores on a 2-CPU node: one job runs, one waits in the queue; the plan runs
    on the first (it used to wait for both, then give up with 0 runs)."""
    home = tmp_path / "h"
    home.mkdir()
    (home / "cluster.toml").write_text(
        SLURM.replace("cores = 1", f"cores = {os.cpu_count()}")
        .replace("jobs = 1", "jobs = 2")
        .replace("180", "60")
    )
    got = kit(home, *SEED, "--cluster", "slurm", env=slurm_env)
    assert got.returncode == 0, got.stderr
    assert len(manifests(home)) == 2 and _squeue(slurm_env) == []


def _scontrol(env, *args) -> None:
    subprocess.run(
        ["scontrol", *args], env=dict(os.environ, **env), check=True, capture_output=True
    )


def test_a_job_cancelled_while_pending_is_replaced_and_the_last_line_names_it(tmp_path, slurm_env):
    """The partition held down, kit's job waits in the queue; scancel of it while pending: kit
    says so and submits another job (SpecCluster never would: no worker of it was lost), which
    starts once the partition is up; the plan completes and its last line names the
    cancellation (kit used to wait its whole wait_s, then blame the queue or the python)."""
    home = tmp_path / "h"
    home.mkdir()
    (home / "cluster.toml").write_text(SLURM)
    _scontrol(slurm_env, "update", "PartitionName=main", "State=DOWN")
    proc = _started(home, *SEED, "--cluster", "slurm", env=slurm_env)
    try:
        first = until(lambda: _squeue(slurm_env), 120)
        assert first and len(first) == 1, proc.poll()
        subprocess.run(["scancel", first[0]], env=dict(os.environ, **slurm_env), check=True)
        second = until(lambda: [j for j in _squeue(slurm_env) if j != first[0]], 90)
        assert second, "no job was submitted in place of the one cancelled while pending"
        _scontrol(slurm_env, "update", "PartitionName=main", "State=UP")
        out, err = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert (
        f"kit: job {first[0]} was cancelled before it started; submitted job {second[0]} "
        f"(try 2 of 3)"
    ) in err
    assert err.strip().splitlines()[-1] == (
        f"kit: 1 job(s) left the queue before their worker "
        f"joined: job {first[0]} was cancelled before it "
        "started"
    )
    assert len(manifests(home)) == 2 and "Traceback" not in err
    assert _squeue(slurm_env) == []


def test_a_job_that_fails_as_it_starts_is_tried_three_times_then_named(tmp_path, slurm_env):
    """The workers' python does not exist: each job fails at once. kit submits the job again
    twice, then ends with the job's own words (its exit code and stderr's last line), long
    before wait_s (300 s: kit used to wait it out, then guess)."""
    home = tmp_path / "h"
    home.mkdir()
    (home / "cluster.toml").write_text(
        SLURM.replace("wait_s = 180", "wait_s = 300") + 'python = "/nonexistent/python"\n'
    )
    got = kit(home, *SEED, "--cluster", "slurm", env=slurm_env, timeout=240)
    assert got.returncode == 1, got.stderr
    lines = got.stderr.strip().splitlines()
    assert (
        sum(
            "failed before its worker joined (exit code 127)" in ln and "submitted job" in ln
            for ln in lines
        )
        == 2
    ), got.stderr
    last = lines[-1]
    assert last.startswith(
        "kit: error: 1 slurm job(s) through dask-jobqueue: no worker joined: job "
    ), last
    assert "failed before its worker joined (exit code 127)" in last
    assert "/nonexistent/python: No such file or directory" in last and "3 jobs tried" in last
    assert "Traceback" not in got.stderr
    assert _squeue(slurm_env) == []


def _only_kits_lines(err: str) -> None:
    """Nothing of Dask's on stderr: no warning, no log line, no port."""
    for word in ("Warning", "warnings.warn", "distributed", "tornado", "8787", "Traceback"):
        assert word not in err, err


def test_with_port_8787_taken_a_local_cluster_says_nothing_of_dask(tmp_path, port_8787_taken):
    got = kit(tmp_path, *SEED, "--cluster", "local:2")
    assert got.returncode == 0, got.stderr
    _only_kits_lines(got.stderr)


def test_with_port_8787_taken_slurm_says_nothing_of_dask_even_for_a_dashboard_asked_there(
    tmp_path, slurm_env, port_8787_taken
):
    """kit's jobqueue scheduler puts its dashboard on a free port; one a lab asks for on 8787
    (extra's scheduler_options) finds it taken, and distributed's warning goes to cluster.log
    (it reached the terminal, as every warning of distributed's did)."""
    home = tmp_path / "h"
    home.mkdir()
    (home / "cluster.toml").write_text(SLURM)
    got = kit(home, *SEED, "--cluster", "slurm", env=slurm_env)
    assert got.returncode == 0, got.stderr
    _only_kits_lines(got.stderr)
    (home / "cluster.toml").write_text(
        SLURM + 'extra = { scheduler_options = { dashboard_address = ":8787" } }\n'
    )
    got = kit(home, *SEED[:4], "0,2", *SEED[5:], "--cluster", "slurm", env=slurm_env)
    assert got.returncode == 0, got.stderr
    _only_kits_lines(got.stderr)
    assert "Port 8787 is already in use" in (home / "logs" / "cluster.log").read_text()
    assert len(manifests(home)) == 3 and _squeue(slurm_env) == []


def test_no_worker_within_wait_s_names_the_pending_job_and_why_it_waits(tmp_path, slurm_env):
    """A job the queue holds (its partition down): after wait_s the line says which job waits
    and Slurm's reason, not a guess at the queue or the workers' python."""
    home = tmp_path / "h"
    home.mkdir()
    (home / "cluster.toml").write_text(SLURM.replace("wait_s = 180", "wait_s = 15"))
    _scontrol(slurm_env, "update", "PartitionName=main", "State=DOWN")
    got = kit(home, *SEED, "--cluster", "slurm", env=slurm_env, timeout=120)
    assert got.returncode == 1, got.stderr
    last = got.stderr.strip().splitlines()[-1]
    assert re.fullmatch(
        r"kit: error: 1 slurm job\(s\) through dask-jobqueue: no worker joined "
        r"within 15 s \(job \d+ is pending \(PartitionDown\)\)",
        last,
    ), last
    assert _squeue(slurm_env) == []  # its job cancelled as kit ended
