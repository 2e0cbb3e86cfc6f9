"""Benchmarks of the engine's two rewrites against the paper's own code, in the same run.

    .venv/bin/python bench/engine.py [--n 6000]

Reports time and peak traced memory of kit's k-mer counting and blocked nearest neighbours as
ratios to the paper's per-protein loop and full n x n similarity matrix, and checks the outputs
are identical. Not a test: timings vary with the machine; the ratios are what to compare.
"""

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from paper_reference import kmer_matrix  # noqa: E402

from kit.data.synthetic import generate  # noqa: E402
from kit.worker.pipeline import kmer_counts, nearest_neighbours  # noqa: E402


def measure(fn, *args, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t)
    tracemalloc.start()
    fn(*args)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, best, peak


def full_neighbours(E, k=10):
    En = E / np.linalg.norm(E, axis=1, keepdims=True)
    S = En @ En.T
    np.fill_diagonal(S, -2)
    return np.argsort(-S, axis=1, kind="stable")[:, :k]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=6000)
    n = ap.parse_args().n
    _, seqs, _, _ = generate(n)
    E = np.random.default_rng(0).normal(size=(n, 64))
    rows = []
    for name, ours, theirs, arg in (
        ("kmer counts", kmer_counts, kmer_matrix, seqs),
        ("10-NN", nearest_neighbours, full_neighbours, E),
    ):
        a, ta, ma = measure(ours, arg)
        b, tb, mb = measure(theirs, arg)
        same = (
            all(np.array_equal(getattr(a, p), getattr(b, p)) for p in ("data", "indices", "indptr"))
            if hasattr(a, "indptr")
            else np.array_equal(a, b)
        )
        rows.append((name, ta, tb, ma, mb, same))
    print(f"n = {n}; baseline = the paper's code, measured in this run")
    print(
        f"{'stage':12} {'kit s':>8} {'paper s':>8} {'time ratio':>10} {'kit MiB':>8} "
        f"{'paper MiB':>9} {'mem ratio':>9}  identical"
    )
    for name, ta, tb, ma, mb, same in rows:
        print(
            f"{name:12} {ta:8.3f} {tb:8.3f} {ta / tb:10.2f} {ma / 2**20:8.1f} {mb / 2**20:9.1f} "
            f"{ma / mb:9.2f}  {same}"
        )


if __name__ == "__main__":
    main()
