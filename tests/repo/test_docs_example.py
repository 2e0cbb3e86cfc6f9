"""docs/examples/digits.py, the worked example of docs/pipelines.md: it keeps kit's contract
(kit.worker.contract), and it runs under `kit run --pipeline` with every generator seeded."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from places import PIPELINES, ROOT

from kit.worker import contract

EXAMPLE = ROOT / "docs" / "examples" / "digits.py"


def test_the_example_keeps_the_contract():
    c = contract.load(EXAMPLE)
    assert c.seeds == ("split", "init") and c.takes_dtype
    got = contract.call(c, {"split": 0, "init": 0})
    assert list(got) == ["emb", "clusters", "nn", "y_test", "p_lr", "p_rf"]
    assert {c.kind(k) for k in got} == {
        "embedding",
        "labels",
        "neighbours",
        "truth",
        "probabilities",
    }
    assert got["emb"].shape == (400, 10) and got["y_test"].shape == got["p_rf"].shape == (100,)
    f32 = contract.call(c, {"split": 0, "init": 0}, "float32")
    assert f32["emb"].dtype == np.float32  # the precision factor applies
    again = contract.call(c, {"split": 0, "init": 0})
    assert all(np.array_equal(got[k], again[k]) for k in got)  # seeded in process too


@pytest.mark.slow
def test_the_example_runs_under_kit_run_pipeline(tmp_path):
    env = dict(os.environ, KIT_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kit",
            "run",
            "--pipeline",
            str(EXAMPLE),
            "--factor",
            "repeat,seed:init",
            "--threads",
            "1",
            "--seeds",
            "0,1",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    b = json.loads(proc.stdout)
    assert b["name"] == "digits.py" and b["loose"] == []
    assert b["factors"]["repeat"]["pairs"] == 1
    init = b["factors"]["seed:init"]["outputs"]
    assert init["emb"]["changed"] == 1 and init["y_test"]["changed"] == 0  # init holds the split


def test_the_protein_walk_through_writes_its_tsv_as_written(tmp_path):
    """docs/pipelines.md's protein commands: its `python -c` writes the 300-protein TSV (a
    header line, then accession, sequence, label) that tests/support/pipelines/proteins.py reads
    from the KIT_TEST_PROTEINS the docs export; nothing else in the docs makes that file."""
    import shlex

    doc = (ROOT / "docs" / "pipelines.md").read_text()
    lines = [x[2:] for x in doc.splitlines() if x.startswith("$ ")]
    make = next(x for x in lines if x.startswith("python -c ") and "proteins.tsv" in x)
    assert "export KIT_TEST_PROTEINS=$PWD/proteins.tsv" in lines
    assert "cp $KIT_CLONE/tests/support/pipelines/proteins.py ." in lines
    proc = subprocess.run(
        [sys.executable] + shlex.split(make)[1:],
        cwd=tmp_path,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    rows = (tmp_path / "proteins.tsv").read_text().splitlines()
    assert rows[0] == "accession\tsequence\tlabel" and len(rows) == 301
    assert all(len(r.split("\t")) == 3 and r.split("\t")[2] in "01" for r in rows[1:])
    pipeline = (PIPELINES / "proteins.py").read_text()
    assert 'os.environ["KIT_TEST_PROTEINS"]' in pipeline and "[1:]" in pipeline  # the header
