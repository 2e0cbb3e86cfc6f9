"""The cluster executor's cost: the local executor against a 2-worker LocalCluster, and the driver's
own cost per run, extrapolated to a large plan.

    .venv/bin/python bench/cluster.py [--n 2000] [--runs 20] [--rounds 1]
        [--sizes 600,6000] [--scale-runs 40,8] [--plan 10000] [--nodes 100] [--node-cores 32]
        [--baseline DIR] [--scale-rounds 1] [--save FILE]

Comparison: each round runs the same plan (`--factor seed`, RUNS distinct runs, 1 thread each,
two at a time) into a fresh KIT_HOME per side, alternating which side goes first: the local
executor (`--jobs 2`: a subprocess per run) and the Dask executor on `local:2` (a task per run:
the dataset sent once per node, each run's arrays sent back and verified by the driver). The cluster's
start and stop are timed apart from the runs, so the report gives the per-run overhead (target:
at most 5% of a run's wall time), the fixed cost of a cluster, and the end-to-end ratio. Checks
that both sides stored bitwise identical stages.

Scale: the same Dask plan at each of SIZES proteins (SCALE_RUNS runs each), measuring the driver
process alone (`kit run`'s process: on local:2 and dask-jobqueue it also hosts Dask's scheduler):
its CPU (RUSAGE_SELF: the Dask workers are its child processes and are not in it, checked), split
by wrapping Store.put_run, DaskExecutor.run and the audit's background analysis with a per-thread
CPU clock; its memory; the bytes that come back per run. From these, what a plan of PLAN runs on
NODES nodes of NODE_CORES cores costs the driver, each derivation printed beside its number.
``--runs 0`` leaves the comparison out (the scale measurement alone).

Baseline: ``--baseline DIR`` (a checkout of another commit, e.g. a git worktree) measures the
driver of DIR's kit beside this one's at each size, SCALE_ROUNDS times each, alternating which
goes first, and prints their CPU per run side by side (medians) with the ratio: a before/after
in the same run, as the machine's other load changes.
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
import json, pickle, resource, sys, threading, time
t0 = time.perf_counter()
import psutil
from kit.app import audit as au
from kit.app.ahead import Ahead
from kit.runs.planning.options import PlanOptions
from kit.runs.store import Store
n, runs, side = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
IDLE = 3.0 if side == "dask" else 0.0
me, cpu, back, rss, lock = psutil.Process(), {"store": 0.0, "executor": 0.0, "ahead": 0.0}, [], [], threading.Lock()

def timed(key, f):  # CPU of the calling thread only: the plan's other threads run beside it
    def wrapped(*args, **kw):
        t = time.thread_time()
        try:
            out = f(*args, **kw)
        finally:
            with lock:
                cpu[key] += time.thread_time() - t
        if key == "executor":  # what came back from the node: its arrays (in args[4]) and manifest
            back.append(sum(p.stat().st_size for p in args[4].iterdir()) + len(json.dumps(out)))
        if key == "store":
            rss.append(me.memory_info().rss)
        return out
    return wrapped

def threads():
    names = {t.native_id: t.name for t in threading.enumerate()}
    return {t.id: (names.get(t.id, "?"), t.user_time + t.system_time) for t in me.threads()}

def kids():  # the Dask workers (this process's children) with the run processes they waited for
    s = 0.0
    for p in me.children(recursive=True):
        try:
            c = p.cpu_times()
            s += c.user + c.system + c.children_user + c.children_system
        except psutil.NoSuchProcess:
            pass
    return s

def ru(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime

Store.put_run = timed("store", Store.put_run)
Ahead._analyse = timed("ahead", Ahead._analyse)
ex, opts = None, PlanOptions(threads=(1,), seeds=tuple(range(runs)))
t = time.perf_counter()
if side == "dask":
    from dataclasses import replace
    from kit.runs.executing.dask_executor import DaskExecutor
    DaskExecutor.run = timed("executor", DaskExecutor.run)
    ex = DaskExecutor("local:2")
    opts = replace(opts, host=ex.default_host())
start = time.perf_counter() - t
a = au.plan_runs(au.prepare(["seed"], "synthetic", n, opts))
store = Store()
rss0, th0, k0, c0 = me.memory_info().rss, threads(), kids(), ru(resource.RUSAGE_CHILDREN)
s0, p0, t = ru(resource.RUSAGE_SELF), time.process_time(), time.perf_counter()
au.execute(a, store, jobs=2, executor=ex)
work = time.perf_counter() - t
p1, s1 = time.process_time(), ru(resource.RUSAGE_SELF)
rss1, th1, k1 = me.memory_info().rss, threads(), kids()
kid_names = [" ".join(p.cmdline()) for p in me.children()]
time.sleep(IDLE)  # the event loop's own pace (heartbeats, monitors), apart from the runs
th2 = threads()
t = time.perf_counter()
if ex is not None:
    ex.close()
stop = time.perf_counter() - t
loops, idle = {}, 0.0
for tid, (name, c) in th1.items():  # threads alive at the end: Dask's event loop above all
    loops[name] = loops.get(name, 0.0) + c - th0.get(tid, (name, 0.0))[1]
    if name != "MainThread":
        idle += th2.get(tid, (name, c))[1] - c
done = store.runs()
stages = sorted((json.dumps({k: v for k, v in r.to_json()["spec"].items() if k != "host"},
                            sort_keys=True), st, i.sha256) for r in done for st, i in r.stages.items())
walls = sorted(r.manifest["wall_s"] for r in done)
stored = [sum(store.blob_path(b).stat().st_size for b in store.stage_blobs(r.id).values()) for r in done]
first = done[0].id if done else None
stage_bytes = {st: store.blob_path(b).stat().st_size for st, b in store.stage_blobs(first).items()}
blob_total = sum(p.stat().st_size for p in store.blobs.files().values())
print(json.dumps({"stage_bytes": stage_bytes, "blob_total": blob_total, "start": start,
                  "runs": work, "stop": stop, "stages": stages, "n_runs": len(done),
                  "run_wall": walls[len(walls) // 2], "total": time.perf_counter() - t0,
                  "cpu": p1 - p0, "ru_self": s1 - s0, "parts": cpu, "threads": loops,
                  "kids": k1 - k0, "kid_names": kid_names, "idle": idle / IDLE if IDLE else 0.0,
                  "ru_children": ru(resource.RUSAGE_CHILDREN) - c0,
                  "rss0": rss0, "rss1": rss1, "rss": rss, "maxrss": resource.getrusage(
                      resource.RUSAGE_SELF).ru_maxrss * 1024, "back": back, "stored": stored,
                  "dataset": len(pickle.dumps(a.dataset, protocol=5))}))
"""


