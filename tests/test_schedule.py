"""kit.runs.schedule: runs share the cores (threads x runs <= cores), the longest first."""

import threading
import time

import pytest

from kit.core.spec import RunSpec
from kit.runs import schedule


def spec(threads=1, kind="pipeline", svd_iters=5, **kw):
    extra = {"input": "r" * 64} if kind != "pipeline" else {}
    if kind == "perturb":
        extra["perturb"] = "float32"
    return RunSpec(dataset="d" * 64, stack="host", stack_id="s", threads=threads, kind=kind,
                   svd_iters=svd_iters, **extra, **kw)


def test_auto_fills_the_cores_at_the_smallest_thread_count(monkeypatch):
    monkeypatch.setattr(schedule, "cores", lambda: 8)
    assert schedule.at_once([spec(1), spec(2)], "auto") == 8
    assert schedule.at_once([spec(4)], "auto") == 2
    assert schedule.at_once([spec(16)], "auto") == 1
    assert schedule.at_once([spec(1)], 3) == 3
    assert "2 run(s) use every core and run alone" in schedule.note([spec(1), spec(8), spec(8)], "auto")
    assert schedule.note([spec(1)], "auto") is None


def test_the_core_budget_never_holds_more_threads_than_cores():
    budget = schedule.CoreBudget(4)
    busy, peak, lock = [0], [0], threading.Lock()

    def run(threads):
        with budget.hold(threads):
            with lock:
                busy[0] += min(threads, 4)
                peak[0] = max(peak[0], busy[0])
            time.sleep(0.02)
            with lock:
                busy[0] -= min(threads, 4)

    workers = [threading.Thread(target=run, args=(t,)) for t in (1, 2, 3, 1, 4, 2, 8, 1, 1, 3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert peak[0] <= 4 and busy[0] == 0 and budget.free == 4


def test_longest_first_from_past_runs_else_by_kind():
    long_, short = spec(1, seeds=(("svd", 1),)), spec(2)
    history = [{"spec": {"kind": "pipeline", "dataset": "d" * 64, "stack": "host", "threads": 1},
                "manifest": {"wall_s": 9.0}},
               {"spec": {"kind": "pipeline", "dataset": "d" * 64, "stack": "host", "threads": 2},
                "manifest": {"wall_s": 5.0}}]
    assert schedule.longest_first([short, long_], history) == [long_, short]
    torch, pipe = spec(kind="torch"), spec(svd_iters=50)
    # nothing measured: the pipeline before the torch MLP, more power iterations first
    assert schedule.longest_first([torch, spec(), pipe], []) == [pipe, spec(), torch]


@pytest.mark.parametrize("text, ok", [("auto", "auto"), ("3", 3)])
def test_jobs_argument(text, ok):
    from kit.cli.common import jobs_arg

    assert jobs_arg(text) == ok
