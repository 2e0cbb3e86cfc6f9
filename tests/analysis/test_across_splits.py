"""`kit homology --dataset NAME --against NAME-disjoint`: each model's accuracy and each verdict on
a random split beside a homology-disjoint split, judged against the split-to-split spread (the
random split's seed:split runs) or, paired, against random re-splits of the disjoint split's own
proteins at its sizes, from a real store's runs; and, run for real, random sequences with no
homologs (nothing attributed) beside planted families whose labels follow the family (the
effect found)."""

from dataclasses import replace

import numpy as np
import pytest
from stored import arrays, flipped, put, spec

from kit.analysis.across_splits import across_splits
from kit.cli import main
from kit.core.errors import KitError
from kit.core.spec import seeds
from kit.data.dataset import make_dataset, save_dataset
from kit.runs.planning.options import Pair
from kit.runs.store import Store


def _datasets():
    rng = np.random.default_rng(1)
    seqs = ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), 80)) for _ in range(30)]
    a = make_dataset(
        "prot",
        "import:p.tsv",
        [f"P{i}" for i in range(30)],
        seqs,
        rng.integers(0, 2, 30),
        ["Human"] * 30,
    )
    b = make_dataset(
        "prot-disjoint", "import:p.tsv", a.ids[:27], a.seqs[:27], a.labels[:27], a.organisms[:27]
    )
    b = replace(
        b,
        meta={
            "split": "homology",
            "method": "graphpart",
            "source_dataset": a.sha256,
            "source_name": "prot",
            "removed": 3,
            "removed_ids": list(a.ids[27:]),
        },
    )
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
    store.add_pairs(
        [Pair("seed", "", runs[0], r, f"seed 0 vs {i}") for i, r in enumerate(runs[1:], 1)]
    )
    return acc


def _split_runs(store, tmp_path, ds, flips):
    """seed:split runs of ``ds`` (split seed s, hgb flipping ``flips[s]``): the yardstick.
    Returns each run's hgb accuracy."""
    runs, acc = [], []
    for s, k in enumerate(flips):
        got = flipped(dict(arrays(0), svd_rand=arrays(50 + s)["svd_rand"]), "hgb", k)
        sp = spec(dataset=ds.sha256, split=s)
        put(store, tmp_path / ds.name, sp, got)
        runs.append(sp)
        acc.append(float(np.mean((got["hgb"] > 0.5) == got["y_test"])))
    store.add_pairs(
        [Pair("seed:split", "", runs[0], r, f"split 0 vs {i}") for i, r in enumerate(runs[1:], 1)]
    )
    return acc


def _across(store, a, b, paired=False):
    return across_splits(
        store,
        (a.sha256, a.name, a.summary()),
        (b.sha256, b.name, b.meta),
        paired,
        (b.n_train, b.n_test),
    )


@pytest.fixture
def world(tmp_path, kit_home):
    a, b = _datasets()
    save_dataset(a), save_dataset(b)
    (tmp_path / "prot").mkdir(), (tmp_path / "prot-disjoint").mkdir()
    store = Store(kit_home)
    acc_a = _seed_runs(store, tmp_path, a, (0, 1, 2))
    acc_b = _seed_runs(store, tmp_path, b, (8, 9, 10))  # worse without homologs
    return store, a, b, acc_a, acc_b


def _model(r, name):
    return next(x for x in r.models if x.name == f"{name} accuracy")