def side(home: Path, n: int, runs: int, which: str, tree: str | None = None) -> dict:
    """One side in a fresh process; ``tree``: another checkout's kit instead of this one's (its
    folder first on the path and the working directory, so its workers import it too)."""
    env = dict(os.environ, KIT_HOME=str(home))
    if tree:
        env["PYTHONPATH"] = tree
    out = subprocess.run(
        [sys.executable, "-c", _SIDE, str(n), str(runs), which],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
    )
    if out.returncode:
        sys.exit(f"the {which} side{' of ' + tree if tree else ''} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def compare(a, tmp: Path) -> dict:
    """The local executor against Dask local:2 on one plan; returns the Dask side's last round."""
    got = {"local": [], "dask": []}
    for r in range(a.rounds):
        for k in ("local", "dask") if r % 2 == 0 else ("dask", "local"):
            got[k].append(side(tmp / f"{k}-{r}", a.n, a.runs, k))
        assert got["local"][-1]["stages"] == got["dask"][-1]["stages"], (
            "the two executors stored different stages"
        )

    def med(k, key):
        return statistics.median(x[key] for x in got[k])

    at_once = 2
    per_run = (med("dask", "runs") - med("local", "runs")) / (a.runs / at_once)
    run_wall = med("local", "run_wall")
    print(
        f"{a.runs} runs of {a.n} proteins, 1 thread each, {at_once} at a time, {a.rounds} "
        f"round(s), {os.cpu_count()} cores; stages bitwise identical on both executors"
    )
    print(f"{'':28}{'local --jobs 2':>16}{'Dask local:2':>14}{'ratio':>8}")
    for label, key in (("runs (plan executed)", "runs"), ("whole process", "total")):
        lv, dv = med("local", key), med("dask", key)
        print(f"{label:28}{lv:14.1f} s{dv:12.1f} s{dv / lv:8.3f}")
    print(
        f"cluster start / stop: {med('dask', 'start'):.1f} s / {med('dask', 'stop'):.1f} s "
        "(once per kit run)"
    )
    print(
        f"Dask overhead per run: {per_run:+.2f} s = {100 * per_run / run_wall:+.1f}% of a run's "
        f"{run_wall:.1f} s (target <= 5%)"
    )
    return got["dask"][-1]


def figures(d: dict) -> dict:
    """Per-run figures of one Dask side, every one measured there or derived from measured ones."""
    k = d["n_runs"]
    loop = sum(c for name, c in d["threads"].items() if name != "MainThread")
    pace = d["idle"] * d["runs"] / k  # the loop's CPU per second when idle, over the plan's wall
    f = {
        "runs": k,
        "slot_s": 2 * d["runs"] / k,
        "run_wall": d["run_wall"],
        "cpu": d["cpu"] / k,
        "store": d["parts"]["store"] / k,
        "executor": d["parts"]["executor"] / k,
        "ahead": d["parts"]["ahead"] / k,
        "loop": loop / k,
        "pace": pace,
        "idle": d["idle"],
        "back": statistics.mean(d["back"]),
        "stored": statistics.mean(d["stored"]),
        "dataset": d["dataset"],
        "rss0": d["rss0"],
        "rss1": d["rss1"],
        "maxrss": d["maxrss"],
    }
    # content-addressed: a stage equal in every run (the k-mers of a seed plan) is stored once
    f["new"] = (d["blob_total"] - d["stored"][0]) / max(1, k - 1)
    f["other"] = f["cpu"] - f["store"] - f["executor"] - f["ahead"] - f["loop"]
    f["cap"] = (1 - f["idle"]) / (f["cpu"] - pace)  # runs/s one core stores beside the loop's pace
    half = len(d["rss"]) // 2  # the RSS after each stored run: its slope over the plan's 2nd half
    f["grow"] = (d["rss"][-1] - d["rss"][half]) / max(1, len(d["rss"]) - 1 - half)
    return f


LINKS = {"1 GbE": 125e6, "10 GbE": 1.25e9}  # nominal line rates (reference, not measured)


def report(sizes: list, figs: list, sides: list, a) -> None:
    cols = "".join(f"{f'{n:,} proteins':>16}" for n in sizes)

    def row(label, vals, how=""):
        print(f"{label:34}" + "".join(f"{v:>16}" for v in vals) + (f"   {how}" if how else ""))

    def mb(x):
        return f"{x / 1e6:,.1f} MB"

    d0 = sides[0]
    print(f"\nThe driver, measured: {'':2}{cols}")
    row("runs measured (Dask local:2)", [f["runs"] for f in figs])
    row("slot time per run", [f"{f['slot_s']:.2f} s" for f in figs], "plan wall x 2 slots / runs")
    row(
        "  of it the run itself", [f"{f['run_wall']:.2f} s" for f in figs], "median manifest wall_s"
    )
    row(
        "driver CPU per run",
        [f"{f['cpu'] * 1e3:.0f} ms" for f in figs],
        "process_time over execute / runs (= RUSAGE_SELF)",
    )
    for key, label in (
        ("store", "  store: Store.put_run"),
        ("executor", "  DaskExecutor.run thread"),
        ("loop", "  Dask event loop"),
        ("pace", "    of it its idle pace"),
        ("ahead", "  analysis ahead"),
        ("other", "  the rest"),
    ):
        row(
            label,
            [f"{f[key] * 1e3:.0f} ms" for f in figs],
            {
                "store": "sha256, moving arrays in, SQLite (thread CPU)",
                "executor": "submit, wait, write the arrays to a temp folder",
                "loop": "client, scheduler, nannies (thread CPU)",
                "pace": "loop CPU/s idle (3 s after the plan) x plan wall / runs",
                "ahead": "kit run's verdicts and comparisons (thread CPU)",
                "other": "= CPU - store, run thread, loop, analysis",
            }[key],
        )
    row(
        "workers' CPU per run (not above)",
        [f"{s['kids'] / f['runs']:.2f} s" for s, f in zip(sides, figs, strict=False)],
        "psutil: the Dask workers + the runs they waited for",
    )
    row("bytes back per run", [mb(f["back"]) for f in figs], "the arrays' .npy + the manifest")
    row("  stored per run", [mb(f["stored"]) for f in figs], "sum of its blob files in the store")
    row(
        "  of it new to the store",
        [mb(f["new"]) for f in figs],
        "(all blob files - the 1st run's) / (runs - 1)",
    )
    row(
        "dataset, sent once",
        [mb(f["dataset"]) for f in figs],
        "pickled, once per node (its first run)",
    )
    row("driver RSS before the plan", [mb(f["rss0"]) for f in figs], "cluster up, dataset loaded")
    row(
        "  after the plan / peak",
        [f"{f['rss1'] / 1e6:,.0f} / {f['maxrss'] / 1e6:,.0f} MB" for f in figs],
        "VmRSS / ru_maxrss",
    )
    row(
        "  growth per run, 2nd half",
        [f"{f['grow'] / 1e6:+.2f} MB" + ("?" if f["runs"] < 8 else "") for f in figs],
        "RSS after each put_run: slope (?: < 8 runs, may hold the first runs' rise)",
    )
    for n, s in zip(sizes, sides, strict=False):
        big = sorted(s["stage_bytes"].items(), key=lambda kv: -kv[1])[:3]
        print(
            f"{n:,} proteins: largest stages "
            + ", ".join(f"{st} {b / 1e6:.1f} MB" for st, b in big)
            + f"; idle event loop {s['idle'] * 1e3:.0f} ms CPU/s"
        )
    gap = max(abs(s["cpu"] - s["ru_self"]) for s in sides)
    reaped = ", ".join(f"{s['ru_children']:.1f}" for s in sides)
    live = ", ".join(f"{s['kids']:.1f}" for s in sides)
    spawned = sum("multiprocessing-fork" in c for c in d0["kid_names"])
    tracker = sum("resource_tracker" in c for c in d0["kid_names"])
    print(
        f"checks: process_time = RUSAGE_SELF to {gap * 1e3:.1f} ms; the driver's child "
        f"processes: {spawned} spawned by the nannies (the Dask workers), {tracker} resource "
        f"tracker, {len(d0['kid_names']) - spawned - tracker} other; their CPU, {live} s read live, is "
        f"in neither; it reaches RUSAGE_CHILDREN once they are reaped at close: {reaped} s"
    )

    P, N, C = a.plan, a.nodes, a.node_cores
    print(f"\n{P:,} runs on {N} nodes of {C} cores, 1-thread runs as fast as here (extrapolated):")
    print(f"{'':34}{cols}")
    rate = [N * C / f["run_wall"] for f in figs]
    row("runs/s the nodes finish", [f"{r:,.0f}" for r in rate], f"{N} x {C} / the run's wall")
    row(
        "  at this slot time instead",
        [f"{N * C / f['slot_s']:,.0f}" for f in figs],
        f"{N} x {C} / slot time (Dask and the driver between runs)",
    )
    row("plan at that rate", [f"{P / r:,.0f} s" for r in rate], f"{P:,} / rate")
    row(
        "driver CPU in all, per-run part",
        [f"{P * (f['cpu'] - f['pace']) / 60:,.0f} min" for f in figs],
        f"{P:,} x (CPU - pace) per run",
    )
    row(
        "runs/s one driver core stores",
        [f"{f['cap']:,.1f}" for f in figs],
        "(1 - idle loop share) / (CPU - pace) per run",
    )
    row(
        "  without the analysis ahead",
        [f"{(1 - f['idle']) / (f['cpu'] - f['pace'] - f['ahead']):,.1f}" for f in figs],
        "the same, CPU - pace - analysis",
    )
    row("  the store alone", [f"{1 / f['store']:,.1f}" for f in figs], "1 / put_run CPU")
    row(
        "nodes one driver keeps busy",
        [f"{f['cap'] * f['run_wall'] / C:,.1f}" for f in figs],
        f"runs/s one core stores x run's wall / {C}",
    )
    row(
        "driver cores busy at that rate",
        [f"{r / f['cap']:,.1f}" for r, f in zip(rate, figs, strict=False)],
        "rate / runs/s one core stores",
    )
    row(
        "bytes through the driver",
        [f"{(P * f['back'] + f['dataset']) / 1e9:,.0f} GB" for f in figs],
        f"{P:,} x bytes back + dataset",
    )
    row(
        "  if only what the store lacks came",
        [f"{P * f['new'] / 1e9:,.0f} GB" for f in figs],
        f"{P:,} x new to the store per run",
    )
    row(
        "store on disk",
        [f"{(f['stored'] + (P - 1) * f['new']) / 1e9:,.0f} GB" for f in figs],
        f"1st run + {P - 1:,} x new per run",
    )
    row(
        "network in at that rate",
        [f"{r * f['back'] / 1e9:,.2f} GB/s" for r, f in zip(rate, figs, strict=False)],
        "rate x bytes back",
    )
    for link, bw in LINKS.items():
        row(
            f"  runs/s a {link} link carries",
            [f"{bw / f['back']:,.1f}" for f in figs],
            f"{bw / 1e6:,.0f} MB/s / bytes back (nominal)",
        )
    row(
        "driver RSS if growth went on",
        [f"{(f['rss1'] + (P - f['runs']) * max(0, f['grow'])) / 1e9:,.1f} GB" for f in figs],
        f"after + {P:,} x growth (linear)",
    )
    for n, r, f in zip(sizes, rate, figs, strict=False):
        caps = {
            "one driver core": f["cap"],
            **{f"a {k} link": bw / f["back"] for k, bw in LINKS.items()},
        }
        first = min(caps, key=caps.get)
        print(
            f"{n:,} proteins: {first} bites first at {caps[first]:,.1f} runs/s, against "
            f"{r:,.0f} runs/s the nodes finish: the plan takes >= {P / min(r, caps[first]) / 60:,.0f} min "
            f"instead of {P / r:,.0f} s"
        )


def against(sizes: list, mine: dict, theirs: dict, tree: str) -> None:
    """This kit's driver beside the baseline's, per size: medians of CPU per run and its parts."""
    print(
        f"\nDriver CPU per run, this kit against {tree} (medians of "
        f"{len(next(iter(mine.values())))} round(s) each, alternating which went first):"
    )
    print(f"{'':24}" + "".join(f"{f'{n:,} proteins':>30}" for n in sizes))
    print(f"{'':24}" + "".join(f"{'before':>10}{'after':>10}{'ratio':>10}" for _ in sizes))
    for key, label in (
        ("cpu", "driver CPU per run"),
        ("store", "  Store.put_run"),
        ("executor", "  DaskExecutor.run"),
        ("loop", "  Dask event loop"),
        ("pace", "    its idle pace"),
        ("ahead", "  analysis ahead"),
        ("other", "  the rest"),
    ):
        cells = ""
        for n in sizes:
            b = statistics.median(figures(d)[key] for d in theirs[n])
            a = statistics.median(figures(d)[key] for d in mine[n])
            cells += f"{b * 1e3:8.1f}ms{a * 1e3:8.1f}ms" + (
                f"{a / b:10.2f}" if b > 0 else f"{'-':>10}"
            )
        print(f"{label:24}{cells}")
    for n in sizes:
        before, after = (
            statistics.mean(figures(d)["back"] for d in runs[n]) / 1e6 for runs in (theirs, mine)
        )
        print(f"{n:,} proteins: bytes back per run {before:.2f} MB before, {after:.2f} MB after")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--sizes", default="600,6000", help="proteins of each scale measurement")
    ap.add_argument("--scale-runs", default="40,8", help="runs at each of --sizes")
    ap.add_argument("--plan", type=int, default=10_000, help="runs of the extrapolated plan")
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--node-cores", type=int, default=32)
    ap.add_argument("--baseline", help="a checkout of another commit: its driver beside this one's")
    ap.add_argument("--scale-rounds", type=int, default=1, help="rounds of each size per kit")
    ap.add_argument("--save", help="a JSON file for every side's raw measurements")
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    counts = [int(x) for x in a.scale_runs.split(",")]
    if len(counts) != len(sizes):
        sys.exit("--scale-runs needs one count per --sizes")
    tree = os.path.abspath(a.baseline) if a.baseline else None
    mine, theirs = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        # its Dask side is one more size measured
        sides = {a.n: compare(a, Path(tmp))} if a.runs else {}
        for n, k in zip(sizes, counts, strict=False):
            for r in range(a.scale_rounds):
                order = (
                    ("mine", "theirs")
                    if (r + len(mine.get(n, []))) % 2 == 0
                    else ("theirs", "mine")
                )
                for who in order if tree else ("mine",):
                    got = side(
                        Path(tmp) / f"scale-{n}-{who}-{r}",
                        n,
                        k,
                        "dask",
                        tree if who == "theirs" else None,
                    )
                    (mine if who == "mine" else theirs).setdefault(n, []).append(got)
            sides[n] = mine[n][-1]
    sizes = sorted(sides)
    report(sizes, [figures(sides[n]) for n in sizes], [sides[n] for n in sizes], a)
    if tree:
        against(sorted(mine), mine, theirs, tree)
    if a.save:
        Path(a.save).write_text(json.dumps({"mine": mine, "theirs": theirs, "tree": tree}))


if __name__ == "__main__":
    main()
