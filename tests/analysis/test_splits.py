"""The split seed as a factor (seed:split): the spec, the worker's re-split, and how every reader
reads a factor that changes what is measured, on a small real store."""

import json

import numpy as np
import pytest
from places import ROOT

from kit.cli import main
from kit.core import factors
from kit.core.spec import RunSpec
from kit.runs.planning.options import PlanOptions
from kit.runs.planning.plan import plan
from kit.worker.pipeline import MODELS

N = 150
D = "d" * 64
# a spec's JSON and run id as kit wrote them before the split seed existed (main at 1a76cb3)
TODAY = (
    '{"dataset":"' + D + '","deterministic":false,"device":"cpu","dtype":"float64",'
    '"env":[],"host":"","input":"","kind":"pipeline","perturb":"","replicate":0,'
    '"seeds":[["svd",0],["kmeans",0],["mlp",0],["hgb",0],["rf",0]],"stack":"host",'
    '"stack_id":"x","svd_iters":5,"threads":1}'
)
TODAY_ID = "d05a3ce5f26c80e81ab0902e1ed44edba342d8a6ebcc7a96f56ab0f3ca372ca2"


def test_a_spec_without_a_split_seed_keeps_its_json_and_id():
    spec = RunSpec(dataset=D, stack="host", stack_id="x")
    assert spec.split == -1 and spec.to_json() == TODAY and spec.run_id == TODAY_ID
    assert RunSpec.from_json(TODAY) == spec  # a stored spec without the field reads back
    split = spec.with_(split=3)
    assert json.loads(split.to_json())["split"] == 3 and split.run_id != TODAY_ID
    assert RunSpec.from_json(split.to_json()) == split
    assert "split" not in json.loads(spec.worker_json())
    assert json.loads(split.worker_json())["split"] == 3


@pytest.mark.parametrize("bad", [-2, 1.5, True, "3"])
def test_a_split_seed_is_minus_one_or_a_seed(bad):
    with pytest.raises(ValueError, match="split must be"):
        RunSpec(dataset=D, stack="host", stack_id="x", split=bad)


def test_only_a_pipeline_run_is_re_split():
    with pytest.raises(ValueError, match="re-splits a pipeline run"):
        RunSpec(dataset=D, stack="host", stack_id="x", kind="torch", input="r", split=0)


def test_seed_split_pairs_move_the_split_seed_alone():
    f = factors.get("seed:split")
    assert f.planned == factors.SINGLE and f.measures and not f.ranked
    ps = plan("seed:split", D, PlanOptions(seeds=(0, 1, 2)))
    assert [(p.a.split, p.b.split) for p in ps] == [(0, 1), (0, 2)]
    for p in ps:
        assert {k for k in p.a.__dict__ if p.a.__dict__[k] != p.b.__dict__[k]} == {"split"}
        assert set(p.a.seed_dict.values()) == set(p.b.seed_dict.values()) == {0}
    assert [p.b.split for p in plan("seed:split", D)] == list(range(1, 10))


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """seed:split and seed runs at 150 synthetic proteins, made by the real worker."""
    home = tmp_path_factory.mktemp("split") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_HOME", str(home))
        assert (
            main(
                [
                    "run",
                    "--factor",
                    "seed:split,seed",
                    "--seeds",
                    "0-2",
                    "--n",
                    str(N),
                    "--threads",
                    "1",
                    "--jobs",
                    "1",
                ]
            )
            == 0
        )
    return home


@pytest.fixture
def store(home, monkeypatch):
    from kit.runs.store import Store

    monkeypatch.setenv("KIT_HOME", str(home))
    return Store()


def _json(capsys, *argv):
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _runs(store, split):
    return [
        i
        for i, s in store.specs(_dataset().sha256).items()
        if s.split == split and s.kind == "pipeline" and set(s.seed_dict.values()) == {0}
    ]


def _dataset():
    from kit.data.dataset import load_dataset

    return load_dataset("synthetic", n=N)


def _worker(folder, seqs, labels, n_train, spec=None):
    """A worker process at one thread (as kit starts it) on these records in this order, with
    a spec that names no split seed, as every kit before the split seed wrote it: its stages'
    sha256."""
    import os
    import subprocess
    import sys

    folder.mkdir()
    (folder / "data.json").write_text(
        json.dumps({"seqs": list(seqs), "labels": list(labels), "n_train": n_train})
    )
    (folder / "spec.json").write_text(
        spec or RunSpec(dataset=D, stack="host", stack_id="x").worker_json()
    )
    (folder / "out").mkdir()
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        **{
            v: "1"
            for v in (
                "OMP_NUM_THREADS",
                "OPENBLAS_NUM_THREADS",
                "MKL_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS",
            )
        },
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "kit.worker",
            "--spec",
            str(folder / "spec.json"),
            "--dataset",
            str(folder / "data.json"),
            "--out",
            str(folder / "out"),
        ],
        env=env,
        check=True,
    )
    stages = json.loads((folder / "out" / "manifest.json").read_text())["stages"]
    return {k: v["sha256"] for k, v in stages.items()}


