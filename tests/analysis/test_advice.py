"""kit.analysis.advice: ranking by how far a factor travels; sentences built from measured numbers."""

from dataclasses import replace

import pytest
from stored import arrays, budget_store, put, spec

from kit.analysis.advice import LEVELS, advise, level
from kit.analysis.records import BudgetRow, ModelBudget
from kit.runs.planning.options import Pair


@pytest.mark.slow
def test_ranking_and_sentences(tmp_path):
    st = budget_store(tmp_path)
    a = advise(st, "d" * 64)
    names = [r["factor"] for r in a["ranking"]]
    # the yardstick is the unit the ranking is in, not an item of it (ranked "1" it read as
    # "pin your seed"); its own sentence stays among the advice
    assert "repeat" not in names and names == ["threads"]
    assert [(u["factor"], u["level"], u["pairs"]) for u in a["unit"]] == [
        ("seed", "conclusions", 2)
    ]
    assert any(r["text"].startswith("Name and record seed (") for r in a["recommendations"])
    assert all(r["level"] in LEVELS for r in a["ranking"])
    texts = [r["text"] for r in a["recommendations"]]
    assert texts[0].startswith("The null experiment held: 1 repeated")
    threads = next(r for r in a["recommendations"] if r["basis"].get("factor") == "threads")
    assert "gradient boosting median 2, at most 2 of 20 (0.4 seed units)" in threads["text"]
    assert threads["basis"]["hgb"]["flips_median"] == 2
    assert {x["factor"] for x in a["not_measured"]} >= {"precision", "blas", "sklearn", "svd-iters"}
    assert a["per_model"]["hgb"][0]["factor"] in ("seed", "threads")


def test_a_failed_null_experiment_is_a_warning(tmp_path):
    st = budget_store(tmp_path)
    other = arrays(0)
    other["rf"] = other["rf"][::-1].copy()
    s2 = spec(replicate=2)
    put(st, tmp_path, s2, other)
    st.add_pairs([Pair("repeat", "", spec(), s2, "run again")])
    text = advise(st, "d" * 64)["recommendations"][0]["text"]
    assert text.startswith("WARNING: the null experiment failed: only 1 of 2")


def test_levels():
    row = BudgetRow(
        "x",
        verdicts_changed_max=0,
        models={"lr": ModelBudget(flips_max=0, max_dp=0.0)},
        emb_rel_max=0.0,
        arpack_rel_max=0.0,
        kmeans_ari_min=1.0,
        knn_jaccard_min=1.0,
        all_identical=1,
        pairs=1,
    )
    assert level(row) == "nothing"
    assert level(replace(row, all_identical=0)) == "bits"
    assert level(replace(row, emb_rel_max=1e-13)) == "magnitudes"
    assert level(replace(row, models={"lr": ModelBudget(flips_max=3, max_dp=0.6)})) == "predictions"
    assert level(replace(row, verdicts_changed_max=1)) == "conclusions"


@pytest.mark.slow
def test_factors_this_machine_cannot_run_say_why(tmp_path):
    from kit.envs.platforms import Platform
    from kit.views.tables import not_measured_lines

    st = budget_store(tmp_path)
    linux = Platform("linux", "x86_64", downloads=True)
    a = advise(st, "d" * 64, plat=linux)
    nm = {x["factor"]: x["cannot_run_here"] for x in a["not_measured"]}
    assert "no CUDA device visible" in nm["torch-device"]
    assert nm["precision"] is None and nm["sklearn"] is None  # could run here: just not yet
    lines = not_measured_lines(a)
    assert lines[0].startswith("Not measured on this dataset: ") and "precision" in lines[0]
    assert "torch-device" not in lines[0]
    assert any(ln.startswith("Cannot be measured here: torch-device: device cuda") for ln in lines)
    mac = advise(st, "d" * 64, plat=Platform("darwin", "arm64", (14, 5), rosetta=True))
    assert {x["factor"]: x["cannot_run_here"] for x in mac["not_measured"]}["torch-device"] is None


