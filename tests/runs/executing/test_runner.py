"""kit.runs.executing.runner: the worker runs isolated from kit's dependencies; runs are stored once."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kit.core.errors import KitError
from kit.core.scratch import root
from kit.core.spec import seeds
from kit.envs.launch import worker_env, worker_root
from kit.runs.executing.runner import execute, run_all
from kit.runs.planning.options import PlanOptions
from kit.runs.planning.plan import plan
from kit.runs.store import Store

pytestmark = pytest.mark.slow


def test_worker_root_holds_only_the_worker():
    root = worker_root()
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    assert files == [
        "kit/__init__.py",
        "kit/worker/__init__.py",
        "kit/worker/__main__.py",
        "kit/worker/contract.py",
        "kit/worker/disk.py",
        "kit/worker/dtypes.py",
        "kit/worker/fingerprint.py",
        "kit/worker/kinds.py",
        "kit/worker/names.py",
        "kit/worker/neighbours.py",
        "kit/worker/pipeline.py",
        "kit/worker/protein_ids.py",
        "kit/worker/seeds_arg.py",
        "kit/worker/text.py",
        "kit/worker/torch_mlp.py",
    ]
    assert worker_root() == root  # content-addressed, reused


def test_worker_source_imports_only_the_numeric_stack():
    import ast

    allowed = set(sys.stdlib_module_names) | {"numpy", "scipy", "sklearn", "threadpoolctl", "torch"}
    for f in (worker_root() / "kit" / "worker").glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            assert {n.split(".")[0] for n in names} <= allowed, (f.name, names)


def test_worker_process_imports_nothing_of_kits_own_dependencies(tiny, tmp_path):
    spec = plan("repeat", tiny.sha256, PlanOptions(threads=(1,)))[0].a
    code = (
        "import sys, kit.worker.__main__ as w; w.main(sys.argv[1:]); "
        "import kit; print(kit.__file__); "
        "print(sorted(m for m in sys.modules if m.startswith('kit.') and not m.startswith('kit.worker')))"
    )
    (tmp_path / "spec.json").write_text(spec.worker_json())
    from kit.data.dataset import dataset_path

    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "--spec",
            str(tmp_path / "spec.json"),
            "--dataset",
            str(dataset_path(tiny)),
            "--out",
            str(out),
        ],
        env=worker_env(spec),
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    # without KIT_CHANNEL (run by hand) the worker answers on its stdout
    answer, kit_file, loaded = proc.stdout.strip().splitlines()
    assert json.loads(answer) == {"ok": True}
    assert kit_file.startswith(str(worker_root())) and loaded == "[]"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["env"]["env"]["OPENBLAS_NUM_THREADS"] == "1"
    assert manifest["seeds"] == spec.seed_dict
    assert {"svd_rand", "knn", "rf", "y_test"} <= set(manifest["stages"])
    # importing the libraries is timed on its own, not inside the first stage that needs them
    assert {"import", "kmer", "tfidf", "rf"} <= set(manifest["timings"])
    assert "import" not in manifest["stages"]


def test_execute_stores_once_and_resumes(tiny):
    store = Store()
    pairs = plan("repeat", tiny.sha256, PlanOptions(threads=(1,)))
    specs = [pairs[0].a, pairs[0].b]
    done = []
    run_all(specs[:1], tiny, store, on_done=done.append)
    assert len(done) == 1
    run_all(specs, tiny, store, on_done=done.append)  # only the missing one runs
    assert len(done) == 2 and all(store.has_run(s.run_id) for s in specs)
    assert execute(specs[0], tiny, store) == specs[0].run_id


def test_worker_failure_is_one_clear_error(tiny):
    bad = plan("repeat", tiny.sha256, PlanOptions(threads=(1,)))[0].a
    bad = bad.with_(replicate=7, svd_iters=1)
    # a stack interpreter that cannot run the worker
    from kit.envs.kinds.host import HostStack
    from kit.envs.stacks import Stack

    orig = HostStack.runnable
    HostStack.runnable = lambda self: Stack("host", ("/bin/false",), bad.stack_id, {})
    try:
        with pytest.raises(KitError, match="worker failed in stack 'host'"):
            execute(bad, tiny, Store())
    finally:
        HostStack.runnable = orig
    assert [p.name for p in (Path(os.environ["KIT_HOME"]) / "tmp").iterdir()] == []
    assert list(root().glob(f"run-{os.getpid()}-*")) == []  # its run's folder is gone
    assert not Store().has_run(bad.run_id)


def test_a_warm_worker_makes_the_fresh_processes_run_bit_for_bit(tiny):
    """The process factor: nothing of one run leaks into the next in a warm worker."""
    from kit.analysis.compare import compare_runs

    store = Store()
    pair = plan("process", tiny.sha256, PlanOptions(threads=(1,)))[0]
    run_all([pair.a, pair.b], tiny, store)
    c = compare_runs(store, pair.a.run_id, pair.b.run_id)
    assert all(c.identical.values()) and len(c.identical) >= 10
    fresh, warm = store.run(pair.a.run_id).manifest, store.run(pair.b.run_id).manifest
    assert fresh["runs_before"] == 0 and warm["runs_before"] >= 1  # it followed another run
    assert warm["timings"]["import"]["wall_s"] == 0  # imported by the run before it


def test_plain_runs_share_warm_workers_and_fresh_ones_do_not(tiny):
    specs = [
        s.with_(seeds=seeds(v))
        for v in range(3)
        for s in [plan("repeat", tiny.sha256, PlanOptions(threads=(1,)))[0].a]
    ]
    store = Store()
    run_all(specs, tiny, store, jobs=1)
    assert sorted(store.run(s.run_id).manifest["runs_before"] for s in specs) == [0, 1, 2]
    from kit.runs.executing.runner import LocalExecutor

    others = [s.with_(replicate=5) for s in specs]
    ex = LocalExecutor(fresh=True)
    run_all(others, tiny, store, jobs=1, executor=ex)
    ex.close()
    assert [store.run(s.run_id).manifest["runs_before"] for s in others] == [0, 0, 0]


def test_the_next_run_starts_while_the_last_one_is_stored(tiny, monkeypatch):
    """Storing (verifying, moving, indexing) overlaps the next run: each run's storing waits
    here until the run after it has started, which it never would if storing held the plan up.
    Yet no more runs than ``jobs`` ever run at once, and every run is stored."""
    import threading

    from kit.runs.executing.runner import LocalExecutor

    specs = [
        s.with_(seeds=seeds(v))
        for v in range(3)
        for s in [plan("repeat", tiny.sha256, PlanOptions(threads=(1,)))[0].a]
    ]
    started, overlapped, changed = [], {}, threading.Condition()

    class Watched(LocalExecutor):
        def run(self, spec, *args, **kw):
            with changed:
                started.append(spec.run_id)
                changed.notify_all()
            return super().run(spec, *args, **kw)

    put = Store.put_run

    def put_once_the_next_run_started(self, spec, outdir, manifest, **kw):
        with changed:  # the last run to start has no next one
            overlapped[spec.run_id] = changed.wait_for(
                lambda: started.index(spec.run_id) + 1 < len(started) or len(started) == len(specs),
                timeout=300,
            )
        return put(self, spec, outdir, manifest, **kw)

    monkeypatch.setattr(Store, "put_run", put_once_the_next_run_started)
    store, ex = Store(), Watched()
    try:
        run_all(specs, tiny, store, jobs=1, executor=ex)
    finally:
        ex.close()
    made = sorted((store.run(s.run_id).manifest for s in specs), key=lambda m: m["started"])
    assert len(made) == 3 and sorted(started) == sorted(overlapped) == sorted(
        s.run_id for s in specs
    )
    assert all(overlapped.values()), overlapped  # storing overlapped the next run ...
    for before, after in zip(made, made[1:], strict=False):
        assert after["started"] >= before["finished"]  # ... yet one ran at a time (jobs=1)
