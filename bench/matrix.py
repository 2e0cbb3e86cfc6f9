"""The paper's Linux design on this machine, and kit's cost per run against the appendix code.

    .venv/bin/python bench/matrix.py [--n 6000] [--rounds 3] [--sizes 600,6000,20000,60000]
                                     [--skip matrix,versus,sweep] [--out DIR]

1. matrix: the single-stack factors of the paper's Linux design (repeat, threads 1..cores,
   precision, seeds 0-9) at N proteins, `kit run --jobs auto` into a fresh KIT_HOME. Wall time
   against the ideal: the runs' summed CPU seconds (import and stages) divided by the cores;
   and against the cores the runs hold (threads x wall time: a run on every core holds them all,
   however few it keeps busy), the least any schedule can take that never shares a core.
2. versus: `kit run --factor seed --seeds 0,1 --threads 1 --jobs 1` against the paper's
   appendix code (tests/support/paper_reference.py) run for seeds 0 and 1 in one process with one
   BLAS thread, alternating which goes first, ROUNDS times, each in a fresh KIT_HOME holding the
   dataset: each run's wall time (kit's worker measures it; the appendix's reference_run call),
   and the whole command's wall, CPU and peak memory (the largest resident set of the process
   tree), medians and their ratios.
3. sweep: one run per size: time per stage and peak memory, with a plot (sweep.png).
4. overhead: kit's own cost per run at 600 proteins (10 runs, one at a time): from the end of
   one run's work in the worker to the start of the next one's (storing, handing over).

Not a test: the numbers depend on the machine; the ratios are what to compare.
"""

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KIT = str(Path(sys.executable).with_name("kit"))
ONE_THREAD = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
_APPENDIX = """
import json, sys, time, warnings
sys.path.insert(0, sys.argv[2])
from paper_reference import reference_run
from kit.data.dataset import load_dataset
ds = load_dataset("synthetic", int(sys.argv[1]))
warnings.simplefilter("ignore")
walls = []
for seed in (0, 1):
    t = time.perf_counter()
    reference_run(list(ds.seqs), ds.labels, ds.n_train, seed=seed)
    walls.append(time.perf_counter() - t)
print(json.dumps(walls))
"""


def measured(argv, env) -> dict:
    """Wall, CPU (the whole process tree) and peak resident memory of one command."""
    t, began = time.perf_counter(), time.time()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        out.seek(0)
        err.seek(0)
        if status != 0:
            raise SystemExit(f"{argv[:3]} failed: {err.read().decode()[-500:]}")
        # wait4 reports the process and every descendant it waited for; maxrss: the largest
        return {
            "wall": wall,
            "cpu": ru.ru_utime + ru.ru_stime,
            "rss_mib": ru.ru_maxrss / 1024,
            "began": began,
            "ended": time.time(),
            "stdout": out.read().decode(),
        }


def warm_dataset(home: Path, n: int) -> None:
    """Make the synthetic dataset in ``home`` beforehand: both sides then only load it."""
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from kit.data.dataset import load_dataset; "
            "load_dataset('synthetic', int(sys.argv[1]))",
            str(n),
        ],
        env=dict(os.environ, KIT_HOME=str(home)),
        check=True,
    )


def runs_of(home: Path) -> list:
    db = sqlite3.connect(home / "store.sqlite")
    rows = db.execute("SELECT spec, manifest FROM runs ORDER BY rowid")
    return [(json.loads(s), json.loads(m)) for s, m in rows]


