"""The readers of `kit explain`'s stored runs: the report's section, advice's pins, the TUI's
budget tab (x); they run nothing, and a store without cross-fed runs reads as before."""

import pytest
from stored import arrays, budget_store, env, flipped, put, spec

from kit.analysis.advice import advise
from kit.analysis.explain import feed_spec
from kit.analysis.explain_advice import kept_until
from kit.analysis.explain_stored import stored_explanation, stored_explanations
from kit.app.verbs import report
from kit.core.subject import of_dataset
from kit.runs.planning.options import Pair
from kit.runs.store.hosts import host_id
from kit.views.report import write
from kit.worker.pipeline import fed_stages

PROBE = "probe-np1-sk152-scikit-learn-{}"


def _sklearn_store(tmp_path, dataset="d" * 64, home=None):
    """budget_store (seed pairs: one seed unit of boosting = 5 flips) plus two scikit-learn
    pairs of the same a: one explained (boosting and the forest originate), with a stored
    release scan (1.5.2, 1.6.0, 1.7.0) where boosting changes at 1.7.0 for good and the forest
    changes at 1.6.0 and back at 1.7.0; one made here whose cross-fed run is not stored."""
    st = budget_store(tmp_path, dataset, home)
    sha = dataset if isinstance(dataset, str) else dataset.sha256
    base = arrays(0)
    a = spec(dataset=sha, stack="np1-sk152", stack_id="a" * 64)

    def pk(v):
        return env(packages={"numpy": "1.26.4", "scipy": "1.13.1", "scikit-learn": v})

    put(st, tmp_path, a, base, pk("1.5.2"))
    boost = flipped(base, "hgb", 10)  # 10 boosting flips: 2 seed units
    new = flipped(boost, "rf", 1)  # and one of the forest's
    b = a.with_(stack="np1-sk191", stack_id="b" * 64)
    put(st, tmp_path, b, new, pk("1.9.1"))
    # fed a's embedding, b's models still give b's boosting: it originates in the models
    fed = feed_spec(a, b, "models")
    put(st, tmp_path, fed, {n: new[n] for n in fed_stages("models")}, pk("1.9.1"))
    forest = flipped(base, "rf", 1)
    for v, out in (("1.5.2", base), ("1.6.0", forest), ("1.7.0", boost)):
        probe = a.with_(stack=PROBE.format(v), stack_id=v.replace(".", "") * 16, host=host_id())
        put(
            st,
            tmp_path,
            feed_spec(a, probe, "models"),
            {n: out[n] for n in fed_stages("models")},
            pk(v),
        )
    c = a.with_(stack="np1-sk161", stack_id="c" * 64, host=host_id())
    put(st, tmp_path, c, flipped(base, "hgb", 3), pk("1.6.1"))
    st.add_pairs(
        [Pair("sklearn", "", a, b, "1.5.2 vs 1.9.1"), Pair("sklearn", "", a, c, "1.5.2 vs 1.6.1")]
    )
    return st


def test_a_store_without_cross_fed_runs_reads_as_before(tmp_path):
    st = budget_store(tmp_path)
    assert stored_explanations(st, "d" * 64) == []
    assert not [r for r in advise(st, "d" * 64)["recommendations"] if r["kind"] == "explain"]
    write(report(st, of_dataset("d" * 64, {})), tmp_path / "rep")
    assert "Where the differences start" not in (tmp_path / "rep" / "report.md").read_text()
    # a factor row with nothing stored says what kit explain would run, and nothing runs
    x = stored_explanation(st, "d" * 64, "seed")
    assert x["pairs"] == [] and not x["stored"] and len(st.specs()) == 5


def test_the_stored_release_scan_is_read_back_and_advice_pins_the_release(tmp_path):
    st = _sklearn_store(tmp_path)
    [x] = stored_explanations(st, "d" * 64)
    assert x["factor"] == "sklearn" and [e.label for e in x["pairs"]] == ["1.5.2 vs 1.9.1"]
    assert x["missing"] == [
        ("1.5.2 vs 1.6.1", "not explained yet: `kit explain sklearn` computes it (1 cross-fed run)")
    ]
    e = x["pairs"][0]
    assert e.library == "scikit-learn" and [r["version"] for r in e.releases] == [
        "1.5.2",
        "1.6.0",
        "1.7.0",
    ]
    hgb, rf = e.stages["hgb"], e.stages["rf"]
    assert hgb.origin == "originates" and hgb.changes_at == ("1.7.0",) and hgb.flips == 10
    assert rf.changes_at == ("1.6.0", "1.7.0") and rf.back_to == {"1.7.0": "1.5.2"}
    assert kept_until(hgb, "1.5.2") == "1.7.0" and kept_until(rf, "1.5.2") is None
    recs = [r for r in advise(st, "d" * 64)["recommendations"] if r["kind"] == "explain"]
    assert len(recs) == 1  # the forest's change went again: nothing to pin for it
    assert recs[0]["text"].startswith(
        "Pin scikit-learn below 1.7.0 to keep gradient boosting's results of scikit-learn "
        "1.5.2, or accept the change (10 flips, 2 seed units)"
    )
    assert recs[0]["basis"]["models"] == {"hgb": {"flips": 10, "seed_units": 2.0}}


