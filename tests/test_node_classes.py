"""kit.runs.executing.node_classes: where runs go on a cluster, from the workers' facts alone."""

import pytest

from kit.core.errors import KitError
from kit.core.spec import RunSpec
from kit.runs.executing.node_classes import ClassTable, class_resource, dask_setup


def _table():
    w = {"tcp://1": ("ws1", "w-1", "skylake", 4), "tcp://2": ("ws1", "w-2", "epyc", 8),
         "tcp://3": ("ws2", "w-3", "epyc", 8), "tcp://4": ("ws3", "w-4", "skylake", 2)}
    return ClassTable({a: {"host": h, "name": n, "class": c, "slots": k}
                       for a, (h, n, c, k) in w.items()}, "tcp://head:8786")


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
    with pytest.raises(KitError, match="no worker of tcp://head:8786 is of that node class; its "
                                       "classes are epyc, skylake"):
        t.resolve(["m3"])


def test_a_run_wider_than_every_worker_of_its_class_is_unfit_with_why():
    t = _table()
    spec = RunSpec(dataset="d" * 64, stack="host", stack_id="s", host="skylake", threads=4)
    assert t.unfit(spec) is None
    assert "no worker of node class skylake offers that many cores (at most 4)" in t.unfit(
        spec.with_(threads=8))
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
