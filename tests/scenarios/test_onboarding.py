"""kit compare: a bundle made on a "different machine" rerun here; kit doctor end to end.

The other machine is simulated honestly: its runs are made in another KIT_HOME (another host
id) with a different OpenBLAS core type in the process environment, which changes real bits.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
KIT = str(Path(sys.executable).with_name("kit"))


def kit(home, *args, env=None, check=True):
    proc = subprocess.run(
        [KIT, *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=dict(os.environ, KIT_HOME=str(home), **(env or {})),
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_compare_a_bundle_from_another_machine(tmp_path):
    lab, mine = tmp_path / "lab", tmp_path / "mine"
    other_cpu = {"OPENBLAS_CORETYPE": "Prescott"}
    kit(
        lab,
        "run",
        "--factor",
        "seed",
        "--n",
        "200",
        "--seeds",
        "0-2",
        "--threads",
        "1",
        env=other_cpu,
    )
    kit(lab, "export", "--out", str(tmp_path / "lab.kit"), "--arrays")
    rep = json.loads(kit(mine, "compare", str(tmp_path / "lab.kit"), "--json").stdout)
    assert rep["pairs"] == 3 and rep["bundle_host"]["id"] != rep["this_host"]["id"]
    diffs = rep["environment_differences"]
    assert diffs["env:OPENBLAS_CORETYPE"] == ["Prescott -> None"]
    # the kernel moved the embedding bits, so not every run is identical, and the answer says so
    assert rep["identical"] < 3 and rep["answer"].split(":")[0] in (
        "differs in bits or magnitudes only",
        "differs within the budget",
        "differs beyond the budget",
        "NOT reproduced where it matters",
    )
    host = rep["rows"][0]
    assert host["factor"] == "host" and host["identical"]["kmer"] == 3
    assert host["emb_rel_seed_units"] is not None  # the bundle's seed runs give the units
    text = kit(mine, "compare", str(tmp_path / "lab.kit")).stdout
    assert "What differs between the two machines" in text and "OPENBLAS_CORETYPE" in text
    # the same machine's own bundle is refused: nothing to compare
    kit(mine, "export", "--out", str(tmp_path / "mine.kit"))
    assert kit(mine, "compare", str(tmp_path / "mine.kit"), check=False).returncode == 1


def test_compare_thread_count_difference(tmp_path):
    lab, mine = tmp_path / "lab", tmp_path / "mine"
    kit(
        lab,
        "run",
        "--factor",
        "repeat",
        "--n",
        "200",
        "--threads",
        "1",
        env={"OPENBLAS_NUM_THREADS": "2"},
    )  # overridden by the spec: runs stay at 1 thread
    kit(lab, "export", "--out", str(tmp_path / "lab.kit"), "--arrays")
    rep = json.loads(kit(mine, "compare", str(tmp_path / "lab.kit"), "--json").stdout)
    assert rep["pairs"] == 2 and rep["identical"] == 2
    assert rep["answer"].startswith("reproduced: all 2 runs are bitwise identical")


def test_compare_runs_made_in_an_external_stack(tmp_path):
    """A lab's runs in an interpreter it registered: here it needs one under the same name."""
    lab, mine = tmp_path / "lab", tmp_path / "mine"
    kit(lab, "stacks", "add", "lab-env", sys.executable)
    kit(
        lab,
        "run",
        "--factor",
        "seed",
        "--n",
        "150",
        "--seeds",
        "0-1",
        "--threads",
        "1",
        "--stack",
        "lab-env",
    )
    kit(lab, "export", "--out", str(tmp_path / "lab.kit"))
    rep = json.loads(kit(mine, "compare", str(tmp_path / "lab.kit"), "--json").stdout)
    assert rep["pairs"] == 0 and len(rep["not_compared"]) == 2
    assert all("kit stacks add lab-env PYTHON" in r["reason"] for r in rep["not_compared"])
    kit(mine, "stacks", "add", "lab-env", sys.executable)
    rep = json.loads(kit(mine, "compare", str(tmp_path / "lab.kit"), "--json").stdout)
    assert rep["pairs"] == 2 and rep["identical"] == 2  # the same interpreter: the same bits


def test_doctor(tmp_path):
    proc = kit(tmp_path / "h", "doctor", "--json")
    rep = json.loads(proc.stdout)
    assert rep["null_experiment"]["ok"] and rep["ok"]
    host = rep["stacks"][0]
    assert host["name"] == "host" and host["threads"]["cpu_per_wall_1"] > 0
    assert any(p["internal_api"] for p in host["blas"])
    assert "null experiment" in kit(tmp_path / "h", "doctor").stdout


def test_a_failed_compare_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    """The bundle's dataset is not here: refused before anything is imported."""
    from stored import budget_store

    from kit.app.bundle import export
    from kit.app.reproduce import compare_bundle
    from kit.core.errors import KitError
    from kit.runs.store import Store

    lab = budget_store(tmp_path, home=tmp_path / "lab")
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "lab"))
    out = export(lab, [r.id for r in lab.runs()], tmp_path / "lab.kit", arrays=True)
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "here"))
    here = Store(tmp_path / "here")
    with pytest.raises(KitError, match="is not here"):
        compare_bundle(here, out["file"])
    assert here.runs() == [] and here.pairs() == []
