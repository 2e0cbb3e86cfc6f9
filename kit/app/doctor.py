"""Is this machine sane? The null experiment, thread control, and what each stack really has."""

from __future__ import annotations

import json
import subprocess

from ..core.atomic import write_bytes
from ..envs.platforms import Platform
from ..runs.runner import worker_env
from ..core.spec import RunSpec
from ..envs import external
from ..envs.stacks import built_stack, definitions, stack_status, status

# OpenBLAS kernels that mean "this build did not recognise the CPU" on a modern x86_64
_GENERIC_KERNELS = {"prescott", "generic", "core2", "atom"}


def fingerprint(command: tuple, threads: int = 1, what: str = "--fingerprint") -> dict:
    """Run the worker's --fingerprint (or --probe-threads) in an interpreter."""
    spec = RunSpec(dataset="", stack="", stack_id="", threads=threads)
    proc = subprocess.run([*command, "-m", "kit.worker", what], env=worker_env(spec),
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(last)
    return json.loads(proc.stdout)


def problems(fp: dict, expected_blas: str | None, cpu_flags=frozenset()) -> list:
    """One line per surprise in a fingerprint, each with what to do about it."""
    out = []
    pools = [p for p in fp.get("threadpools") or [] if p.get("user_api") == "blas"]
    if fp.get("threadpools") is None:
        out.append("threadpoolctl is not installed: BLAS and thread counts cannot be measured")
    apis = {str(p.get("internal_api")).lower() for p in pools}
    if expected_blas and pools and expected_blas.lower() not in apis:
        out.append(f"expected {expected_blas} but threadpoolctl sees {', '.join(sorted(apis))}")
    for p in pools:
        kernel = str(p.get("architecture") or "").lower()
        if p.get("internal_api") == "openblas" and kernel in _GENERIC_KERNELS and "avx2" in cpu_flags:
            out.append(f"{p.get('owner')}'s OpenBLAS {p.get('version')} runs the generic "
                       f"'{p.get('architecture')}' kernel on an AVX2 CPU (it does not recognise "
                       "this CPU): slower, and its bits differ from a newer OpenBLAS")
    return out


def stack_doctor(names, plat: Platform) -> list:
    """Import each built stack (the catalogue's for this platform and the external ones)."""
    defs, ext = definitions(), external.registry()
    out = []
    for name in names or [n for n, d in defs.items() if plat.key in d.platforms] + list(ext):
        if name in defs:
            stack = built_stack(defs[name], plat)
            command = stack.command if stack else None
            st, why = status(defs[name], plat)
            row = {"name": name, "status": st, "expected_blas": defs[name].blas.get(plat.key),
                   **({"problems": [why]} if st == "broken" else {})}
        else:
            st, why = stack_status(name, plat)
            command = (ext[name]["python"],) if st == "built" else None
            row = {"name": name, "status": st, "expected_blas": None, "external": True,
                   **({"problems": [why]} if why else {})}
        if command:
            try:
                fp = fingerprint(command)
                row.update(measured=fp, command=command,
                           problems=problems(fp, row["expected_blas"], plat.cpu_flags))
                if name in defs:
                    write_bytes(defs[name].venv() / "kit-doctor.json",
                                json.dumps(fp, indent=1).encode())
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                row.update(status="broken", problems=[f"the interpreter does not import: {e}"])
        out.append(row)
    return out


def busy_cores(seconds: float = 0.5) -> float:
    """How many cores other work keeps busy right now (Linux: /proc/stat; elsewhere: load)."""
    import os
    import time

    def sample():
        with open("/proc/stat") as f:
            vals = [int(x) for x in f.readline().split()[1:]]
        return sum(vals), vals[3] + (vals[4] if len(vals) > 4 else 0)  # total, idle + iowait

    try:
        t0, i0 = sample()
        time.sleep(seconds)
        t1, i1 = sample()
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    total = max(t1 - t0, 1)
    return (os.cpu_count() or 1) * (1 - (i1 - i0) / total)


def thread_probe(command: tuple, cores: int, attempts: int = 3) -> dict:
    """CPU/wall of a matrix product at 1 and at all cores: is the thread setting honoured?

    A busy machine cannot show n threads using n cores, so a failed probe is repeated and, if
    other work kept the cores busy meanwhile, reported as inconclusive rather than blamed on
    the stack (``honoured`` is then None).
    """
    out = {}
    for attempt in range(attempts):
        busy = busy_cores()
        one = fingerprint(command, 1, "--probe-threads")
        many = fingerprint(command, cores, "--probe-threads")
        r1, rn = one["cpu_s"] / one["wall_s"], many["cpu_s"] / many["wall_s"]
        honoured = cores < 2 or rn > 1.3 * r1
        out = {"threads": cores, "cpu_per_wall_1": r1, "cpu_per_wall_n": rn, "honoured": honoured,
               "busy_cores": round(busy, 2), "attempts": attempt + 1}
        if honoured:
            return out
    # the other work measured before the last attempt: at least half a core left too little
    # room for n threads to show
    if out["busy_cores"] >= 0.5:
        out["honoured"] = None
    return out


def machine_doctor(plat: Platform, n: int = 200) -> dict:
    """kit doctor: the null experiment, thread control, and each stack's BLAS, with remedies.

    Its runs go to a store of their own (``$KIT_HOME/doctor``), so the user's store and the
    dataset that read commands show by default are never changed by it.
    """
    import os

    from . import audit as au
    from ..analysis.budget import budget
    from ..core.paths import subdir
    from ..runs.plan import PlanOptions
    from ..envs.stacks import host_stack
    from ..runs.store import Store

    store = Store(subdir("doctor"))
    try:
        a = au.prepare(["repeat"], "synthetic", n, PlanOptions(threads=(1,)), plat=plat)
        au.plan_runs(a)
        au.execute(a, store)
        row = next(r for r in budget(store, a.dataset.sha256)["rows"] if r["factor"] == "repeat")
    finally:
        store.close()
    null_ok = row["all_identical"] == row["pairs"]
    problems_out = []
    if not null_ok:
        problems_out.append({"problem": "the null experiment failed: two identical runs differ",
                             "remedy": "a generator is loose or the machine is unstable; check "
                                       "other jobs' interference and report it with `kit export`"})
    cores = os.cpu_count() or 1
    stacks = [{"name": "host", "command": host_stack().command, "expected_blas": None}]
    for r in stack_doctor([], plat):
        if r["status"] == "built":
            stacks.append({"name": r["name"], "command": r["command"],
                           "expected_blas": r["expected_blas"], "doctor": r})
    out_stacks = []
    for s in stacks:
        rep = s.get("doctor") or {"measured": fingerprint(s["command"]), "problems": []}
        if s["name"] == "host":
            rep["problems"] = problems(rep["measured"], None, plat.cpu_flags)
        probe = thread_probe(s["command"], cores)
        if probe["honoured"] is False:
            rep["problems"].append(
                f"the thread setting is not honoured: CPU per wall second {probe['cpu_per_wall_n']:.2f} "
                f"at {cores} threads against {probe['cpu_per_wall_1']:.2f} at 1")
        for p in rep["problems"]:
            problems_out.append({"stack": s["name"], "problem": p, "remedy": _remedy(p)})
        out_stacks.append({"name": s["name"], "threads": probe,
                           "blas": [p for p in rep["measured"].get("threadpools") or []
                                    if p.get("user_api") == "blas"]})
    from ..runs.repair import check_store

    user_store = Store()
    try:
        stored = check_store(user_store, full=False)  # arrays verified since their last change are trusted
    finally:
        user_store.close()
    if not stored["ok"]:
        problems_out.append({"problem": f"the store holds damaged or missing data "
                             f"({len(stored['damaged'])} damaged, {len(stored['missing'])} missing "
                             f"arrays, {len(stored['datasets'])} dataset files, {stored['orphans']} "
                             "orphan files)",
                             "remedy": "`kit store check --repair` drops them; the next `kit run` "
                                       "makes the runs again"})
    busy = [s["name"] for s in out_stacks if s["threads"]["honoured"] is None]
    return {"null_experiment": {"ok": null_ok, "pairs": row["pairs"], "identical": row["all_identical"],
                                "dataset": a.dataset.name},
            "stacks": out_stacks, "problems": problems_out, "store": stored,
            "ok": null_ok and stored["ok"],
            "busy": ({"stacks": busy, "busy_cores": max(s["threads"]["busy_cores"] for s in out_stacks),
                      "cores": cores} if busy else None)}


def _remedy(problem: str) -> str:
    if "generic" in problem:
        return ("pin a numpy whose OpenBLAS knows this CPU (numpy 2.x), or set OPENBLAS_CORETYPE "
                "to the right kernel, and record it: kernels change bits")
    if "not honoured" in problem:
        return ("the BLAS ignores OMP/OPENBLAS/MKL_NUM_THREADS here (or the matrices are too small "
                "to split): a threads factor measured here shows nothing; do not read it as stability")
    if "expected" in problem:
        return "rebuild the stack (`kit stacks build`) and check its lock file's numpy/scipy wheels"
    if "threadpoolctl" in problem:
        return "add threadpoolctl to the stack's lock file"
    return "see docs/onboarding.md"