def test_a_one_class_model_is_a_warning_first(tmp_path):
    import numpy as np

    from kit.core.spec import seeds

    st = budget_store(tmp_path)
    dead = arrays(0)
    dead["mlp"] = np.zeros_like(dead["mlp"])
    s = spec(seeds=seeds(7))
    put(st, tmp_path, s, dead)
    st.add_pairs([Pair("seed", "", spec(), s, "seed 0 vs 7")])
    recs = advise(st, "d" * 64)["recommendations"]
    warn = next(r for r in recs if r["kind"] == "one-class")
    assert (
        warn["text"].startswith("WARNING: the MLP predicted a single class")
        and warn["basis"]["model"] == "mlp"
    )


def test_seed_like_factors_are_named_not_pinned(tmp_path):
    """svd-solver varies seeds: its advice never says "pin"."""
    from kit.core.spec import seeds

    st = budget_store(tmp_path)
    a0, a1 = spec(embedding="arpack"), spec(embedding="arpack", seeds=seeds(1))
    put(st, tmp_path, a0, arrays(0))
    put(st, tmp_path, a1, arrays(3))
    st.add_pairs([Pair("svd-solver", "", a0, a1, "seed 0 vs 1")])
    a = advise(st, "d" * 64)
    assert "svd-solver" not in [r["factor"] for r in a["ranking"]]
    assert not any("svd-solver" in r["text"] and "Pin " in r["text"] for r in a["recommendations"])


def test_the_ranking_gives_a_magnitude_row_the_seed_units_its_sentence_gives(tmp_path):
    """threads at "0" seed units in the ranking beside "2.5e-13 seed units" in its sentence."""
    from kit.analysis.budget import budget
    from kit.core.numbers import fmt

    st = budget_store(tmp_path)
    b = budget(st, "d" * 64)
    quiet = {
        m: replace(d, flips_max=0, flips_median=0, flips_median_seed_units=0.0, max_dp=1e-9)
        for m, d in b["rows"][0].models.items()
    }
    moved = BudgetRow(
        "threads",
        verdicts_changed_max=0,
        models=quiet,
        emb_rel_max=1.3e-13,
        emb_rel_seed_units=1.4e-13,
        arpack_rel_max=0.0,
        kmeans_ari_min=1.0,
        knn_jaccard_min=1.0,
        all_identical=0,
        pairs=1,
    )
    b = dict(b, rows=[r for r in b["rows"] if r.factor != "threads"] + [moved])
    a = advise(st, "d" * 64, b)
    row = next(r for r in a["ranking"] if r["factor"] == "threads")
    text = next(r["text"] for r in a["recommendations"] if r["text"].startswith("threads"))
    assert row["level"] == "magnitudes" and row["reach_seed_units"] == 1.4e-13
    assert f"({fmt(row['reach_seed_units'])} seed units)" in text, text


def test_the_yardstick_is_the_unit_in_the_text_and_the_advice_tab_not_ranked_first(tmp_path):
    """`kit advise` and the TUI's Advice tab showed `1  seed  conclusions  1`: seed is 1 seed
    unit by definition and is named and recorded, never pinned. A line above the table shows
    it as the unit; the table ranks what to pin; the seed's own sentence stays."""
    import re

    from kit.tui.advice import advice_markdown
    from kit.views.tables import advice_text

    a = advise(budget_store(tmp_path), "d" * 64)
    text, md = advice_text(a), advice_markdown(a)
    for shown in (text, md):
        flat = " ".join(shown.split())
        said = "Not ranked, the unit (a seed is named and recorded, not pinned): seed = 1 seed unit"
        seed = a["unit"][0]
        assert f"{said}, reached {seed['level']} in {seed['pairs']} pair(s)" in flat, shown
        assert "Name and record seed (" in flat
    assert re.search(r"^1\s+threads\s", text, re.M) and not re.search(r"^\d+\s+seed\s", text, re.M)
    assert "| 1 | threads |" in md and "| seed |" not in md