@pytest.mark.slow
def test_the_worker_re_splits_by_the_permutation_and_keeps_the_cut(store, tmp_path):
    ds = _dataset()
    (run,) = _runs(store, 2)
    order = np.random.default_rng(2).permutation(ds.n)  # of the records in the stored order
    test = order[ds.n_train :]
    assert np.array_equal(store.array(run, "split.test"), test)
    assert np.array_equal(store.array(run, "y_test"), np.asarray(ds.labels)[test])
    assert [ds.ids[i] for i in store.array(run, "split.test")] == [ds.ids[i] for i in test]
    assert store.run(run).manifest["seeds"]["split"] == 2
    # every stage is the pipeline's on the permuted records, with the dataset's cut
    plain = _worker(
        tmp_path / "w", [ds.seqs[i] for i in order], [ds.labels[i] for i in order], ds.n_train
    )
    stages = {k: s.sha256 for k, s in store.run(run).stages.items()}
    assert stages.pop("split.test") and stages == plain


@pytest.mark.slow
def test_without_a_split_seed_the_run_is_todays(store, tmp_path):
    ds = _dataset()
    (run,) = _runs(store, -1)
    stages = {k: s.sha256 for k, s in store.run(run).stages.items()}
    assert stages == _worker(tmp_path / "w", ds.seqs, ds.labels, ds.n_train)  # no split.test
    assert "split" not in store.run(run).manifest["seeds"]
    assert '"split"' not in store.run(run).spec.to_json()


def _acc(store, run, m):
    p, y = store.array(run, m), store.array(run, "y_test")
    return float(np.mean((p > 0.5) == y))


def test_budget_reads_spread_and_stability_not_flips(store, capsys):
    b = _json(capsys, "budget")
    (row,) = [r for r in b["rows"] if r["factor"] == "seed:split"]
    assert row["models"] == {} and row["identical"] == {} and row["verdicts_changed_max"] is None
    assert all("splits" not in r for r in b["rows"] if r["factor"] != "seed:split")
    s = row["splits"]
    split_runs = _runs(store, 0) + _runs(store, 1) + _runs(store, 2)
    seed_row = next(r for r in b["rows"] if r["factor"] == "seed")
    assert s["runs"] == 3 and s["seed_runs"] == len(seed_row["runs"]) == 3
    for m in MODELS:
        acc = sorted(_acc(store, r, m) for r in split_runs)
        seed = [_acc(store, r, m) for r in seed_row["runs"]]
        d = s["models"][m]
        assert sorted(d["acc"]) == pytest.approx(acc)
        assert d["acc_spread"] == pytest.approx(acc[-1] - acc[0])
        assert d["acc_sd"] == pytest.approx(np.std(acc, ddof=1))
        assert d["seed_acc_spread"] == pytest.approx(max(seed) - min(seed))
    v = _json(capsys, "verdicts")["seed:split"]
    stable = [x["verdict"] for x in v if x["stable"]]
    assert s["verdicts_held"] == len(stable) and s["held"] == stable and s["verdicts"] == 12
    assert all(x["runs"] == 3 and x["groups"] == 1 for x in v)


def test_pairs_say_different_test_proteins(store, capsys):
    pairs = _json(capsys, "budget", "--factor", "seed:split")
    assert len(pairs) == 2
    for p in pairs:
        c = p["comparison"]
        assert c["different_test"] is True and c["models"] == {} and c["identical"] == {}
    assert main(["budget", "--factor", "seed:split"]) == 0
    text = capsys.readouterr().out
    assert text.count("different test proteins") == 2 and "lr:" not in text
    assert main(["budget"]) == 0
    text = capsys.readouterr().out
    assert "seed:split changes what is measured" in text and "split range" in text
    preds = text.split("Predictions:")[1].split("changes what is measured")[0]
    assert not any(line.startswith("seed:split") for line in preds.splitlines()[:-1])  # no flips


def test_advice_says_report_over_splits_never_pin(store, capsys):
    a = _json(capsys, "advise")
    assert "seed:split" not in [r["factor"] for r in a["ranking"]]
    (rec,) = [r for r in a["recommendations"] if r["basis"].get("factor") == "seed:split"]
    assert rec["kind"] == "splits"
    assert rec["text"].startswith(
        "seed:split changes what is measured: report results over several splits."
    )
    assert "Pin" not in rec["text"] and "Name and record" not in rec["text"]
    b = _json(capsys, "budget")
    s = next(r for r in b["rows"] if r["factor"] == "seed:split")["splits"]
    widest = rec["basis"]["model"]
    assert rec["basis"]["acc_spread"] == max(d["acc_spread"] for d in s["models"].values())
    assert rec["basis"]["acc_spread"] == s["models"][widest]["acc_spread"]
    assert rec["basis"]["verdicts_held"] == s["verdicts_held"]


def test_run_label_names_the_split(store):
    from kit.analysis.verdicts import run_label

    (run,) = _runs(store, 1)
    assert run_label(store.run(run).spec).endswith("seed 0 split 1")
