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
        assert json.dumps(compare.compare_runs(store, *ab).to_json(), sort_keys=True) == \
            json.dumps(c, sort_keys=True)
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
        return {p["filepath"]: p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}

    before = blas_threads()
    seen = []
    monkeypatch.setattr(Ahead, "_analyse", lambda self, run_id: seen.append(blas_threads()))
    ahead = Ahead(Store(tmp_path / "store"), [])
    ahead.stored("some-run")
    ahead.close()
    assert seen and all(n == 1 for n in seen[0].values()) and seen[0]
    assert blas_threads() == before