def test_the_report_gets_a_section_with_kit_explains_paragraphs(tmp_path):
    st = _sklearn_store(tmp_path)
    write(report(st, of_dataset("d" * 64, {})), tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    section = md.split("## Where the differences start")[1].split("\n## ")[0]
    assert "### sklearn" in section
    assert (
        "scikit-learn 1.5.2 -> 1.7.0 (3 of 3 releases scanned): boosting changes at 1.7.0"
        " (10 flips, 2 seed units)" in section
    )  # 5 flips a seed: the budget's seed unit
    assert "1.5.2 vs 1.6.1: not explained yet: `kit explain sklearn` computes it" in section
    assert md.index("## Where the differences start") < md.index("## Verdict stability")
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "<h2>Where the differences start</h2>" in html


@pytest.mark.slow
def test_a_real_precision_pair_explained_reads_in_the_report_and_advice(tiny, tmp_path):
    """Real runs on the host stack: precision originates at TF-IDF and everything after it
    inherits; advice says which stage the difference starts in."""
    from kit.analysis.explain import feeds_needed
    from kit.runs.executing.runner import run_all
    from kit.runs.planning.options import PlanOptions
    from kit.runs.planning.plan import plan
    from kit.runs.store import Store

    store = Store()
    pair = plan("precision", tiny.sha256, PlanOptions(threads=(1,)))[0]
    run_all([pair.a, pair.b], tiny, store)
    store.add_pairs([pair])
    assert stored_explanations(store, tiny.sha256) == []  # nothing cross-fed yet
    run_all(feeds_needed(store, store.pairs()), tiny, store)
    [x] = stored_explanations(store, tiny.sha256)
    assert x["missing"] == [] and x["pairs"][0].first_origin == "tfidf"
    recs = [r for r in advise(store, tiny.sha256)["recommendations"] if r["kind"] == "explain"]
    assert len(recs) == 1 and recs[0]["text"].startswith(
        "precision: the difference starts at TF-IDF, which differs on identical inputs; "
    )
    assert recs[0]["text"].endswith("(in 1 of 1 pair(s), cross-fed runs): pin what changes TF-IDF.")
    write(report(store, of_dataset(tiny.sha256, {})), tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "### precision" in md and "the difference starts at TF-IDF" in md


@pytest.mark.slow
async def test_the_budget_tabs_x_explains_the_highlighted_row_from_the_store(kit_home, tmp_path):
    """x on a row: the stored paragraphs, or what `kit explain` would run; nothing runs."""
    from textual.widgets import DataTable

    from kit.data import load_dataset
    from kit.envs.platforms import Platform
    from kit.runs.store import Store
    from kit.tui.app import KitApp

    ds = load_dataset("synthetic", 120)
    st = _sklearn_store(tmp_path, ds, kit_home)
    s0, far = spec(dataset=ds.sha256), spec(dataset=ds.sha256, dtype="float32", host=host_id())
    put(st, tmp_path, far, arrays(7))  # another embedding and models: two groups to cross-feed
    st.add_pairs([Pair("precision", "", s0, far, "float64 vs float32")])
    before = len(st.specs())
    linux = Platform("linux", "x86_64", cpu_flags=frozenset({"avx", "avx2"}), downloads=True)
    async with KitApp("synthetic", 120, platform=linux, store=Store()).run_test(
        size=(80, 24)
    ) as pilot:
        await pilot.press("4")
        await pilot.app.workers.wait_for_complete()  # the budget is read in a worker
        await pilot.pause()
        keys = [k.value for k in pilot.app.query_one("#budget-table", DataTable).rows]
        said = lambda: " ".join(str(pilot.app.query_one("#explain-text").render()).split())  # noqa: E731
        for row, words in (
            ("sklearn", "scikit-learn 1.5.2 -> 1.7.0 (3 of 3 releases scanned)"),
            (
                "sklearn",
                "1.5.2 vs 1.6.1: not explained yet: `kit explain "
                "sklearn` computes it (1 cross-fed run)",
            ),
            ("precision", "not explained yet: `kit explain precision` (it runs 2 cross-fed runs)"),
        ):
            await pilot.press(*["down"] * keys.index(row), "x")
            await pilot.app.workers.wait_for_complete()  # explained in a worker
            await pilot.pause()
            assert pilot.app.query_one("#explain-scroll").display
            assert words in said(), said()
            await pilot.press("x", *["up"] * keys.index(row))  # x again: back to the table
            assert pilot.app.query_one("#budget-table").display
    assert len(Store().specs()) == before  # read, never run


def test_the_release_sentence_claims_only_what_was_built():
    """1.6.0 not built: a change seen at 1.7.0 came 'between 1.5.2 and 1.7.0'; with one end not
    built, a stage that did not change is not called 'not a release's'."""
    from types import SimpleNamespace as NS

    from kit.views.explain import release_text

    rows = [
        {"version": v, "status": s, "why": "no wheel"}
        for v, s in (("1.5.2", "built"), ("1.6.0", "could not build"), ("1.7.0", "built"))
    ]
    moved = NS(origin="originates", changes_at=("1.7.0",), back_to={}, flips=3, seed_units=None)
    still = NS(origin="originates", changes_at=(), back_to={}, flips=0, seed_units=None)
    e = NS(library="scikit-learn", releases=rows, notes=(), stages={"hgb": moved, "rf": still})
    text = release_text(e)
    assert "boosting changes between 1.5.2 and 1.7.0 (3 flips)" in text
    e = NS(library="scikit-learn", releases=rows[:2], notes=(), stages={"rf": still})
    assert "not a release's" not in release_text(e)
    rows[1]["status"] = "built"
    e = NS(library="scikit-learn", releases=rows, notes=(), stages={"rf": still})
    assert "(the difference is not a release's)" in release_text(e)


def test_a_lab_file_s_outputs_are_named_as_declared_never_as_kit_s_stages():
    """A file's output named `rf` or `kmer` is its own name (not 'the forest'), a `kmer` output
    is read by the scan (kit's counts are not rerun; a file is rerun whole), and a pair whose
    outputs all agree says so without a cross-fed word."""
    from kit.analysis.explain import PairExplanation, StageOrigin
    from kit.views.explain import explain_text, pair_text

    rows = [{"version": v, "status": "built", "why": None} for v in ("1.5.2", "1.6.0", "1.7.0")]
    stages = {
        "rf": StageOrigin("differs", changes_at=("1.6.0",)),
        "kmer": StageOrigin("identical", changes_at=("1.6.0", "1.7.0"), back_to={"1.7.0": "1.5.2"}),
        "other": StageOrigin("identical"),
    }
    e = PairExplanation(
        "a" * 64,
        "b" * 64,
        "1.5.2 vs 1.7.0",
        "",
        stages,
        library="scikit-learn",
        releases=tuple(rows),
        outputs=True,
    )
    text = " ".join(pair_text(e).split())
    assert "rf differs; kmer and other agree." in text and "the forest" not in text
    assert "rf changes at 1.6.0" in text
    assert (
        "kmer is identical at both ends but changes at 1.6.0 and back at 1.7.0 (to its "
        "1.5.2 output): on 1.6.0 it differs from both"
    ) in text
    assert "starts at" not in text and "cross-fed" not in text
    assert e.to_json()["outputs"]["kmer"] == {
        "origin": "identical",
        "changes_at": ["1.6.0", "1.7.0"],
        "back_to": {"1.7.0": "1.5.2"},
    }
    same = PairExplanation(
        "a" * 64, "b" * 64, "seed 0 vs 1", "", {"x": StageOrigin("identical")}, outputs=True
    )
    got = explain_text({"factor": "seed:x", "pairs": [same], "skipped": []})
    assert "every output is identical; nothing to explain." in got
    assert "(the releases in between)" in got and "cross-fed" not in got


def test_one_stage_changes_on_its_own_and_one_verdict_turns():
    """Grammar that a reader sees: 'the forest also changes on its own', '1 turns'."""
    from types import SimpleNamespace as NS

    from kit.analysis.homology_words import resting
    from kit.views.explain import pair_text

    o = lambda origin: NS(origin=origin, flips=None)  # noqa: E731
    e = NS(
        label="p",
        a="a" * 12,
        b="b" * 12,
        first_origin="hgb",
        emb_rel=None,
        library=None,
        curve=None,
        stages={"hgb": o("originates"), "rf": o("originates")},
    )
    assert "the forest also changes on its own" in pair_text(e)
    h = NS(rest_on_homologs=0, runs=3, significant_only_under_clusters=1)
    assert "; 1 turns significant only under clusters" in resting(h)
