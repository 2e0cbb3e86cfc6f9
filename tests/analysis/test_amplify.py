"""kit.analysis.amplify and the perturb factor: transfer curves, predictions, and perturbed runs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kit.analysis.amplify import curves, explain, first_flip, predict, report
from kit.analysis.records import BudgetRow, ModelBudget
from kit.worker.pipeline import perturb


def row(factor, level, emb, flips, dp=0.1, verdicts=0, flips_max=None):
    return BudgetRow(
        factor,
        level,
        emb_rel_max=emb,
        verdicts_changed_max=verdicts,
        models={
            m: ModelBudget(flips_median=f, flips_max=(flips_max or {}).get(m, f), max_dp=dp)
            for m, f in flips.items()
        },
    )


ROWS = [
    row("perturb", "1e-13", 1e-13, {"rf": 0, "hgb": 0}),
    row("perturb", "1e-09", 1e-9, {"rf": 2, "hgb": 0}),
    row("perturb", "1e-05", 1e-5, {"rf": 6, "hgb": 10}),
    row("perturb", "0e+00", 0.0, {"rf": 0, "hgb": 0}),
    row("perturb", "float32", 3e-8, {"rf": 1, "hgb": 0}),
    row("threads", "", 1e-13, {"rf": 0, "hgb": 0}),
    row("sklearn", "", 1e-13, {"rf": 0, "hgb": 42}),
    row("seed", "", 0.8, {"rf": 20, "hgb": 60}),
]


def test_curves_and_first_flip():
    cs = curves(ROWS)
    assert [p["eps"] for p in cs["rf"]] == [1e-13, 1e-9, 1e-5]  # eps=0 and float32 are not points
    assert first_flip(cs["rf"]) == 1e-9 and first_flip(cs["hgb"]) == 1e-5
    assert report(ROWS)["float32_roundtrip"]["flips"] == {"rf": 1, "hgb": 0}


def test_predict_interpolates_in_log_eps():
    c = curves(ROWS)["rf"]
    assert predict(c, 1e-11) == pytest.approx(1.0)
    assert predict(c, 1e-15) == 0 and predict(c, 1e-1) == 6 and predict(c, 0.0) == 0.0
    assert predict([], 1e-3) is None and predict(c, None) is None


def test_explain_separates_magnitude_from_something_else():
    e = explain(ROWS)
    assert set(e) == {"threads", "sklearn"}  # not the seed, not the sweep itself
    assert e["threads"]["models"]["rf"]["verdict"] == "magnitude"
    sk = e["sklearn"]["models"]["hgb"]
    assert sk["predicted"] == 0 and sk["observed"] == 42 and sk["verdict"] == "something else"


def test_perturbations():
    E = np.random.default_rng(1).normal(size=(200, 16))
    assert np.array_equal(perturb(E, "noise:0.0:0"), E)
    for eps in (1e-13, 1e-5):
        d = perturb(E, f"noise:{eps!r}:3")
        assert np.linalg.norm(d - E) / np.linalg.norm(E) == pytest.approx(eps, rel=0.1)
        assert np.array_equal(d, perturb(E, f"noise:{eps!r}:3"))  # seeded
        assert not np.array_equal(d, perturb(E, f"noise:{eps!r}:4"))  # draws differ
    f = perturb(E, "float32")
    assert f.dtype == E.dtype and np.array_equal(f, E.astype(np.float32).astype(np.float64))


@pytest.mark.slow
def test_perturb_factor_end_to_end(tmp_path):
    kit = str(Path(sys.executable).with_name("kit"))
    env = dict(os.environ, KIT_HOME=str(tmp_path / "h"))

    def run(*args):
        proc = subprocess.run([kit, *args], env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    b = json.loads(
        run(
            "run",
            "--factor",
            "perturb",
            "--n",
            "200",
            "--eps",
            "0,1e-13,1e-3",
            "--seeds",
            "0-1",
            "--json",
        )
    )
    rows = {r["level"]: r for r in b["rows"] if r["factor"] == "perturb"}
    assert set(rows) == {"0e+00", "1e-13", "1e-03", "float32"}
    zero = rows["0e+00"]  # zero noise reproduces the base run's bits
    assert zero["all_identical"] == zero["pairs"] == 2
    assert zero["identical"]["svd_rand"] == 2 and zero["identical"]["rf"] == 2
    assert rows["1e-13"]["emb_rel_max"] == pytest.approx(1e-13, rel=0.2)
    flips = lambda r: sum(m["flips_median"] for m in r["models"].values())  # noqa: E731
    assert flips(rows["1e-03"]) >= flips(rows["1e-13"]) >= flips(zero) == 0
    runs = json.loads(run("runs", "--json"))
    assert sum(r["spec"]["kind"] == "perturb" for r in runs) == 7  # ordinary stored runs
    amp = json.loads(run("amplify", "--json"))
    assert [p["eps"] for p in amp["curves"]["lr"]] == [1e-13, 1e-3]
    assert "float32" in run("amplify")


def test_only_environment_factors_are_explained_by_magnitude():
    """svd-solver and the seeds change what is computed, not how precisely: never "explained"
    (and never told to "pin that version"); threads and sklearn are."""
    rows = ROWS + [
        row("svd-solver", "", 1e-13, {"rf": 3, "hgb": 0}),
        row("seed:models", "", 0.0, {"rf": 3, "hgb": 5}),
        row("torch-seed", "", None, {"torch_mlp": 4}),
    ]
    assert set(explain(rows)) == {"threads", "sklearn"}


def test_first_flip_is_defined_on_the_median_and_separately_on_any_draw():
    """rf flipped in one of three draws at 1e-3 while its median stayed 0: `kit amplify` said
    "first flip at 1e-3" beside a median of 0. Both are now named, each by its definition."""
    rows = [
        row("perturb", "1e-09", 1e-9, {"rf": 0}),
        row("perturb", "1e-03", 1e-3, {"rf": 0}, flips_max={"rf": 1}),
    ]
    rep = report(rows)
    assert rep["first_flip"]["rf"] is None and rep["first_flip_any"]["rf"] == 1e-3
