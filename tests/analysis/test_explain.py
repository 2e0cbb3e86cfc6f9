"""kit explain: cross-fed runs reproduce their source bit for bit; origin per stage, planted."""

import json

import pytest

from kit.analysis.explain import (
    NO_CURVE,
    PairExplanation,
    StageOrigin,
    explain_factor,
    feed_spec,
    feeds_needed,
    origins,
    seed_unit,
)
from kit.cli import main
from kit.data.dataset import save_dataset
from kit.runs.executing.runner import run_all
from kit.runs.planning.options import PlanOptions
from kit.runs.planning.plan import plan
from kit.runs.store import Store
from kit.views.explain import pair_text
from kit.worker.pipeline import fed_stages
from tests.analysis.test_amplify import row


def _stored(tiny, factor, **opts):
    """A factor's first pair, run and stored (with its pair) on the tiny set."""
    store = Store()
    pair = plan(factor, tiny.sha256, PlanOptions(threads=(1,), **opts))[0]
    run_all([pair.a, pair.b], tiny, store)
    store.add_pairs([pair])
    return store, pair


@pytest.mark.slow
def test_a_cross_fed_run_fed_its_own_inputs_reproduces_the_run_bit_for_bit(
    tiny, tmp_path, monkeypatch
):
    store = Store()
    base = plan("repeat", tiny.sha256, PlanOptions(threads=(1,)))[0].a
    fed = [feed_spec(base, base, g) for g in ("tfidf", "svd", "models")]
    run_all([base], tiny, store)
    run_all(fed, tiny, store)
    whole = store.run(base.run_id).stages
    for f in fed:
        stages = store.run(f.run_id).stages
        assert set(stages) == set(fed_stages(f.feed))  # exactly the stages it reruns
        assert {n: s.sha256 for n, s in stages.items()} == {n: whole[n].sha256 for n in stages}
    # stored like any run: the same spec again runs nothing
    assert run_all(fed, tiny, store, on_done=pytest.fail) == [f.run_id for f in fed]
    _travels_in_bundles(store, [base.run_id] + [f.run_id for f in fed], tmp_path, monkeypatch)


def _travels_in_bundles(store, ids, tmp_path, monkeypatch):
    """Exported and imported like any run; a feed run whose stages are not its feed's is refused."""
    import copy
    import json

    from kit.app.bundle import export, import_bundle, read
    from kit.app.bundle_checks import check_document
    from kit.core.errors import KitError

    export(store, ids, tmp_path / "fed.kit", arrays=True)
    doc = read(tmp_path / "fed.kit")
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "elsewhere"))  # another machine
    other = Store()
    assert import_bundle(other, tmp_path / "fed.kit")["added"] == len(ids)
    assert {s.kind for s in other.specs().values()} == {"pipeline", "feed"}
    fed = next(r for r in doc["runs"] if r["spec"].get("feed") == "svd")
    for forge in ("tfidf.data", None):  # a stage it does not write; one it writes, gone
        bad = copy.deepcopy(doc)
        r = next(x for x in bad["runs"] if x["id"] == fed["id"])
        if forge:
            r["stages"][forge] = r["stages"]["svd_rand"]
            r["blobs"][forge] = r["blobs"]["svd_rand"]
        else:
            del r["stages"]["knn"], r["blobs"]["knn"]
        r["manifest"]["stages"] = r["stages"]
        with pytest.raises(KitError, match="fed from svd on, but its stages"):
            for derived in ("_declared", "_images"):  # what reading derives, never a bundle field
                bad.pop(derived, None)
            check_document(json.dumps(bad).encode(), "fed.kit")