def test_a_change_beyond_the_split_spread_is_attributed_to_homologs(world, tmp_path):
    store, a, b, acc_a, acc_b = world
    split = _split_runs(store, tmp_path, a, (0, 1, 0, 1, 2, 1, 0, 1))
    r = _across(store, a, b)
    assert (r.a_runs, r.b_runs, r.removed, r.method) == (3, 3, 3, "graphpart")
    assert (r.yardstick, r.split_runs, r.leaked, r.nothing) == ("seed:split", 8, None, False)
    hgb = _model(r, "hgb")
    assert hgb.a == pytest.approx(np.median(acc_a)) and hgb.b == pytest.approx(np.median(acc_b))
    assert hgb.split_sd == pytest.approx(np.std(split, ddof=1))
    change = np.median(acc_b) - np.median(acc_a)
    assert hgb.split_units == pytest.approx(change / (2**0.5 * np.std(split, ddof=1)))
    assert hgb.call == "homologs" and not r.needs
    lr = _model(r, "lr")  # untouched by splits and by the disjoint split alike
    assert lr.a == lr.b and lr.split_sd == 0 and lr.call == "a re-split"
    assert {v.name for v in r.verdicts} >= {"hgb-lr acc", "rf-hgb acc"}
    for v in r.verdicts:
        assert v.changed == (v.a_says[0] != v.b_says[0]) and v.a_says.endswith("/3")


def test_a_change_a_re_split_gives_too_is_not_attributed(world, tmp_path):
    """Splits that move hgb as much as the disjoint split did: the same change is a re-split."""
    store, a, b, *_ = world
    _split_runs(store, tmp_path, a, (0, 9, 1, 10, 2, 8, 0, 9, 1, 10))
    hgb = _model(_across(store, a, b), "hgb")
    assert hgb.call == "a re-split" and abs(hgb.split_units) < 2


