"""kit.open(): DataFrames with the same numbers as the CLI's --json, and `kit budget --csv`."""

import io
import json

import pandas as pd
import pytest
from stored import budget_store

import kit
from kit.cli import main
from kit.views.frames import budget_frame, pairs_frame, runs_frame, verdicts_frame


@pytest.fixture
def home(tmp_path, monkeypatch):
    budget_store(tmp_path)
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def cli_json(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def same(a, b):
    """Equal numbers and labels; the JSON's keys are sorted, so column order may differ."""
    pd.testing.assert_frame_equal(a.sort_index(), b.sort_index(), check_like=True)


def test_every_frame_holds_the_numbers_of_the_matching_json(home, capsys):
    k = kit.open(home)
    read = lambda frame: frame.drop(columns="dataset")  # noqa: E731  (what it read: below)
    same(read(k.budget()), budget_frame(cli_json(capsys, "budget", "--json")))
    same(k.runs(), runs_frame(cli_json(capsys, "runs", "--json")))
    same(read(k.verdicts()), verdicts_frame(cli_json(capsys, "verdicts", "--json")))
    same(
        read(k.pairs("seed")), pairs_frame(cli_json(capsys, "budget", "--factor", "seed", "--json"))
    )
    advised = cli_json(capsys, "advise", "--json")
    adv = k.advice()
    assert list(adv["factor"]) == [r["factor"] for r in advised["ranking"]]
    assert adv.attrs["recommendations"] and "seed" not in list(adv["factor"])
    assert adv.attrs["unit"] == advised["unit"] and adv.attrs["unit"][0]["factor"] == "seed"


def test_each_frame_says_what_it_read_and_the_default_as_the_cli_says_it(home, capsys):
    """#56: k.budget() chose the latest runs' dataset and said nothing of it."""
    k = kit.open(home)
    name = "d" * 12  # a dataset the store knows by its hash alone
    assert main(["budget"]) == 0
    cli = " ".join(capsys.readouterr().out.split())
    for frame in (k.budget(), k.verdicts(), k.pairs("seed"), k.advice()):
        assert frame.attrs["dataset"] == name and set(frame["dataset"]) <= {name}
        assert list(frame.columns)[0] == "dataset"
    chosen = k.budget().attrs["chosen"]
    assert chosen.startswith("the most recent run's; dataset=NAME chooses")
    assert "the most recent run's; --dataset NAME [--n N] chooses" in cli  # the same words
    assert "dataset" not in k.runs().attrs  # every run: of no one dataset


def test_a_dataset_named_is_said_as_asked(tmp_path, monkeypatch):
    from kit.data.dataset import make_dataset

    ds = make_dataset(
        "mine",
        "import:m.tsv",
        [f"P{i}" for i in range(30)],
        ["ACDE" * 20] * 30,
        [i % 2 for i in range(30)],
        ["Human"] * 30,
    )
    budget_store(tmp_path, ds)
    k = kit.open(tmp_path / "home")
    for frame in (k.budget("mine"), k.runs("mine"), k.verdicts("mine")):
        assert frame.attrs == {**frame.attrs, "dataset": "mine", "chosen": "as asked"}
        assert set(frame["dataset"]) == {"mine"}


def test_one_row_per_thing_and_real_numbers(home):
    k = kit.open()
    b = k.budget()
    assert set(b.index) >= {"seed", "threads", "repeat"} and b.index.is_unique
    assert b.loc["repeat", "emb_rel_max"] == 0 and b.loc["seed", "emb_rel_max"] > 0
    runs = k.runs()
    assert runs.index.is_unique and len(runs) == len(
        {r for p in k.store.pairs() for r in (p.a, p.b)}
    )
    st = k.stages(runs.index[0][:10])
    assert {"svd_rand", "lr", "knn"} <= set(st.index) and st.loc["svd_rand", "dtype"] == "<f8"
    with pytest.raises(kit.notebook.KitError, match="no run 'zzz'"):
        k.stages("zzz")
    with pytest.raises(kit.notebook.KitError, match="no stored dataset 'nope'"):
        k.budget("nope")


def test_budget_csv_is_the_frame_for_a_spreadsheet(home, capsys):
    assert main(["budget", "--csv"]) == 0
    out = capsys.readouterr()
    got = pd.read_csv(io.StringIO(out.out), index_col="row")
    want = kit.open().budget()
    assert list(got.index) == list(want.index)
    pd.testing.assert_series_equal(got["emb_rel_max"], want["emb_rel_max"], check_names=False)
    assert "dataset " in out.err and "dataset " not in out.out  # the file holds rows only
    assert main(["budget", "--csv", "--factor", "seed"]) == 0
    pairs = pd.read_csv(io.StringIO(capsys.readouterr().out), index_col="pair")
    assert len(pairs) == len(kit.open().pairs("seed"))


def test_a_list_field_is_one_csv_cell(home, capsys):
    """`kit budget --csv` spread each list over columns (labels_0..labels_8, stages_0..,
    components_median_0..63: ~240 columns): each list field is one cell now, its items joined
    by "; ", so a row reads across a screen and the header names the frame's own columns."""
    from kit.views.frames import LIST_SEPARATOR

    want = budget_frame(cli_json(capsys, "budget", "--json"))
    assert main(["budget", "--csv"]) == 0
    got = pd.read_csv(io.StringIO(capsys.readouterr().out), index_col="row")
    assert sorted(got.columns) == sorted(want.columns)  # one column per field, no name_0..
    lists = [c for c in want.columns if any(isinstance(v, list) for v in want[c])]
    assert {"labels", "runs"} <= set(lists)
    for c in lists:
        for row in want.index:
            items = want.at[row, c]
            if isinstance(items, list) and items and isinstance(items[0], str):
                assert got.at[row, c].split(LIST_SEPARATOR) == items, (c, row)
    seed = want.loc[want["factor"] == "seed"].index[0]
    assert len(want.at[seed, "labels"]) == 2 and "; " in got.at[seed, "labels"]
