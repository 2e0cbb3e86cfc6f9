"""`kit run` end to end on a few hundred synthetic proteins: the null experiment and seeds."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

# its module fixtures (real runs, an MMseqs2 search) are made once: the module's tests share one xdist worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("scenarios/test_end_to_end")]
KIT = [str(Path(sys.executable).with_name("kit"))]
N = "300"


def kit(home, *args, check=True):
    env = dict(os.environ, KIT_HOME=str(home))
    proc = subprocess.run(KIT + list(args), env=env, capture_output=True, text=True, timeout=900)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("e2e-home")
    kit(home, "run", "--factor", "repeat", "--n", N, "--threads", "1,2")
    kit(home, "run", "--factor", "seed", "--n", N, "--threads", "1", "--seeds", "0-2")
    return home


@pytest.fixture(scope="module")
def full_home(home):
    kit(
        home,
        "run",
        "--factor",
        "precision,svd-iters,svd-solver",
        "--n",
        N,
        "--threads",
        "1",
        "--seeds",
        "0-2",
        "--iters",
        "5,50",
    )
    return home


def rows(home):
    b = json.loads(kit(home, "budget", "--json").stdout)
    return b, {r["factor"]: r for r in b["rows"]}


def test_repeat_is_bitwise_identical_everywhere(home):
    b, r = rows(home)
    rep = r["repeat"]
    assert rep["pairs"] == 2 and rep["all_identical"] == 2
    assert all(v == 2 for v in rep["identical"].values())
    assert rep["emb_rel_max"] == 0 and all(m["flips_max"] == 0 for m in rep["models"].values())
    assert b["dataset"]["synthetic"] is True and b["dataset"]["rows"] == 300


def test_seed_changes_embedding_and_predictions(home):
    b, r = rows(home)
    seed = r["seed"]
    assert seed["pairs"] == 2
    assert seed["identical"]["kmer"] == 2 and seed["identical"]["tfidf"] == 2
    assert seed["identical"]["svd_rand"] == 0 and seed["emb_rel_max"] > 0.05
    assert seed["kmeans_ari_min"] < 1 and seed["knn_jaccard_min"] < 1
    assert sum(m["flips_max"] for m in seed["models"].values()) > 0
    assert b["yardstick"]["pairs"] == 2 and b["note"] is None


def test_runs_json_carries_spec_and_stage_hashes(home):
    """(before the other factors are added by full_home)"""
    runs = json.loads(kit(home, "runs", "--json").stdout)
    assert len(runs) == 6  # 2 thread counts x 2 repeats + seeds 1 and 2 (seed 0 is shared)
    for run in runs:
        assert len(run["stages"]["svd_rand"]["sha256"]) == 64
        assert run["spec"]["stack"] == "host" and len(run["spec"]["dataset"]) == 64
        assert run["manifest"]["env"]["packages"]["numpy"]


def test_budget_text_and_pair_drilldown(home):
    out = kit(home, "budget").stdout
    assert "[SYNTHETIC]" in out and "repeat" in out and "1 seed unit" in out
    pairs = json.loads(kit(home, "budget", "--factor", "seed", "--json").stdout)
    assert [p["label"] for p in pairs] == ["seed 0 vs 1", "seed 0 vs 2"]


def test_a_finished_run_is_never_run_again(home):
    proc = kit(home, "run", "--factor", "seed", "--n", N, "--threads", "1", "--seeds", "0-2")
    assert "3 stored, 0 to run" in proc.stderr


def test_killed_run_resumes_without_half_written_runs(tmp_path, monkeypatch, own_tmpdir):
    """Killed (worker and all) while one run is stored and the others are mid-run: the first
    worker makes its run, every later one holds still until the kill (a sitecustomize beside
    the worker code, on every worker's PYTHONPATH: this test's own, own_tmpdir), so the kill
    always lands mid-run."""
    from kit.envs.launch import worker_root

    home = tmp_path / "h"
    monkeypatch.setenv("KIT_HOME", str(home))
    hold = worker_root() / "sitecustomize.py"
    hold.write_text(
        "import os, signal, sys\n"
        "if '--spec' in sys.argv:\n"
        "    try:\n"
        f"        os.close(os.open({str(tmp_path / 'first')!r}, os.O_CREAT | os.O_EXCL))\n"
        "    except FileExistsError:\n"
        "        signal.pause()\n"
    )
    args = ["run", "--factor", "seed", "--n", N, "--threads", "1", "--seeds", "0-3", "--fresh"]
    proc = subprocess.Popen(
        KIT + args,
        env=dict(os.environ, KIT_HOME=str(home)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    db = home / "store.sqlite"
    deadline = time.time() + 300
    try:
        while time.time() < deadline:  # until the first run is indexed
            if db.exists() and _indexed(db):
                break
            time.sleep(0.2)
    finally:  # whatever the wait met: kit and its held workers never outlive the test
        os.killpg(proc.pid, signal.SIGKILL)  # worker and all, mid-run
        proc.wait()
    hold.unlink()  # the next run's workers run
    con = sqlite3.connect(db)
    done = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    assert done == 1  # the first worker's run; the others were held mid-run
    # every indexed run is complete: all its stages, each array file present
    assert con.execute("SELECT count(DISTINCT run) FROM stages").fetchone()[0] == done
    out = kit(home, *args)
    assert f"{done} stored, {4 - done} to run" in out.stderr
    assert json.loads(kit(home, "budget", "--json").stdout)["rows"][0]["pairs"] == 3


def test_budget_verdicts_advice_and_report(full_home, tmp_path):
    b, r = rows(full_home)
    assert set(r) >= {"repeat", "seed", "precision", "svd-iters"}
    assert r["precision"]["identical"]["tfidf"] == 0 and r["precision"]["identical"]["kmer"] == 1
    levels = sorted(x["level"] for x in b["rows"] if x["factor"] == "svd-iters")
    assert levels == ["5", "50"]
    v = json.loads(kit(full_home, "verdicts", "--set", "seeds", "--json").stdout)["seeds"]
    assert len(v) == 12 and all(x["runs"] == 3 for x in v)
    a = json.loads(kit(full_home, "advise", "--json").stdout)
    kinds = {x["kind"] for x in a["recommendations"]}
    assert {"null", "factor", "solver"} <= kinds
    svd = next(x for x in a["recommendations"] if x["basis"].get("factor") == "svd-iters")
    assert svd["basis"]["levels"] == [5, 50] and all(t > 0 for t in svd["basis"]["svd_seconds"])
    assert {x["factor"] for x in a["not_measured"]} >= {"blas", "sklearn"}
    # the remedy measured: on ARPACK's embedding logistic regression (deterministic given its
    # input) flips nothing across seeds and the neighbours do not move; the seed row's do
    sol, it5 = (
        r["svd-solver"],
        next(x for x in b["rows"] if x["factor"] == "svd-iters" and x["level"] == "5"),
    )
    assert sol["models"]["lr"]["flips_max"] == 0 and sol["knn_jaccard_min"] == 1.0
    assert sol["emb_rel_max"] < 1e-9 < it5["emb_rel_max"] and sol["identical"]["svd_rand"] == 0
    conv = next(x for x in a["recommendations"] if x["basis"].get("factor") == "svd-solver")
    assert conv["basis"]["reference"] == "svd-iters=5" and conv["basis"]["knn_jaccard"][1] == 1.0
    assert all(0 <= k <= 12 for k in conv["basis"]["stable_verdicts"])
    assert "svd-solver" not in [x["factor"] for x in a["ranking"]]  # a remedy, not a factor
    kit(full_home, "report", "--out", str(tmp_path / "rep"))
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "SYNTHETIC" in md and "svd_iterations.png" in md


def _indexed(db) -> int:
    """How many runs the index holds; 0 while kit is still writing its schema (the file
    exists from SQLite's first write on, its tables a moment later: this probe is not kit's
    reader, which waits on the store's lock)."""
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT count(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:  # no such table yet, or the schema's write holds the lock
        return 0
    finally:
        con.close()