def test_too_few_split_seeds_cannot_tell_and_name_the_runs(world, tmp_path, capsys):
    store, a, b, *_ = world
    r = _across(store, a, b)  # no seed:split runs at all
    assert r.split_runs == 0 and {x.call for x in r.models} == {"cannot tell"}
    assert r.needs == "kit run --factor seed:split --dataset prot --seeds 0-9"
    _split_runs(store, tmp_path, a, (0, 4, 1))  # three: the spread's interval is too wide
    r = _across(store, a, b)
    assert _model(r, "hgb").call == "cannot tell" and r.split_runs == 3
    assert main(["homology", "--dataset", "prot", "--against", "prot-disjoint"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "cannot tell" in out and "3 seed:split runs of prot" in out
    assert "kit run --factor seed:split --dataset prot --seeds 0-9" in out


def test_no_homolog_and_nothing_removed_is_nothing_to_attribute(tmp_path, kit_home, capsys):
    """A disjoint split whose search found no edge at all, none removed: one more random split,
    whatever it changed (here hgb, as much as in the world above)."""
    a, b = _datasets()
    b = replace(b, meta=dict(b.meta, removed=0, removed_ids=[], edge_count=0))
    save_dataset(a), save_dataset(b)
    (tmp_path / "prot").mkdir(), (tmp_path / "prot-disjoint").mkdir()
    store = Store(kit_home)
    _seed_runs(store, tmp_path, a, (0, 1, 2))
    _seed_runs(store, tmp_path, b, (8, 9, 10))
    _split_runs(store, tmp_path, a, (0, 1, 0, 1, 2, 1, 0, 1))
    r = _across(store, a, b)
    assert r.nothing and r.leaked == 0 and not r.needs
    assert {x.call for x in r.models + r.verdicts} == {"no homologs"}
    assert main(["homology", "--dataset", "prot", "--against", "prot-disjoint"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Nothing to attribute to homologs" in out and "No change is attributed" in out
    assert "resting on homologs" not in out


def test_a_split_whose_own_search_found_no_pair_has_nothing_to_attribute(
    tmp_path, kit_home, capsys
):
    """400 random sequences: the split's search found no pair and moved none, but MMseqs2's
    clustering put one test protein beside a train one. The disjoint split separated nothing
    (that pair included), so its changes are a re-split's, never homologs' (they were judged
    against a spread: on those sequences hgb rose 2.7 paired units by chance)."""
    from kit.data.homology import Clustering, _store

    a, b = _datasets()
    at = {"identity": 0.3, "coverage": 0.8}  # the split's, as `kit data split` records them
    b = replace(b, meta=dict(b.meta, removed=0, removed_ids=[], edge_count=0, **at))
    save_dataset(a), save_dataset(b)
    labels = list(range(a.n))
    labels[a.n_train] = 0  # the first test protein shares train protein 0's cluster
    labels = tuple(sorted(set(labels), key=labels.index).index(x) for x in labels)
    _store(Clustering(a.sha256, 0.3, 0.8, labels, a.n_train, "MMseqs2 test"))
    (tmp_path / "prot").mkdir(), (tmp_path / "prot-disjoint").mkdir()
    store = Store(kit_home)
    _seed_runs(store, tmp_path, a, (0, 1, 2))
    _seed_runs(store, tmp_path, b, (8, 9, 10))
    _split_runs(store, tmp_path, a, (0, 1, 0, 1, 2, 1, 0, 1))
    r = _across(store, a, b)
    assert (r.leaked, r.edges, r.removed) == (1, 0, 0) and r.nothing and not r.needs
    assert {x.call for x in r.models + r.verdicts} == {"no homologs"}
    assert main(["homology", "--dataset", "prot", "--against", "prot-disjoint"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "own search found no pair of proteins above its threshold" in out
    assert "No change is attributed to homologs." in out and "resting on homologs" not in out
    # which yardstick the units beside the calls are in is said all the same
    assert "yardstick, for reference only: the split-to-split spread, from 8" in out


def test_the_paired_yardstick_is_random_re_splits_of_the_disjoint_split_s_own_proteins(
    world, tmp_path, capsys
):
    """--yardstick paired: b against the seed:split runs of b's own dataset (its proteins, its
    train/test sizes, its removed proteins left out): a change is b's median minus their mean,
    in the SD of one split's change from the mean of k, sqrt(1 + 1/k) x their SD."""
    import json
    import re

    store, a, b, acc_a, acc_b = world
    with pytest.raises(KitError, match="no seed:split runs of prot-disjoint"):
        _across(store, a, b, paired=True)
    split = _split_runs(store, tmp_path, b, (0, 1, 0, 1, 2, 1, 0, 1))
    r = _across(store, a, b, paired=True)
    assert (r.yardstick, r.split_runs, r.a_runs, r.b_runs) == ("paired", 8, 8, 3)
    assert r.sizes == (b.n_train, b.n_test) == (19, 8)
    hgb = _model(r, "hgb")
    assert hgb.a == pytest.approx(np.mean(split)) and hgb.b == pytest.approx(np.median(acc_b))
    unit = (1 + 1 / 8) ** 0.5 * np.std(split, ddof=1)
    assert hgb.split_units == pytest.approx((np.median(acc_b) - np.mean(split)) / unit)
    assert hgb.call == "homologs" and _model(r, "lr").call == "a re-split"
    assert {v.a_says[-2:] for v in r.verdicts} == {"/8"}  # the re-splits' own calls
    assert main(["homology", "--dataset", "prot", "--against", "prot-disjoint"]) == 0
    split_out = capsys.readouterr().out  # the default yardstick: a's, which has no split run
    assert "Yardstick: the split-to-split spread (seed:split), and prot has 0" in " ".join(
        split_out.split()
    )
    argv = ["homology", "--dataset", "prot", "--against", "prot-disjoint", "--yardstick"]
    assert main([*argv, "paired"]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert flat.startswith(
        "prot-disjoint (homology-disjoint by GraphPart, 3 proteins removed; 3 seed runs) "
        "against 8 random re-splits of its own proteins (train 19 / test 8)."
    )
    assert "Yardstick: paired, 8 random re-splits (seed:split) of prot-disjoint's own" in flat
    assert re.search(r"^model\s+random re-splits\s+homology-disjoint\s", out, re.M), out
    assert "resting on homologs shared by train and test: hgb accuracy" in flat
    assert main([*argv, "paired", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["yardstick"] == "paired" and doc["sizes"] == [19, 8] and doc["split_runs"] == 8


def test_a_yardstick_without_against_and_paired_without_its_runs_are_one_line(world, capsys):
    store, a, b, *_ = world
    assert main(["homology", "--dataset", "prot", "--yardstick", "paired"]) == 1
    assert main(["homology", "--dataset", "prot", "--against", "prot-disjoint",
                 "--yardstick", "paired"]) == 1  # fmt: skip
    err = capsys.readouterr().err
    said = [ln for ln in err.splitlines() if ln]
    assert said == [
        "kit: error: --yardstick judges kit homology --against NAME: give --against",
        "kit: error: no seed:split runs of prot-disjoint with their arrays: the paired "
        "yardstick is random re-splits of its own proteins at its own sizes, which `kit run "
        "--factor seed:split --dataset prot-disjoint` makes (split seeds 0-9)",
    ], err


def test_an_accuracy_that_rose_beyond_the_spread_is_not_blamed_on_homologs(
    tmp_path, kit_home, capsys
):
    """Homologs shared by train and test only help the random split: hgb higher on the
    disjoint split, beyond the split spread, was called `homologs`; it is `a rise`, said apart."""
    a, b = _datasets()
    save_dataset(a), save_dataset(b)
    (tmp_path / "prot").mkdir(), (tmp_path / "prot-disjoint").mkdir()
    store = Store(kit_home)
    _seed_runs(store, tmp_path, a, (8, 9, 10))
    _seed_runs(store, tmp_path, b, (0, 1, 2))  # better without homologs
    _split_runs(store, tmp_path, a, (8, 9, 8, 9, 10, 9, 8, 9))
    hgb = _model(_across(store, a, b), "hgb")
    assert hgb.b > hgb.a and hgb.split_units > 2 and hgb.call == "a rise"
    assert main(["homology", "--dataset", "prot", "--against", "prot-disjoint"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Higher on the disjoint split beyond a change of split" in out
    assert "does not explain (something else the split changed" in out and "hgb accuracy." in out
    # a verdict's b-a difference may move either way with homologs: those stay as they were
    resting = out[out.index("so resting on homologs") :].split(".")[0]
    assert "hgb accuracy" not in resting and "hgb-lr acc" in resting


def test_the_cli_prints_one_table_and_json(world, capsys):
    assert main(["homology", "--dataset", "prot", "--against", "prot-disjoint"]) == 0
    out = capsys.readouterr().out
    assert "random split" in out and "homology-disjoint" in out and "split units" in out
    assert "Yardstick: the split-to-split spread" in " ".join(out.split())
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
    other = make_dataset(
        "lone",
        "import:l.tsv",
        list(a.ids),
        list(a.seqs),
        list(a.labels),
        list(a.organisms),
        split_seed=9,
    )
    save_dataset(replace(other, meta=dict(b.meta, source_dataset=other.sha256, source_name="lone")))
    assert main(["homology", "--dataset", "lone", "--against", "prot-disjoint"]) != 0
    assert main(["homology", "--dataset", "prot", "--against", "lone"]) != 0
    err = capsys.readouterr().err
    assert "not of lone" in err and "seed run(s) of lone" not in err
    assert "Traceback" not in err


AMINO = np.array(list("ACDEFGHIKLMNPQRSTVWY"))


def _random_sequences(path, n=300, seed=3):
    """Unrelated sequences, each of its own composition, labelled by it (hydrophobic share):
    no protein has a homolog, and the label is learnable without one."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        s = "".join(rng.choice(AMINO, int(rng.integers(80, 200)), p=rng.dirichlet(np.ones(20))))
        rows.append((f"R{i:04d}", s, int(np.isin(list(s), list("ILVFM")).mean() > 0.25)))
    path.write_text(
        "accession\tsequence\tlabel\n" + "".join(f"{a}\t{s}\t{y}\n" for a, s, y in rows)
    )


def _families(path, families=75, seed=7):
    """Families of four (a parent and three 10%-substituted copies), one random label per family:
    a test protein's label is its train homologs' label, and nothing else predicts it."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(families):
        parent, label = rng.choice(AMINO, 150), int(rng.random() < 0.5)
        for k in range(4):
            s = parent.copy()
            if k:
                where = rng.random(150) < 0.1
                s[where] = rng.choice(AMINO, int(where.sum()))
            rows.append((f"F{len(rows):04d}", "".join(s), label))
    path.write_text(
        "accession\tsequence\tlabel\n" + "".join(f"{a}\t{s}\t{y}\n" for a, s, y in rows)
    )


def _real(tmp_path, name, write):
    """``name`` imported, clustered, split homology-disjoint, seed runs on both splits and ten
    split seeds on each (the random one's the split yardstick, the disjoint one's the paired),
    all by the CLI; `kit homology --against`'s JSON (with the arguments given)."""
    import json

    from kit.data.mmseqs import mmseqs_path

    try:
        mmseqs_path()
    except KitError:
        pytest.skip("no MMseqs2 on this platform")
    write(tmp_path / f"{name}.tsv")
    run = ("--threads", "1", "--jobs", "2", "--yes")
    for argv in (
        ("data", "import", str(tmp_path / f"{name}.tsv"), "--name", name),
        ("data", "homology", name),
        ("data", "split", name, "--homology", "--name", f"{name}-disjoint"),
        ("run", "--factor", "seed", "--dataset", name, "--seeds", "0-2", *run),
        ("run", "--factor", "seed", "--dataset", f"{name}-disjoint", "--seeds", "0-2", *run),
        ("run", "--factor", "seed:split", "--dataset", name, "--seeds", "0-9", *run),
        ("run", "--factor", "seed:split", "--dataset", f"{name}-disjoint", "--seeds", "0-9", *run),
    ):
        assert main(list(argv)) == 0, argv
    return lambda capsys, *more: (
        main(["homology", "--dataset", name, "--against", f"{name}-disjoint", "--json", *more]),
        json.loads(capsys.readouterr().out),
    )[1]


@pytest.mark.slow
def test_random_sequences_with_no_homologs_attribute_nothing(tmp_path, kit_home, capsys):
    read = _real(tmp_path, "rnd", _random_sequences)
    capsys.readouterr()
    doc = read(capsys)
    assert doc["leaked"] == 0 and doc["removed"] == 0 and doc["nothing"]
    assert doc["yardstick"] == "seed:split" and doc["split_runs"] == 10
    assert {r["call"] for r in doc["models"] + doc["verdicts"]} == {"no homologs"}
    assert main(["homology", "--dataset", "rnd", "--against", "rnd-disjoint"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Nothing to attribute to homologs" in out and "resting on homologs" not in out
    paired = read(capsys, "--yardstick", "paired")
    assert paired["yardstick"] == "paired" and paired["nothing"] and paired["split_runs"] == 10
    assert {r["call"] for r in paired["models"] + paired["verdicts"]} == {"no homologs"}


@pytest.mark.slow
def test_families_whose_label_follows_them_find_the_homologs(tmp_path, kit_home, capsys):
    read = _real(tmp_path, "fam", _families)
    capsys.readouterr()
    doc = read(capsys)
    assert doc["leaked"] > 0 and not doc["nothing"] and doc["split_runs"] == 10
    calls = {r["name"]: r["call"] for r in doc["models"]}
    # the forest and boosting score ~0.96 on a random split, chance on the disjoint one
    assert calls["rf accuracy"] == calls["hgb accuracy"] == "homologs"
    rf = next(r for r in doc["models"] if r["name"] == "rf accuracy")
    assert rf["b"] - rf["a"] < -0.3 and rf["split_units"] < -2
    # paired: the disjoint split against random re-splits of its own proteins at its sizes
    paired = read(capsys, "--yardstick", "paired")
    assert paired["yardstick"] == "paired" and paired["split_runs"] == 10
    calls = {r["name"]: r["call"] for r in paired["models"]}
    assert calls["rf accuracy"] == calls["hgb accuracy"] == "homologs"
