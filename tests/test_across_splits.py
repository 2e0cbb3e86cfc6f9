"""`kit homology --dataset NAME --against NAME-disjoint`: each model's accuracy and each verdict on
a random split beside a homology-disjoint split, in seed units, from a real store's seed runs."""

from dataclasses import replace

import numpy as np
import pytest

from kit.analysis.across_splits import across_splits
from kit.cli import main
from kit.core.errors import KitError
from kit.core.spec import seeds
from kit.data.dataset import make_dataset, save_dataset
from kit.runs.planning.options import Pair
from kit.runs.store import Store

from stored import arrays, flipped, put, spec


def _datasets():
    rng = np.random.default_rng(1)
    seqs = ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), 80)) for _ in range(30)]
    a = make_dataset("prot", "import:p.tsv", [f"P{i}" for i in range(30)], seqs,
                     rng.integers(0, 2, 30), ["Human"] * 30)
    b = make_dataset("prot-disjoint", "import:p.tsv", a.ids[:27], a.seqs[:27], a.labels[:27],
                     a.organisms[:27])
    b = replace(b, meta={"split": "homology", "method": "graphpart", "source_dataset": a.sha256,
                         "source_name": "prot", "removed": 3, "removed_ids": list(a.ids[27:])})
    return a, b


def _seed_runs(store, tmp_path, ds, flips):
    """Three seed runs of ``ds`` (seed 0 the reference); hgb flips ``flips[s]`` test proteins
    in seed s. Returns each run's hgb accuracy."""
    store.note_dataset(ds.summary())
    base = arrays(0)
    runs, acc = [], []
    for s, k in enumerate(flips):
        got = flipped(dict(base, svd_rand=arrays(s)["svd_rand"]), "hgb", k)
        sp = spec(dataset=ds.sha256, seeds=seeds(s))
        put(store, tmp_path / ds.name, sp, got)
        runs.append(sp)
        acc.append(float(np.mean((got["hgb"] > 0.5) == got["y_test"])))
    store.add_pairs([Pair("seed", "", runs[0], r, f"seed 0 vs {i}") for i, r in
                     enumerate(runs[1:], 1)])
    return acc


@pytest.fixture
def world(tmp_path, kit_home):
    a, b = _datasets()
    save_dataset(a), save_dataset(b)
    (tmp_path / "prot").mkdir(), (tmp_path / "prot-disjoint").mkdir()
    store = Store(kit_home)
    acc_a = _seed_runs(store, tmp_path, a, (0, 1, 2))
    acc_b = _seed_runs(store, tmp_path, b, (8, 9, 10))  # worse without homologs
    return store, a, b, acc_a, acc_b


def test_accuracy_and_verdicts_on_both_splits_in_seed_units(world):
    store, a, b, acc_a, acc_b = world
    r = across_splits(store, (a.sha256, a.name, a.summary()), (b.sha256, b.name, b.meta))
    assert (r.a_runs, r.b_runs, r.removed, r.method) == (3, 3, 3, "graphpart")
    hgb = next(x for x in r.models if x.name == "hgb accuracy")
    assert hgb.a == pytest.approx(np.median(acc_a)) and hgb.b == pytest.approx(np.median(acc_b))
    pooled = ((np.std(acc_a, ddof=1) ** 2 + np.std(acc_b, ddof=1) ** 2) / 2) ** 0.5
    assert hgb.seed_units == pytest.approx((np.median(acc_b) - np.median(acc_a)) / pooled)
    assert hgb.seed_units < -2  # far more than a seed moves it
    lr = next(x for x in r.models if x.name == "lr accuracy")
    assert lr.seed_units is None and lr.a == lr.b  # untouched: seeds change nothing either
    assert {v.name for v in r.verdicts} >= {"hgb-lr acc", "rf-hgb acc"}
    for v in r.verdicts:
        assert v.changed == (v.a_says[0] != v.b_says[0]) and v.a_says.endswith("/3")


def test_the_cli_prints_one_table_and_json(world, capsys):
    assert main(["homology", "--dataset", "prot", "--against", "prot-disjoint"]) == 0
    out = capsys.readouterr().out
    assert "random split" in out and "homology-disjoint" in out and "seed units" in out
    assert "hgb accuracy" in out and "by GraphPart, 3 proteins removed" in out
    assert main(["homology", "--dataset", "prot", "--against", "prot-disjoint", "--json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert doc["a"] == "prot" and doc["b"] == "prot-disjoint" and len(doc["models"]) == 4


def test_wrong_pairs_of_datasets_are_one_line(world, capsys):
    store, a, b, *_ = world
    with pytest.raises(KitError, match="not a homology-disjoint split"):
        across_splits(store, (b.sha256, b.name, {}), (a.sha256, a.name, a.meta))
    with pytest.raises(KitError, match="not of prot-disjoint"):
        across_splits(store, (b.sha256, b.name, {}), (b.sha256, b.name, b.meta))
    other = make_dataset("lone", "import:l.tsv", list(a.ids), list(a.seqs), list(a.labels),
                         list(a.organisms), split_seed=9)
    save_dataset(replace(other, meta=dict(b.meta, source_dataset=other.sha256,
                                          source_name="lone")))
    assert main(["homology", "--dataset", "lone", "--against", "prot-disjoint"]) != 0
    assert main(["homology", "--dataset", "prot", "--against", "lone"]) != 0
    err = capsys.readouterr().err
    assert "not of lone" in err and "seed run(s) of lone" not in err
    assert "Traceback" not in err
