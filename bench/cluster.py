"""The cluster executor's cost: one plan on the local executor and on a 2-worker LocalCluster.

    .venv/bin/python bench/cluster.py [--n 2000] [--runs 20] [--rounds 1]

Each round runs the same plan (`--factor seed`, RUNS distinct runs, 1 thread each, two at a
time) into a fresh KIT_HOME per side, alternating which side goes first: the local executor
(`--jobs 2`: a subprocess per run) and the Dask executor on `local:2` (a task per run: the
dataset sent once, each run's arrays sent back and verified by the driver). The cluster's start
and stop are timed apart from the runs, so the report gives the per-run overhead (target: at
most 5% of a run's wall time), the fixed cost of a cluster, and the end-to-end ratio. Checks
that both sides stored bitwise identical stages.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_SIDE = """
import json, sys, time
t0 = time.perf_counter()
from kit.app import audit as au
from kit.runs.planning.options import PlanOptions
from kit.runs.store import Store
n, runs, side = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ex, opts = None, PlanOptions(threads=(1,), seeds=tuple(range(runs)))
t = time.perf_counter()
if side == "dask":
    from dataclasses import replace
    from kit.runs.executing.dask_executor import DaskExecutor
    ex = DaskExecutor("local:2")
    opts = replace(opts, host=ex.default_host())
start = time.perf_counter() - t
a = au.plan_runs(au.prepare(["seed"], "synthetic", n, opts))
store = Store()
t = time.perf_counter()
au.execute(a, store, jobs=2, executor=ex)
work = time.perf_counter() - t
t = time.perf_counter()
if ex is not None:
    ex.close()
stop = time.perf_counter() - t
stages = sorted((json.dumps({k: v for k, v in r["spec"].items() if k != "host"}, sort_keys=True),
                 st, i["sha256"]) for r in store.runs() for st, i in r["manifest"]["stages"].items())
walls = [r["manifest"]["wall_s"] for r in store.runs()]
print(json.dumps({"start": start, "runs": work, "stop": stop, "stages": stages,
                  "run_wall": sorted(walls)[len(walls) // 2], "total": time.perf_counter() - t0}))
"""


def side(home: Path, n: int, runs: int, which: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _SIDE, str(n), str(runs), which],
                         env=dict(os.environ, KIT_HOME=str(home)), capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=1)
    a = ap.parse_args()
    got = {"local": [], "dask": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for k in (("local", "dask") if r % 2 == 0 else ("dask", "local")):
                got[k].append(side(Path(tmp) / f"{k}-{r}", a.n, a.runs, k))
            assert got["local"][-1]["stages"] == got["dask"][-1]["stages"], \
                "the two executors stored different stages"

    def med(k, key):
        return statistics.median(x[key] for x in got[k])

    at_once = 2
    per_run = (med("dask", "runs") - med("local", "runs")) / (a.runs / at_once)
    run_wall = med("local", "run_wall")
    print(f"{a.runs} runs of {a.n} proteins, 1 thread each, {at_once} at a time, {a.rounds} "
          f"round(s), {os.cpu_count()} cores; stages bitwise identical on both executors")
    print(f"{'':28}{'local --jobs 2':>16}{'Dask local:2':>14}{'ratio':>8}")
    for label, key in (("runs (plan executed)", "runs"), ("whole process", "total")):
        lv, dv = med("local", key), med("dask", key)
        print(f"{label:28}{lv:14.1f} s{dv:12.1f} s{dv / lv:8.3f}")
    print(f"cluster start / stop: {med('dask', 'start'):.1f} s / {med('dask', 'stop'):.1f} s "
          "(once per kit run)")
    print(f"Dask overhead per run: {per_run:+.2f} s = {100 * per_run / run_wall:+.1f}% of a run's "
          f"{run_wall:.1f} s (target <= 5%)")


if __name__ == "__main__":
    main()
