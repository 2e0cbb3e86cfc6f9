"""Output without a terminal: tables fit COLUMNS or 80 columns, `--wide` prints them whole,
`--help` fits too, and `kit budget --csv` holds one value a cell (issue 26, item 6)."""

import io
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from stored import every_kind_store

KIT = str(Path(sys.executable).with_name("kit"))
ROOT = str(Path(__file__).resolve().parents[1])


def kit(home, *args, columns=None):
    """`kit ARGS` in a real process, its stdout a pipe (no terminal), COLUMNS as given."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env.update(KIT_HOME=str(home), PYTHONPATH=ROOT)
    if columns:
        env["COLUMNS"] = str(columns)
    proc = subprocess.run([KIT, *args], capture_output=True, text=True, env=env, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def widest(text):
    return max(len(line) for line in text.splitlines())


@pytest.fixture
def store(tmp_path, kit_home):
    every_kind_store(tmp_path, home=kit_home)
    return kit_home


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["budget"], ["advise"], ["verdicts"], ["runs"],
                                  ["budget", "--factor", "seed"]], ids=" ".join)
def test_piped_tables_fit_80_columns_or_COLUMNS_and_wide_unwraps(store, argv):
    piped = kit(store, *argv)
    assert widest(piped) <= 80, [ln for ln in piped.splitlines() if len(ln) > 80][:2]
    assert widest(kit(store, *argv, columns=60)) <= 60 or argv == ["budget"]
    whole = kit(store, *argv, "--wide")
    # unwrapped: no table is split or wrapped, so every row of it is on one line
    assert widest(whole) > 80 and len(whole.splitlines()) < len(piped.splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["run", "--help"], ["budget", "--help"], ["data", "import", "--help"]],
                         ids=" ".join)
def test_help_fits_80_columns_piped_and_100_at_most(tmp_path, argv):
    assert widest(kit(tmp_path, *argv)) <= 80
    assert 80 < widest(kit(tmp_path, *argv, columns=200)) <= 100 or argv != ["run", "--help"]


@pytest.mark.slow
def test_budget_csv_holds_one_value_a_cell(store):
    df = pd.read_csv(io.StringIO(kit(store, "budget", "--csv")), index_col="row")
    comps = [c for c in df.columns if c.startswith("components_median_")]
    assert comps == [f"components_median_{i}" for i in range(len(comps))] and len(comps) > 1
    assert not any(df[c].astype(str).str.contains(";").any() for c in df.columns)
    assert pd.api.types.is_float_dtype(df[comps[0]])
