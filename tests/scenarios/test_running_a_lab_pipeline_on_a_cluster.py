"""A lab pipeline's runs on a cluster: a node that has not got the file asks for it, keeps it in
its own KIT_HOME only once its bytes hash to the run's pipeline, and makes the run; the host
factor pairs one spec on two node classes (a real local Dask cluster, each node its own home)."""

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from places import PIPELINES, ROOT

from kit.data.pipelines import add_pipeline, shipment
from kit.runs.executing.on_node import make_run
from kit.runs.planning.options import PlanOptions
from kit.runs.planning.plan import plan_file


@pytest.fixture(autouse=True)
def no_warm_left():
    """make_run in this process keeps the node's warm workers (kit.runs.executing.on_node):
    they end with each test, not with a later one (test_launch counts the live workers)."""
    from kit.runs.executing import on_node

    on_node._warm.close()  # one an earlier test started has another environment
    yield
    on_node._warm.close()


LAB = PIPELINES / "lab.py"
LOOKS = PIPELINES / "looks_around.py"


@pytest.mark.slow
def test_a_node_asks_for_the_file_keeps_it_only_verified_and_makes_the_run(tmp_path, monkeypatch):
    info = add_pipeline(LAB)
    spec = plan_file("repeat", info, PlanOptions(threads=(1,)))[0].a
    sent = shipment(info["sha256"])
    assert sent["name"] == "lab.py" and sent["data"] == LAB.read_bytes()
    node = tmp_path / "node"
    monkeypatch.setenv("KIT_HOME", str(node))  # a node that shares nothing with the driver
    assert make_run(spec.to_json(), None, None)["missing"] == "pipeline"
    kept = node / "pipelines" / "by-hash" / f"{info['sha256']}.py"
    for bad in (
        dict(sent, data=sent["data"] + b"\n# not the driver's\n"),
        dict(sent, name="../x.py"),
        {"data": "not bytes"},
    ):
        got = make_run(spec.to_json(), bad, None)
        assert "arrived damaged" in got["error"] and "\n" not in got["error"], got
        assert not kept.exists()  # nothing unverified is written, so nothing of it is imported
    got = make_run(spec.to_json(), sent, None)
    assert "error" not in got, got
    assert got["manifest"]["outputs"] == ["emb", "clusters", "y_test", "p_lr", "jitter"]
    assert set(got["arrays"]) == {f"{n}.npy" for n in got["manifest"]["outputs"]}
    assert kept.read_bytes() == LAB.read_bytes()
    assert "arrays" in make_run(spec.to_json(), None, None)  # kept: not asked for again


@pytest.mark.slow
def test_a_node_s_worker_is_handed_no_path_into_its_kit_home(tmp_path, monkeypatch):
    """As on this machine (tests/scenarios/test_running_a_pipeline_that_misbehaves): a run made on a
    node finds neither the node's KIT_HOME in its environment nor a working folder inside it."""
    info = add_pipeline(LOOKS)
    spec = plan_file("repeat", info, PlanOptions(threads=(1,)))[0].a
    sent = shipment(info["sha256"])
    node, seen = tmp_path / "node", tmp_path / "seen.jsonl"
    monkeypatch.setenv("KIT_HOME", str(node))  # a node that shares nothing with the driver
    monkeypatch.setenv("KIT_TEST_SEEN", str(seen))
    got = make_run(spec.to_json(), sent, None)
    assert "error" not in got, got
    (r,) = [json.loads(line) for line in seen.read_text().splitlines()]
    assert [k for k, v in r["env"].items() if str(node) in v] == [], r["env"]
    assert str(node) not in r["cwd"] and Path(r["cwd"]).name == "work"


@pytest.mark.slow
def test_the_host_factor_pairs_a_pipeline_run_on_two_node_classes(tmp_path):
    from every_kind import two_node_classes

    homes = {c: tmp_path / f"node-{c}" for c in "ab"}
    driver = tmp_path / "driver"
    env = {c: {"KIT_HOME": str(h), "PYTHONPATH": str(ROOT)} for c, h in homes.items()}
    with two_node_classes("ab", env=env) as at:  # this checkout's kit, on nodes and driver
        got = subprocess.run(
            [
                sys.executable,
                "-m",
                "kit",
                "run",
                "--pipeline",
                str(LAB),
                "--factor",
                "host",
                "--hosts",
                "a,b",
                "--cluster",
                at,
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env=dict(os.environ, KIT_HOME=str(driver), PYTHONPATH=str(ROOT)),
        )
    assert got.returncode == 0, got.stderr
    b = json.loads(got.stdout)
    assert b["factors"]["host"]["pairs"] == 1
    db = sqlite3.connect(driver / "store.sqlite")
    made = sorted(
        (json.loads(s)["host"], json.loads(m)["node"]["class"])
        for s, m in db.execute("SELECT spec, manifest FROM runs")
    )
    assert made == [("a", "a"), ("b", "b")]
    for h in homes.values():  # each node was sent the file and kept the driver's bytes
        assert (
            h / "pipelines" / "by-hash" / f"{b['pipeline']}.py"
        ).read_bytes() == LAB.read_bytes()
    # the unseeded output differs wherever it is made; the seeded ones are the same on one machine
    assert b["factors"]["host"]["outputs"]["jitter"]["changed"] == 1
    assert all(
        o["changed"] == 0 for n, o in b["factors"]["host"]["outputs"].items() if n != "jitter"
    )
