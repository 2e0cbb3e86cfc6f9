"""kit.runs.executing.schedule: runs share the cores (threads x runs <= cores), the largest first."""

import threading

import pytest

from kit.core.spec import RunSpec
from kit.runs.executing import schedule
from kit.runs.store.records import StoredRun


def spec(threads=1, kind="pipeline", svd_iters=5, **kw):
    extra = {"input": "r" * 64} if kind != "pipeline" else {}
    if kind == "perturb":
        extra["perturb"] = "float32"
    return RunSpec(
        dataset="d" * 64,
        stack="host",
        stack_id="s",
        threads=threads,
        kind=kind,
        svd_iters=svd_iters,
        **extra,
        **kw,
    )


def test_auto_fills_the_cores_at_the_smallest_thread_count(monkeypatch):
    monkeypatch.setattr(schedule, "cores", lambda: 8)
    assert schedule.at_once([spec(1), spec(2)], "auto") == 8
    assert schedule.at_once([spec(4)], "auto") == 2
    assert schedule.at_once([spec(16)], "auto") == 1
    assert schedule.at_once([spec(1)], 3) == 3
    assert "2 run(s) use every core and run alone" in schedule.note(
        [spec(1), spec(8), spec(8)], "auto"
    )
    assert schedule.note([spec(1)], "auto") is None


def test_the_core_budget_never_holds_more_threads_than_cores(monkeypatch):
    """Runs that fit share the cores at once (1 + 1 + 2 of 4 meet at a barrier inside the
    budget); one more is seen waiting on the budget until they end; a run wider than the
    machine holds all of it."""
    waiting = threading.Event()

    class Seen(threading.Condition):
        def wait(self, timeout=None):
            waiting.set()  # a hold found too few cores free
            return super().wait(timeout)

    with monkeypatch.context() as m:
        m.setattr(threading, "Condition", Seen)
        budget = schedule.CoreBudget(4)
    met, release, entered = threading.Barrier(4, timeout=60), threading.Event(), threading.Event()

    def fits(threads):
        with budget.hold(threads):
            met.wait()
            release.wait(60)

    def one_more():
        with budget.hold(1):
            entered.set()

    held = [threading.Thread(target=fits, args=(t,)) for t in (1, 1, 2)]
    for w in held:
        w.start()
    met.wait()  # all three hold their cores now
    assert budget.free == 0 and not waiting.is_set()
    extra = threading.Thread(target=one_more)
    extra.start()
    assert waiting.wait(60) and not entered.is_set()  # it waits for a core ...
    release.set()
    for w in [*held, extra]:
        w.join(60)
    assert entered.is_set() and budget.free == 4  # ... and runs once one is free
    with budget.hold(8):  # wider than the machine: it runs alone
        assert budget.free == 0
    assert budget.free == 4


def test_largest_first_from_past_runs_else_by_kind():
    """Core-seconds: threads x the median wall time of past runs like it."""
    one, two = spec(1, seeds=(("svd", 1),)), spec(2)

    def history(one_s, two_s):
        return [
            StoredRun(spec(t).run_id, spec(t), "", {"wall_s": w}, {})
            for t, w in ((1, one_s), (2, two_s))
        ]

    assert schedule.largest_first([one, two], history(9.0, 5.0)) == [two, one]  # 9 < 2 x 5
    assert schedule.largest_first([two, one], history(12.0, 5.0)) == [one, two]  # 12 > 2 x 5
    torch, pipe = spec(kind="torch"), spec(svd_iters=50)
    # nothing measured: the pipeline before the torch MLP, more power iterations first
    assert schedule.largest_first([torch, spec(), pipe], []) == [pipe, spec(), torch]


def test_the_papers_matrix_starts_its_widest_runs_first():
    """Two-thread runs among one-thread ones (threads, precision, seeds): all wide ones first, so
    none waits for two free cores while a narrow one keeps a core busy and the other idle."""
    plan = [
        spec(1),
        spec(1, seeds=(("svd", 1),)),
        spec(2),
        spec(1, dtype="float32"),
        spec(2, dtype="float32"),
        spec(1, seeds=(("svd", 2),)),
    ]
    order = schedule.largest_first(plan, [])
    assert [s.threads for s in order] == [2, 2, 1, 1, 1, 1]


@pytest.mark.parametrize("text, ok", [("auto", "auto"), ("3", 3)])
def test_jobs_argument(text, ok):
    from kit.cli.common import jobs_arg

    assert jobs_arg(text) == ok
