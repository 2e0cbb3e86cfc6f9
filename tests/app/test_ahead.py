"""kit.app.ahead: verdicts and comparisons are made while the plan runs, as the budget makes them."""

import json

import pytest

from kit.analysis import compare, verdicts
from kit.analysis.budget import budget
from kit.app import audit as au
from kit.app.ahead import Ahead
from kit.runs.planning.options import PlanOptions
from kit.runs.store import Store


@pytest.mark.slow
def test_a_plan_leaves_its_comparisons_and_verdicts_made(tmp_path):
    store = Store(tmp_path / "store")
    a = au.prepare(["seed"], "synthetic", 150, PlanOptions(threads=(1,), seeds=(0, 1, 2)))
    au.plan_runs(a)
    au.execute(a, store, jobs=1)
    pairs = [(p.a.run_id, p.b.run_id) for p in a.pairs]
    assert len(pairs) == 2
    # made during the plan, before anything asked for the budget
    made = {ab: store.comparison(*ab, compare.VERSION) for ab in pairs}
    assert all(c is not None for c in made.values())
    assert all(store.verdicts(r, verdicts.VERSION) for r in {r for ab in pairs for r in ab})
    rows = budget(store, a.dataset.sha256)["rows"]
    # and exactly what the budget would have made itself
    store.db.execute("DELETE FROM comparisons")
    store.db.execute("DELETE FROM verdicts")
    for ab, c in made.items():
        assert json.dumps(compare.compare_runs(store, *ab).to_json(), sort_keys=True) == json.dumps(
            c, sort_keys=True
        )
    assert budget(store, a.dataset.sha256)["rows"] == rows
    store.close()


@pytest.mark.slow
def test_a_failure_in_the_background_loses_nothing(tmp_path):
    """A run it cannot read (here: an unknown id) is left for the budget to report; the thread
    goes on with the next run."""
    store = Store(tmp_path / "store")
    a = au.prepare(["repeat"], "synthetic", 150, PlanOptions(threads=(1,)))
    au.plan_runs(a)
    au.execute(a, store, jobs=1)
    store.db.execute("DELETE FROM comparisons")
    store.db.execute("DELETE FROM verdicts")
    ahead = Ahead(store, a.pairs)
    ahead.stored("no-such-run")
    for s in a.specs:
        ahead.stored(s.run_id)
    ahead.close()
    p = a.pairs[0]
    assert store.comparison(p.a.run_id, p.b.run_id, compare.VERSION) is not None


def test_the_analysis_takes_one_blas_thread_while_runs_hold_the_cores(tmp_path, monkeypatch):
    """Its BLAS calls run on one thread (no idle BLAS threads spin-waiting beside the runs);
    the process's own limits are back afterwards."""
    from threadpoolctl import threadpool_info

    def blas_threads():
        return {
            p["filepath"]: p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"
        }

    before = blas_threads()
    seen = []
    monkeypatch.setattr(Ahead, "_analyse", lambda self, run_id: seen.append(blas_threads()))
    ahead = Ahead(Store(tmp_path / "store"), [])
    ahead.stored("some-run")
    ahead.close()
    assert seen and all(n == 1 for n in seen[0].values()) and seen[0]
    assert blas_threads() == before


def _stored_pairs(st) -> list:
    """The store's pairs as a plan holds them (each side a spec with its run id)."""
    from types import SimpleNamespace as NS

    return [NS(a=NS(run_id=p.a), b=NS(run_id=p.b)) for p in st.pairs()]


def test_each_array_is_read_once_and_the_results_are_the_budgets(tmp_path, monkeypatch):
    """The analysis keeps the arrays it read (the reference run's, above all, compared with
    every other run) by blob key: each blob is read from the store once, kept read-only, and
    every comparison and verdict is the one made from the store itself."""
    from stored import budget_store

    from kit.app.ahead import _Kept

    st = budget_store(tmp_path)
    pairs = [(p.a.run_id, p.b.run_id) for p in _stored_pairs(st)]
    plain = {ab: compare.compare_runs(st, *ab).to_json() for ab in pairs}
    runs = {r for ab in pairs for r in ab}
    told = {r: verdicts.run_verdicts(st, r) for r in runs}
    st.db.execute("DELETE FROM comparisons")
    st.db.execute("DELETE FROM verdicts")
    read, real = [], Store.array
    monkeypatch.setattr(
        Store,
        "array",
        lambda self, r, stage: read.append(self.stage_blobs(r)[stage]) or real(self, r, stage),
    )
    ahead = Ahead(st, _stored_pairs(st))
    for r in sorted(runs):
        ahead.stored(r)
    ahead.close()
    assert read and len(read) == len(set(read))  # each blob once (read plainly: many times)
    for ab, c in plain.items():
        assert st.comparison(*ab, compare.VERSION) == json.loads(json.dumps(c))
    assert {r: st.verdicts(r, verdicts.VERSION) for r in runs} == json.loads(json.dumps(told))
    kept = _Kept(st)
    a = kept.array(pairs[0][0], "svd_rand")
    assert not a.flags.writeable and kept.array(pairs[0][0], "svd_rand") is a


def test_the_kept_arrays_stay_within_their_bound(tmp_path):
    from stored import budget_store

    from kit.app.ahead import _Kept

    st = budget_store(tmp_path)
    runs = [r.id for r in st.runs()]
    one = st.array(runs[0], "svd_rand").nbytes
    kept = _Kept(st, limit=2 * one)
    for r in runs:
        kept.array(r, "svd_rand")
        assert kept._bytes <= 2 * one
    assert len(kept._arrays) == 2
