"""The cost of verifying every row a reader takes from the store (issue 37 item 6).

A store of RUNS hand-made runs (tests/support/stored.py: real put_run, real manifests; run 0 paired
with each other as a seed pair) is read whole, ROUNDS times, by ``Store.runs()`` (spec, manifest
and stages of each run), ``Store.specs()``, and ``budget()`` (what `kit budget` computes, its
comparisons cached by a first call); the median time of each is printed, with the time per run.
Run it on two commits to compare (PYTHONPATH=<other worktree> runs that kit on the same store):

    .venv/bin/python bench/store_reads.py [--runs 300] [--rounds 30] [--keep DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from stored import arrays, put, spec  # noqa: E402

from kit.core.spec import seeds  # noqa: E402
from kit.runs.store import Store  # noqa: E402


def _store(root: Path, n: int) -> Store:
    st = Store(root / "home")
    from kit.runs.planning.options import Pair

    base = arrays(0, n=20, n_test=10)
    specs = [spec(seeds=seeds(i)) for i in range(n)]
    for s in specs:  # distinct specs, shared arrays: cheap to make, full rows to read
        put(st, root, s, base)
    st.add_pairs(
        [Pair("seed", "", specs[0], s, f"seed 0 vs {i}") for i, s in enumerate(specs[1:], 1)]
    )
    return st


def _median(home: Path, fn, rounds: int) -> float:
    """Median CPU time of ``fn(store)`` (the machine may be shared, and all of it is CPU), each
    round on a store opened afresh, as a command finds it (nothing read and verified yet)."""
    times = []
    for _ in range(rounds):
        st = Store(home)
        t = time.process_time()
        fn(st)
        times.append(time.process_time() - t)
        st.close()
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=300)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--keep", type=Path)
    a = p.parse_args()
    root = a.keep or Path(tempfile.mkdtemp(prefix="store-reads-"))
    root.mkdir(parents=True, exist_ok=True)
    st = _store(root, a.runs) if not (root / "home").exists() else Store(root / "home")
    from kit.analysis.budget import budget

    n = len(st.runs())
    print(f"kit from {Path(budget.__code__.co_filename).parents[2]}")
    t = time.perf_counter()
    budget(st, "d" * 64)  # computes and caches the comparisons
    print(f"budget() first: {time.perf_counter() - t:.2f} s")
    for name, fn, rounds in (
        ("Store.runs()", Store.runs, a.rounds),
        ("Store.specs()", Store.specs, a.rounds),
        ("budget()", lambda s: budget(s, "d" * 64), max(3, a.rounds // 4)),
    ):
        m = _median(root / "home", fn, rounds)
        print(f"{name:14s} {n} runs: {m * 1e3:8.2f} ms  ({m / n * 1e6:6.1f} us per run)")


if __name__ == "__main__":
    main()
