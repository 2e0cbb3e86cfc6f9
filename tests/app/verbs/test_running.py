"""`kit doctor --pipeline FILE.py`: the null experiment of a lab's file alone, its exit status
saying whether a generator is loose, and which outputs it reaches."""

import json

import pytest
from places import PIPELINES

from kit.cli import main
from kit.runs.store import Store

LAB = PIPELINES / "lab.py"
SEEDED = """import numpy as np
SEEDS = ("init",)
KINDS = {"p": "probabilities"}
def run(seeds):
    rng = np.random.default_rng(seeds["init"])
    x = rng.normal(size=(50, 3))
    return {"x": x @ x.T, "p": 1 / (1 + np.exp(-x[:, 0]))}
"""


@pytest.mark.slow
def test_a_loose_generator_fails_and_is_named(capsys):
    assert main(["doctor", "--pipeline", str(LAB), "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert rep["loose"] == ["jitter"] and not rep["ok"] and rep["pairs"] >= 1
    assert rep["outputs"] == ["emb", "clusters", "y_test", "p_lr", "jitter"]
    assert main(["doctor", "--pipeline", str(LAB)]) == 1  # made again, in a fresh store
    text = " ".join(capsys.readouterr().out.split())
    assert "FAILED - LOOSE GENERATOR: jitter differs between runs with the same named seeds" in text
    assert Store().specs() == {}  # the doctor's runs are in its own store, not the user's


@pytest.mark.slow
def test_a_seeded_pipeline_passes(capsys, tmp_path):
    f = tmp_path / "seeded.py"
    f.write_text(SEEDED)
    assert main(["doctor", "--pipeline", str(f)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "seeded.py" in out and ": ok - every output (x, p) bitwise identical" in out


def test_wrong_arguments_are_one_line(capsys, tmp_path):
    assert main(["doctor", "--pipeline", str(tmp_path / "none.py")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kit: error: cannot read pipeline file") and err.count("\n") == 1


@pytest.mark.slow
def test_each_doctor_runs_the_null_experiment_afresh(capsys, tmp_path, kit_home):
    counter = tmp_path / "runs.txt"
    f = tmp_path / "counted.py"
    f.write_text(
        SEEDED.replace(
            "def run(seeds):\n", f"def run(seeds):\n    open({str(counter)!r}, 'a').write('.')\n"
        )
    )
    assert main(["doctor", "--pipeline", str(f), "--json"]) == 0
    once = len(counter.read_text())
    assert once >= 2 and main(["doctor", "--pipeline", str(f), "--json"]) == 0
    assert len(counter.read_text()) == 2 * once  # every run made again
    assert not any((kit_home / "tmp").iterdir())  # its store is gone with it


@pytest.mark.slow
def test_a_generator_made_at_import_fails_the_doctor(capsys, tmp_path):
    from tests.data.test_pipelines import MODULE_RNG

    f = tmp_path / "carried.py"
    f.write_text(MODULE_RNG)
    assert main(["doctor", "--pipeline", str(f), "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert rep["loose"] == ["noise"] and rep["outputs"] == ["x", "noise"]
    assert rep["factors"] == ["repeat", "process"]  # the warm worker's carried state, measured