def matrix(n: int, tmp: Path) -> None:
    home = tmp / "matrix"
    cores = os.cpu_count() or 1
    argv = [
        KIT,
        "run",
        "--factor",
        "repeat,threads,precision,seed",
        "--seeds",
        "0-9",
        "--threads",
        f"1-{cores}",
        "--n",
        str(n),
        "--yes",
    ]
    warm_dataset(home, n)
    got = measured(argv, dict(os.environ, KIT_HOME=str(home)))
    runs = runs_of(home)
    cpu = sum(t["cpu_s"] for _, m in runs for t in m["timings"].values())
    ideal = cpu / cores
    # a run holds its threads' cores from its start (import included) to its end: no schedule
    # that never shares a core can take less than these core-seconds over the cores
    held = sum(s["threads"] * (m["wall_s"] + m["timings"]["import"]["wall_s"]) for s, m in runs)
    first = min(m["started"] - m["timings"]["import"]["wall_s"] for _, m in runs)
    last = max(m["finished"] for _, m in runs)
    wide_runs = [(s, m) for s, m in runs if s["threads"] >= cores]
    print(
        f"\n1. the paper's Linux design (single-stack factors) at {n} proteins: {len(runs)} runs "
        f"on {cores} cores ({len(wide_runs)} of them on every core)"
    )
    print(
        f"   wall {got['wall']:.1f} s; ideal (summed run CPU {cpu:.1f} s / {cores} cores) "
        f"{ideal:.1f} s; wall / ideal = {got['wall'] / ideal:.2f} (target <= 1.10)"
    )
    print(
        f"   the cores the runs hold (threads x wall, summed: {held:.1f} s) / {cores} cores = "
        f"{held / cores:.1f} s; wall / that = {got['wall'] / (held / cores):.2f}"
    )
    if wide_runs:
        w = sum(m["wall_s"] + m["timings"]["import"]["wall_s"] for _, m in wide_runs)
        c = sum(t["cpu_s"] for _, m in wide_runs for t in m["timings"].values())
        print(
            f"   the {len(wide_runs)} runs on every core held them {w:.1f} s and kept them "
            f"{c / (cores * w):.0%} busy: {w - c / cores:.1f} s of the wall the ideal does not "
            "count"
        )
    print(
        f"   before the first run {first - got['began']:.1f} s (start, dataset, plan, worker); "
        f"after the last {got['ended'] - last:.1f} s (storing it, comparisons, budget)"
    )
    print(
        f"   CPU beyond the runs' stages: {got['cpu'] - cpu:.1f} s (kit's own process: plan, "
        "storing, the analysis beside the runs, budget; the workers' hashing and saving)"
    )


def versus(n: int, rounds: int, tmp: Path) -> None:
    sides = {"kit": [], "appendix": []}
    per_run = {"kit": [], "appendix": []}
    for r in range(rounds):
        order = ("kit", "appendix") if r % 2 == 0 else ("appendix", "kit")
        for side in order:
            home = tmp / f"versus-{side}-{r}"
            warm_dataset(home, n)
            env = dict(os.environ, KIT_HOME=str(home), **ONE_THREAD)
            if side == "kit":
                argv = [
                    KIT,
                    "run",
                    "--factor",
                    "seed",
                    "--seeds",
                    "0,1",
                    "--threads",
                    "1",
                    "--jobs",
                    "1",
                    "--n",
                    str(n),
                ]
                sides[side].append(measured(argv, env))
                per_run[side] += [m["wall_s"] for _, m in runs_of(home)]
            else:
                argv = [sys.executable, "-c", _APPENDIX, str(n), str(ROOT / "tests" / "support")]
                sides[side].append(measured(argv, env))
                per_run[side] += json.loads(sides[side][-1]["stdout"])
    print(
        f"\n2. two runs (seeds 0 and 1) at {n} proteins, 1 thread, one at a time, medians of "
        f"{rounds} alternating rounds"
    )
    print(f"   {'':26}{'kit':>10}{'appendix':>11}{'ratio':>8}")
    k, a = statistics.median(per_run["kit"]), statistics.median(per_run["appendix"])
    print(f"   {'per run: wall':26}{k:8.1f} s  {a:8.1f} s  {k / a:6.2f}")
    for key, label, unit in (
        ("wall", "whole command: wall", "s"),
        ("cpu", "whole command: cpu", "s"),
        ("rss_mib", "peak memory", "MiB"),
    ):
        k = statistics.median(x[key] for x in sides["kit"])
        a = statistics.median(x[key] for x in sides["appendix"])
        print(f"   {label:26}{k:8.1f} {unit:3}{a:8.1f} {unit:3}{k / a:6.2f}")
    print(
        "   per run: the run's own wall time, after the libraries are imported (kit: measured by\n"
        "   the worker, saving and hashing its arrays included; appendix: its reference_run call)"
    )
    print("   targets: per run wall <= 0.70x, peak memory <= 0.40x")


