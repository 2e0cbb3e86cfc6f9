"""kit.runs.executing.on_node: what a node sends back, made by kit's own make_run in this
process (no Dask between) and stored by the real runner: only what the store lacks crosses,
and every byte that crosses is still verified."""

import numpy as np
import pytest

from kit.runs.executing.answers import unpacked
from kit.runs.executing.on_node import _sent, make_run
from kit.runs.executing.runner import Executor, LocalExecutor, PlanIncomplete, run_all
from kit.runs.store import Store, array_sha256
from kit.runs.store.blobs import blob_key


def _entry(a):
    return {"sha256": array_sha256(a), "dtype": a.dtype.str, "shape": list(a.shape)}


def test_a_node_keeps_back_only_held_arrays_whose_files_are_what_its_manifest_says(tmp_path):
    a, b, c = np.arange(4.0), np.arange(5), np.ones(3)
    for name, x in (("a", a), ("b", b), ("c", c)):
        np.save(tmp_path / f"{name}.npy", x)
    manifest = {"stages": {"a": _entry(a), "b": _entry(b), "c": _entry(np.zeros(3))}}
    held = {
        blob_key(e["sha256"], e["dtype"], e["shape"])
        for name, e in manifest["stages"].items()
        if name != "b"
    }
    sent = _sent(tmp_path, manifest, held)
    # a: held and its file is it; b: not held; c: held, but its file is not what was recorded
    assert sorted(sent) == ["b.npy", "c.npy"]
    assert sent["c.npy"] == (tmp_path / "c.npy").read_bytes()
    assert sorted(_sent(tmp_path, manifest, frozenset())) == ["a.npy", "b.npy", "c.npy"]


@pytest.fixture(autouse=True)
def node_pool(monkeypatch):
    """This test's own warm workers on the "node" (a Dask worker's last as long as it, under
    one KIT_HOME; each test has its own)."""
    from kit.runs.executing import on_node
    from kit.runs.executing.warm import WarmPool

    pool = WarmPool()
    monkeypatch.setattr(on_node, "_warm", pool)
    yield
    pool.close()


class Node(Executor):
    """A cluster node in this process: make_run and the answer's checks as the Dask executor
    runs them, each answer kept (and changed by ``forge`` first, as a node could)."""

    name, remote = "node", True

    def __init__(self, forge=None):
        self.forge, self.answers = forge, []

    def run(self, spec, dataset, input_npy, out, stop=lambda: False, held=frozenset()):
        got = make_run(spec.to_json(), dataset, input_npy, sorted(held))
        if self.forge:
            self.forge(got)
        self.answers.append(got)
        return unpacked(got, spec, out, held)


def _seed_plan(tiny, n=3):
    from kit.core.spec import seeds
    from kit.runs.planning.options import PlanOptions
    from kit.runs.planning.plan import plan

    base = plan("seed", tiny.sha256, PlanOptions(threads=(1,)))[0].a
    return [base.with_(seeds=seeds(v)) for v in range(n)]


def _stages(store, specs):
    return [{st: s.sha256 for st, s in store.run(x.run_id).stages.items()} for x in specs]


@pytest.mark.slow
def test_a_nodes_runs_send_only_what_the_store_lacks_and_store_what_a_local_run_does(
    tiny, tmp_path
):
    specs = _seed_plan(tiny)
    here, node = Store(tmp_path / "here"), Node()
    local = LocalExecutor()
    try:
        run_all(specs, tiny, here, jobs=1, executor=local)
    finally:
        local.close()
    there = Store(tmp_path / "there")
    run_all(specs, tiny, there, jobs=1, executor=node)
    assert _stages(there, specs) == _stages(here, specs)
    assert all(there.has_arrays(s.run_id) for s in specs)
    first, last = node.answers[0], node.answers[-1]
    assert len(first["arrays"]) == len(first["manifest"]["stages"])  # an empty store: all of it
    # a run that starts once another is stored (the one before it is stored as it starts): the
    # k-mers and TF-IDF matrices, equal in every seed run, stay on the node
    left = set(last["manifest"]["stages"]) - {n[:-4] for n in last["arrays"]}
    assert {"kmer.data", "tfidf.data"} <= left
    for s in specs:
        for st in ("kmer.data", "svd_rand", "rf"):
            assert np.array_equal(there.array(s.run_id, st), here.array(s.run_id, st))


@pytest.mark.slow
def test_a_forged_answer_is_refused_nothing_stored_and_the_next_plan_makes_the_run(tiny, tmp_path):
    specs = _seed_plan(tiny, 2)
    store = Store(tmp_path / "home")
    run_all(specs[:1], tiny, store, jobs=1, executor=Node())

    def changed_bytes(got):  # a sent array whose bytes are not what the manifest says
        name = next(n for n in got["arrays"] if n == "svd_rand.npy")
        data = bytearray(got["arrays"][name])
        data[-1] ^= 1
        got["arrays"][name] = bytes(data)

    def left_out_unheld(got):  # an array left out that the store does not hold
        got["arrays"].pop("svd_rand.npy")

    for forge, says in (
        (changed_bytes, "svd_rand: the worker's array does not match"),
        (left_out_unheld, "not a run"),
    ):
        with pytest.raises(PlanIncomplete) as e:
            run_all(specs[1:], tiny, store, jobs=1, executor=Node(forge))
        assert says in str(e.value) and not store.has_run(specs[1].run_id)
    run_all(specs[1:], tiny, store, jobs=1, executor=Node())
    assert store.has_run(specs[1].run_id) and store.has_arrays(specs[1].run_id)
