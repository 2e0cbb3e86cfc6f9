"""kit.runs.executing.node_classes: where runs go on a cluster, from the workers' facts alone."""

import pytest

from kit.core.errors import KitError
from kit.core.spec import RunSpec
from kit.runs.executing.node_classes import ClassTable, class_resource, dask_setup


def _table():
    w = {
        "tcp://1": ("ws1", "w-1", "skylake", 4),
        "tcp://2": ("ws1", "w-2", "epyc", 8),
        "tcp://3": ("ws2", "w-3", "epyc", 8),
        "tcp://4": ("ws3", "w-4", "skylake", 2),
    }
    return ClassTable(
        {a: {"host": h, "name": n, "class": c, "slots": k} for a, (h, n, c, k) in w.items()},
        "tcp://head:8786",
    )


def test_the_largest_class_by_cores_is_the_default_and_threads_default_to_the_smallest_worker():
    t = _table()
    assert list(t.classes()) == ["epyc", "skylake"] and t.default() == "epyc"
    assert t.fewest_cores() == 2


def test_hosts_names_node_classes_only_and_says_which_class_a_host_or_worker_is():
    t = _table()
    assert t.resolve(["epyc", "skylake"]) == ("epyc", "skylake")
    with pytest.raises(KitError, match="w-4: that is a host or worker of node class skylake"):
        t.resolve(["w-4"])
    with pytest.raises(KitError, match="ws1: that host spans the node classes epyc, skylake"):
        t.resolve(["ws1"])
    with pytest.raises(
        KitError,
        match="no worker of tcp://head:8786 is of that node class; its classes are epyc, skylake",
    ):
        t.resolve(["m3"])


def test_a_run_wider_than_every_worker_of_its_class_is_unfit_with_why():
    t = _table()
    spec = RunSpec(dataset="d" * 64, stack="host", stack_id="s", host="skylake", threads=4)
    assert t.unfit(spec) is None
    assert "no worker of node class skylake offers that many cores (at most 4)" in t.unfit(
        spec.with_(threads=8)
    )
    assert t.unfit(spec.with_(host="epyc", threads=8)) is None
    assert "which tcp://head:8786 does not have" in t.unfit(spec.with_(host="m3"))


def test_the_preload_declares_the_workers_class_as_many_as_its_cores(monkeypatch):
    class State:  # the two dicts of a distributed WorkerState that a preload sees
        def __init__(self, cores):
            self.total_resources = {"cores": cores} if cores else {}
            self.available_resources = dict(self.total_resources)

    class Worker:
        def __init__(self, cores):
            self.state = State(cores)

    monkeypatch.setenv("KIT_NODE_CLASS", "skylake")
    w = Worker(4)
    dask_setup(w)
    assert w.state.total_resources == {"cores": 4, class_resource("skylake"): 4}
    assert w.state.available_resources == w.state.total_resources
    bare = Worker(0)  # no cores: it takes no run, so it declares no class either
    dask_setup(bare)
    assert bare.state.total_resources == {}


def test_classes_a_cluster_starts_count_before_their_workers_join():
    """[jobqueue.CLASS] templates: a class whose job is still queued can be named, and which
    class is the default does not hang on which job ran first."""
    one = {"tcp://1": {"host": "n1", "name": "small-0", "class": "small", "slots": 2}}
    t = ClassTable(one, "slurm", planned={"small": (1, 2), "big": (2, 16)})
    assert t.resolve(["small", "big"]) == ("small", "big") and t.default() == "big"
    assert t.fewest_cores() == 2 and t.classes()["big"] == []
    spec = RunSpec(dataset="d" * 64, stack="host", stack_id="s", host="big", threads=16)
    assert t.unfit(spec) is None and "at most 16" in t.unfit(spec.with_(threads=32))


def _issue_42_cluster():
    """Issue 42's cluster: class small (3 jobs x 1 core) and big (1 job x 2 cores)."""
    return ClassTable(
        {
            f"tcp://s{k}": {"host": f"s{k}", "name": f"s{k}", "class": "small", "slots": 1}
            for k in range(3)
        }
        | {"tcp://b0": {"host": "b0", "name": "b0", "class": "big", "slots": 2}},
        "slurm",
    )


def test_a_run_goes_to_the_smallest_class_that_offers_its_cores_with_its_pair():
    """--factor threads --threads 1,2 on small + big: the plan's class (small, the largest by
    cores) cannot hold the 2-thread run; the whole pair moves to big, never one run of it
    (another class would be a confound), and a pair no class can hold stays unfit."""
    from kit.runs.planning.options import Pair

    t = _issue_42_cluster()
    assert t.default() == "small"
    assert (t.smallest_fitting(1), t.smallest_fitting(2), t.smallest_fitting(3)) == (
        "small",
        "big",
        None,
    )
    a = RunSpec(dataset="d" * 64, stack="host", stack_id="s" * 64, threads=1, host="small")
    p = Pair("threads", "", a, a.with_(threads=2), "1 vs 2 threads")
    assert t.unfit(p.b) and not t.unfit(p.a)
    moved = t.refit(p)
    assert (moved.a.host, moved.b.host) == ("big", "big") and not t.unfit(moved.b)
    assert (moved.a.threads, moved.b.threads) == (1, 2) and moved.label == p.label
    assert t.refit(Pair("threads", "", a, a.with_(threads=3), "1 vs 3")) is None
    across = Pair("host", "", a, a.with_(host="big"), "small vs big")
    assert t.refit(across) is None  # a host pair's classes differ on purpose


def test_plan_runs_moves_the_pair_and_skips_only_what_no_class_holds(tiny):
    from kit.app.audit import audit_of, plan_runs
    from kit.runs.planning.options import PlanOptions

    opts = PlanOptions(threads=(1, 2), host="small")
    t = _issue_42_cluster()
    a = plan_runs(audit_of(tiny, ["threads"], opts, "host"), t.unfit, t.refit)
    assert [(p.a.host, p.b.host, p.b.threads) for p in a.pairs] == [("big", "big", 2)]
    assert a.skipped == []
    only_small = ClassTable(
        {
            f"tcp://s{k}": {"host": f"s{k}", "name": f"s{k}", "class": "small", "slots": 1}
            for k in range(3)
        },
        "slurm",
    )
    a = plan_runs(audit_of(tiny, ["threads"], opts, "host"), only_small.unfit, only_small.refit)
    assert a.pairs == [] and [p.b.threads for p, _ in a.skipped] == [2]


def test_a_plan_whose_every_pair_is_skipped_is_a_failure_not_a_success(tiny, kit_home):
    """An executor with nowhere to make any run (every worker too small, no class to move to):
    kit run's verb returns a failure naming the skips, and nothing ran."""
    from kit.app.verbs import run, to_run
    from kit.data import save_dataset
    from kit.runs.executing.runner import Executor
    from kit.runs.planning.options import PlanOptions
    from kit.runs.store import Store

    class TooSmall(Executor):  # a real executor of the interface: its workers have 1 core
        name = "too-small"
        table = ClassTable(
            {"tcp://s": {"host": "s", "name": "s", "class": "small", "slots": 1}}, "tcp://s"
        )

        def unfit(self, spec):
            return self.table.unfit(spec)

        def refit(self, pair):
            return self.table.refit(pair)

    save_dataset(tiny)
    store = Store()
    got = run(
        store,
        to_run(store, ["threads"], "tiny"),
        PlanOptions(threads=(1, 2), host="small"),
        executor=TooSmall(),
    )
    assert got.failure is not None and "all 1 pair(s) were skipped" in str(got.failure)
    assert store.runs() == []