def overhead(n: int, runs: int, tmp: Path) -> None:
    """kit's own cost per run at a small size, one run at a time, in one warm worker: from the
    moment the worker finishes one run's work to the moment it begins the next one's (its
    manifest, the driver verifying and storing the run, handing over the next). And what the
    command spends before the first run and after the last."""
    home = tmp / f"overhead-{n}"
    warm_dataset(home, n)
    argv = [
        KIT,
        "run",
        "--factor",
        "seed",
        "--seeds",
        f"0-{runs - 1}",
        "--threads",
        "1",
        "--jobs",
        "1",
        "--n",
        str(n),
        "--yes",
    ]
    got = measured(argv, dict(os.environ, KIT_HOME=str(home)))
    done = sorted((m for _, m in runs_of(home)), key=lambda m: m["started"])
    gaps = [
        b["started"] - a["finished"] - b["timings"]["import"]["wall_s"]
        for a, b in zip(done, done[1:], strict=False)
    ]
    work = sum(m["finished"] - m["started"] + m["timings"]["import"]["wall_s"] for m in done)
    first = done[0]["started"] - done[0]["timings"]["import"]["wall_s"]
    print(f"\n4. kit's own cost per run at {n} proteins ({runs} runs, 1 thread, one at a time)")
    print(
        f"   command {got['wall']:.1f} s; the runs' own work {work:.1f} s; before the first "
        f"run {first - got['began']:.1f} s (start, dataset, plan, worker), after the last "
        f"{got['ended'] - done[-1]['finished']:.1f} s (storing it, its comparisons, the budget)"
    )
    print(
        f"   per run: {statistics.median(gaps):.3f} s (median; largest {max(gaps):.3f} s) from one "
        "run's end to the next one's start in the worker (target <= 0.3 s)"
    )


def sweep(sizes: list, tmp: Path, out: Path) -> None:
    rows = []
    for n in sizes:
        home = tmp / f"sweep-{n}"
        argv = [
            KIT,
            "run",
            "--factor",
            "seed",
            "--seeds",
            "0,1",
            "--threads",
            "1",
            "--jobs",
            "1",
            "--n",
            str(n),
            "--yes",
        ]
        got = measured(argv, dict(os.environ, KIT_HOME=str(home)))
        spec, m = sorted(runs_of(home), key=lambda sm: sm[0]["seeds"])[0]
        rows.append(
            {
                "n": n,
                "rss_mib": got["rss_mib"],
                "wall": m["wall_s"],
                **{k: v["cpu_s"] for k, v in m["timings"].items()},
            }
        )
    stages = [k for k in rows[0] if k not in ("n", "rss_mib", "wall")]
    print("\n3. one run per size (CPU seconds per stage; peak memory of the plan's process tree)")
    print("   " + f"{'n':>7}" + "".join(f"{s:>11}" for s in stages) + f"{'peak MiB':>10}")
    for r in rows:
        print(
            "   "
            + f"{r['n']:>7}"
            + "".join(f"{r.get(s, 0):>11.2f}" for s in stages)
            + f"{r['rss_mib']:>10.0f}"
        )
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").write_text(json.dumps(rows, indent=1))
    plot_sweep(rows, out / "sweep.png")
    print(f"   plot: {out / 'sweep.png'} (numbers: sweep.json)")


def plot_sweep(rows: list, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stages = [k for k in rows[0] if k not in ("n", "rss_mib", "wall")]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    ns = [r["n"] for r in rows]
    colours = plt.cm.tab20.colors
    for i, s in enumerate(stages):
        a.plot(
            ns,
            [max(r.get(s, 0), 1e-3) for r in rows],
            marker="o",
            label=s,
            color=colours[(2 * i) % 20 if i < 10 else (2 * i + 1) % 20],
        )
    a.set(
        xscale="log",
        yscale="log",
        xlabel="proteins",
        ylabel="CPU seconds",
        title="Time per stage, one run",
    )
    a.legend(fontsize=7, ncol=2)
    b.plot(ns, [r["rss_mib"] for r in rows], marker="o")
    b.set(xscale="log", xlabel="proteins", ylabel="MiB", title="Peak memory (process tree)")
    fig.savefig(path, dpi=100, bbox_inches="tight")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="600,6000,20000,60000")
    ap.add_argument("--skip", default="", help="comma-separated: matrix, versus, overhead, sweep")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out"))
    a = ap.parse_args()
    skip = set(a.skip.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if "matrix" not in skip:
            matrix(a.n, tmp)
        if "versus" not in skip:
            versus(a.n, a.rounds, tmp)
        if "overhead" not in skip:
            overhead(600, 10, tmp)
        if "sweep" not in skip:
            sweep([int(x) for x in a.sizes.split(",")], tmp, Path(a.out))


if __name__ == "__main__":
    main()
