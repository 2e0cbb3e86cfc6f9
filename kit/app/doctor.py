"""`kit doctor`: is this machine sane? The null experiment, thread control, each stack's BLAS,
and the store's integrity, with a remedy for each problem; or a pipeline file's null
experiment alone (``file_doctor``)."""

from __future__ import annotations

from contextlib import closing
from typing import Any

from ..analysis.budget import budget
from ..core import processes
from ..core.paths import subdir
from ..envs.catalogue import HOST
from ..envs.kinds import stack_kind
from ..envs.platforms import Platform
from ..envs.probe import Problem, fingerprint, problems, stack_doctor, thread_probe
from ..runs.executing.runner import LocalExecutor
from ..runs.planning.options import PlanOptions
from ..runs.store import Store
from ..runs.store.check import check_store
from . import audit as au

_REMEDY = {  # what to do about each kind of Problem, by its code
    "generic-kernel": "pin a numpy whose OpenBLAS knows this CPU (numpy 2.x), or set "
    "OPENBLAS_CORETYPE to the right kernel, and record it: kernels change bits",
    "threads-ignored": "the BLAS ignores OMP/OPENBLAS/MKL_NUM_THREADS here (or the matrices are "
    "too small to split): a threads factor measured here shows nothing; do not "
    "read it as stability",
    "blas-mismatch": "rebuild the stack (`kit stacks build`) and check its lock file's "
    "numpy/scipy wheels",
    "no-threadpoolctl": "add threadpoolctl to the stack's lock file",
}


def machine_doctor(plat: Platform, n: int = 200) -> dict:
    """kit doctor: the null experiment, thread control, and each stack's BLAS, with remedies.

    Its runs go to a store of their own (``$KIT_HOME/doctor``) and its dataset is not stored,
    so the user's store, their datasets and the one read commands show are never changed by it.
    """
    store = Store(subdir("doctor"))
    try:
        # the null experiment, and the same run in a fresh and a warm worker process
        a = au.prepare(["repeat", "process"], "synthetic", n, PlanOptions(threads=(1,)), plat=plat)
        au.plan_runs(a)
        au.execute(a, store, jobs=1, keep_dataset=False)  # its dataset is scratch, as its store
        rows = {r.factor: r for r in budget(store, a.dataset.sha256)["rows"]}
        row, warm = rows["repeat"], rows["process"]
    finally:
        store.close()
    null_ok = row.all_identical == row.pairs
    problems_out = []
    if warm.all_identical != warm.pairs:
        problems_out.append(
            {
                "problem": "a run made in a warm worker differs from the same run in "
                "a fresh process",
                "remedy": "run with `kit run --fresh` until it is fixed, and report "
                "it with `kit export`",
            }
        )
    if not null_ok:
        problems_out.append(
            {
                "problem": "the null experiment failed: two identical runs differ",
                "remedy": "a generator is loose or the machine is unstable; check "
                "other jobs' interference and report it with `kit export`",
            }
        )
    cores = processes.cores()
    # {"name", "command", "expected_blas"}, and the stack doctor's "measured" fingerprint if any
    stacks: list[dict[str, Any]] = [
        {"name": "host", "command": stack_kind(HOST).runnable().command, "expected_blas": None}
    ]
    for r in stack_doctor([], plat):
        if r["status"] == "built":
            stacks.append(
                {
                    "name": r["name"],
                    "command": r["command"],
                    "expected_blas": r["expected_blas"],
                    "measured": r["measured"],
                }
            )
    out_stacks: list[dict[str, Any]] = []
    for s in stacks:
        measured = s["measured"] if "measured" in s else fingerprint(s["command"])
        found = problems(measured, s["expected_blas"], plat.cpu_flags)
        probe = thread_probe(s["command"], cores)
        if probe["honoured"] is False:
            found.append(
                Problem(
                    "threads-ignored",
                    f"the thread setting is not honoured: CPU per wall second {probe['cpu_per_wall_n']:.2f} "
                    f"at {cores} threads against {probe['cpu_per_wall_1']:.2f} at 1",
                )
            )
        for p in found:
            problems_out.append(
                {"stack": s["name"], "problem": p.message, "remedy": _REMEDY[p.code]}
            )
        out_stacks.append(
            {
                "name": s["name"],
                "threads": probe,
                "blas": [
                    p for p in measured.get("threadpools") or [] if p.get("user_api") == "blas"
                ],
                "blas_build": measured.get("blas_build"),
            }
        )
    user_store = Store()
    try:
        stored = check_store(
            user_store, full=False
        )  # arrays verified since their last change are trusted
    finally:
        user_store.close()
    if not stored["ok"]:
        problems_out.append(
            {
                "problem": f"the store holds damaged or missing data "
                f"({len(stored['damaged'])} damaged, {len(stored['missing'])} missing "
                f"arrays, {len(stored['datasets'])} dataset files, {stored['orphans']} "
                f"orphan files, {stored['unindexed']} files older than the index)",
                "remedy": "`kit store check --repair` drops the damaged runs (the next "
                "`kit run` makes them again) and sets files older than the "
                "index aside in unindexed/, never deleting them",
            }
        )
    busy = [s["name"] for s in out_stacks if s["threads"]["honoured"] is None]
    return {
        "warm_workers": {
            "pairs": warm.pairs,
            "identical": warm.all_identical,
            "ok": warm.all_identical == warm.pairs,
        },
        "null_experiment": {
            "ok": null_ok,
            "pairs": row.pairs,
            "identical": row.all_identical,
            "dataset": a.dataset.name,
        },
        "stacks": out_stacks,
        "problems": problems_out,
        "store": stored,
        "ok": null_ok and warm.all_identical == warm.pairs and stored["ok"],
        "busy": (
            {
                "stacks": busy,
                "busy_cores": max(s["threads"]["busy_cores"] for s in out_stacks),
                "cores": cores,
            }
            if busy
            else None
        ),
    }


def file_doctor(path, store: Store, timeout: float | None = None) -> dict:
    """A pipeline file's null experiment alone: each thread count `kit run` uses, run twice, and
    a fresh worker against a warm one (state a module keeps between runs: a generator made at
    import); ``ok`` when every output of every such pair is identical, else ``loose`` names
    those that differ. ``timeout``: seconds each run may take (else run_deadline's; its store
    is new, so two hours)."""
    with closing(LocalExecutor(timeout=timeout)) as ex:
        b = au.run_file(path, ("repeat", "process"), PlanOptions(), store, executor=ex)
    assert b is not None  # None is a confirm's no; none is asked here
    rows = [b["factors"].get(f, {"outputs": {}, "pairs": 0}) for f in ("repeat", "process")]
    return {
        "pipeline": b["pipeline"],
        "name": b["name"],
        "pairs": sum(r["pairs"] for r in rows),
        "outputs": list(dict.fromkeys(n for r in rows for n in r["outputs"])),
        "factors": [f for f in ("repeat", "process") if f in b["factors"]],
        "loose": b["loose"],
        "loose_line": b["loose_line"],
        "ok": not b["loose"],
    }