@pytest.mark.slow
def test_precision_originates_at_tfidf_and_every_later_stage_inherits(tiny):
    """float32 is a cast inside the TF-IDF stage: fed a's float64 TF-IDF, b's SVD and models
    give a's bits (planted inherited), while b's TF-IDF on a's counts still differs."""
    store, pair = _stored(tiny, "precision")
    stored = store.pairs()
    need = feeds_needed(store, stored)
    assert sorted(s.feed for s in need) == ["models", "svd", "tfidf"]
    run_all(need, tiny, store)
    o = origins(store, pair.a.run_id, pair.b.run_id)
    assert o["kmer"] == "identical" and o["tfidf"] == "originates"
    assert o["svd_rand"] == o["svd_arpack"] == "inherited"
    # whatever differs later differs only because the embedding did (a model may even agree)
    assert {o[s] for s in o if s not in ("kmer", "tfidf")} <= {"inherited", "identical"}
    e = explain_factor(store, tiny.sha256, "precision")["pairs"][0]
    assert e.first_origin == "tfidf" and e.curve == NO_CURVE
    assert e.stages["lr"].flips is not None and e.stages["lr"].predicted_flips is None
    # read on a perturbation curve: quiet noise, then noise that flips 40 logistic regressions
    for flips, words in ((0, "about what noise gives"), (40, "less than noise of this size")):
        curve = [row("perturb", f"{eps:.0e}", eps, {"lr": flips}) for eps in (1e-9, 1e-1)]
        e = explain_factor(store, tiny.sha256, "precision", curve)["pairs"][0]
        lr = e.stages["lr"]
        assert e.curve is None and lr.predicted_flips == flips and lr.flips == 0
        assert lr.reading.startswith(words)
        assert words in pair_text(e) and e.stages["knn"].predicted_flips is None
    # with seed pairs in the budget, every model's flips also in seed units (4 flips a seed)
    seeds = [row("seed", "", 0.5, {m: 4 for m in ("kmeans", "knn", "lr", "mlp", "hgb", "rf")})]
    e = explain_factor(store, tiny.sha256, "precision", curve + seeds)["pairs"][0]
    for o in e.stages.values():
        assert o.seed_units == (None if o.flips is None else o.flips / 4)
        assert o.to_json()["seed_units"] == o.seed_units


@pytest.mark.slow
def test_seeds_originate_where_they_are_drawn_and_knn_and_lr_inherit(tiny, capsys):
    """Another seed draws another SVD, k-means and seeded models (planted originating); the
    neighbours and the logistic regression draw nothing: fed a's embedding, they are a's."""
    store, pair = _stored(tiny, "seed", seeds=(0, 1))
    need = feeds_needed(store, store.pairs())
    assert sorted(s.feed for s in need) == ["models", "svd"]  # counts and TF-IDF agree
    save_dataset(tiny)  # `kit explain` reruns stages: it needs the proteins, not only the runs
    assert main(["explain", "seed", "--json"]) == 0  # makes the cross-fed runs, then explains
    got = json.loads(capsys.readouterr().out)
    assert all(store.has_run(s.run_id) for s in need)
    assert got["factor"] == "seed" and [p["b"] for p in got["pairs"]] == [pair.b.run_id]
    st = got["pairs"][0]["stages"]
    assert st["lr"]["origin"] == "inherited" and st["lr"]["changes_at"] == []
    assert got["pairs"][0]["releases"] == [] and st["svd_rand"]["flips"] is None
    assert main(["explain", "seed"]) == 0  # stored: nothing runs again
    text = capsys.readouterr()
    assert "starts at the randomized SVD" in text.out and "cross-fed run(s)" not in text.err
    for args, words in ((["explain", "threads"], "no pairs of factor 'threads'"),):
        assert main(args) == 1
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1
    for typo, words in (
        ("nosuch", "unknown factor 'nosuch'; choose from repeat"),
        ("precison", "unknown factor 'precison': did you mean precision"),
    ):
        with pytest.raises(SystemExit) as usage:  # a mistyped factor: the usage error of budget's
            main(["explain", typo])
        err = capsys.readouterr().err
        assert usage.value.code == 2 and words in err and len(err.strip().splitlines()) == 1
    o = origins(store, pair.a.run_id, pair.b.run_id)
    assert o["tfidf"] == "identical" and o["svd_rand"] == "originates"
    assert o["knn"] == o["lr"] == "inherited"
    assert o["kmeans"] == o["rf"] == "originates"
    e = explain_factor(store, tiny.sha256, "seed")["pairs"][0]
    assert e.first_origin == "svd_rand"
    assert e.curve.startswith("not an environment factor")  # seeds are not noise of a size


def test_flips_are_also_said_in_seed_units_where_a_seed_pair_measured_them():
    rows = [
        row("seed", "", 0.5, {"hgb": 72.5, "rf": 0}),
        row("torch-seed", "", None, {"hgb": 1, "mlp_torch": 3}),
    ]
    assert seed_unit(rows) == {"hgb": 72.5, "rf": 0, "mlp_torch": 3} and seed_unit(None) == {}
    from dataclasses import replace

    # a model the budget flags (one class in a seed run) has no seed unit: it means nothing
    rows[0].models["rf"] = replace(rows[0].models["rf"], one_class_runs=1)
    assert seed_unit(rows) == {"hgb": 72.5, "mlp_torch": 3}
    stages = {
        "hgb": StageOrigin("originates", changes_at=("1.9.0",), flips=58, seed_units=0.8),
        "rf": StageOrigin("originates", changes_at=("1.6.0",), flips=2),
    }  # no unit: none
    rel = [
        {"package": "scikit-learn", "version": v, "stack": v, "status": "built", "why": None}
        for v in ("1.5.2", "1.6.0", "1.9.0")
    ]
    e = PairExplanation(
        "a" * 64,
        "b" * 64,
        "1.5.2 vs 1.9.0",
        "",
        stages,
        "hgb",
        0.01,
        NO_CURVE,
        tuple(rel),
        "scikit-learn",
    )
    text = " ".join(pair_text(e).split())
    assert "boosting changes at 1.9.0 (58 flips, 0.8 seed units)" in text
    assert "the forest changes at 1.6.0 (2 flips)" in text


def test_the_release_scans_seam_reruns_the_stages_in_each_stack_on_a_s_arrays():
    from collections import namedtuple

    from kit.analysis.explain import rerun_in_stacks
    from kit.core.spec import RunSpec

    a = RunSpec(dataset="d" * 64, stack="np1-sk152", stack_id="s" * 64, dtype="float32")
    Probe = namedtuple("Probe", "name identity")
    got = rerun_in_stacks(a, [Probe("sk160", "1" * 64), Probe("sk170", "2" * 64)], ("models",))
    assert [(s.stack, s.stack_id, s.kind, s.feed, s.input, s.dtype) for s in got] == [
        ("sk160", "1" * 64, "feed", "models", a.run_id, "float32"),
        ("sk170", "2" * 64, "feed", "models", a.run_id, "float32"),
    ]


def test_a_seed_split_pair_is_not_cross_fed(tmp_path):
    """Two splits predict different test proteins: nothing of one is an input of the other."""
    from stored import arrays, put, spec

    from kit.analysis.explain import unexplainable
    from kit.runs.store import Store
    from kit.runs.store.hosts import host_id

    st = Store(tmp_path / "home")
    a = put(st, tmp_path, spec(split=0, host=host_id()), arrays(0))
    b = put(st, tmp_path, spec(split=1, host=host_id()), arrays(1))
    assert "different test proteins" in unexplainable(st, a, b).why
    twin = put(st, tmp_path, spec(split=0, host=host_id(), threads=2), arrays(2))
    assert "re-split" in unexplainable(st, a, twin).why  # a host pair of a re-split run


def test_a_release_scan_runs_here_whoever_made_a():
    """An imported a lent its machine's host id to the scan's feed runs."""
    from types import SimpleNamespace

    from stored import spec

    from kit.analysis.explain import rerun_in_stacks
    from kit.runs.store.hosts import host_id

    a = spec(host="elsewhere")
    runs = rerun_in_stacks(a, [SimpleNamespace(name="probe-x", identity="p" * 64)], ("models",))
    assert [r.host for r in runs] == [host_id()] and runs[0].input == a.run_id


def test_explain_says_its_own_lines_as_kit_run_does():
    """A cluster started for cross-fed runs (or a stack built) is said with kit run's `kit: `
    prefix, on one line, markup left as typed."""
    from io import StringIO

    from rich.console import Console

    from kit.cli.explain import _Said

    out = StringIO()
    _Said(Console(file=out, width=40)).log(
        "starting a local Dask cluster of 2 worker process(es) [local]"
    )
    assert out.getvalue() == (
        "kit: starting a local Dask cluster of 2 worker process(es) [local]\n"
    )
