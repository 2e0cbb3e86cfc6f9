"""The cluster bootstrap's time against the protein bootstrap's, for the twelve verdicts, in one run.

    .venv/bin/python bench/cluster_bootstrap.py [--n 2000] [--rounds 5] [--mean-size 2.5]

Both bootstraps score the four models' test probabilities of ``--n`` proteins (2,000 resamples,
the twelve verdicts); the clustering has geometric cluster sizes of mean ``--mean-size``, its
members scattered through the test order. Measured cold (the resampling weights drawn afresh,
as the first run of a dataset pays) and warm (weights cached, as every later run of the
dataset), alternating which goes first; the median of the rounds. Target: cluster / protein
<= 2. Also checks that a clustering of singletons gives the protein bootstrap's verdicts.
Not a test: timings vary with the machine; the ratios are what to compare.
"""

import argparse
import time

import numpy as np

from kit.analysis import cluster_bootstrap as cb
from kit.analysis import verdicts as vd


def clear():
    for f in (vd.resample_weights, vd._by_case, vd._counts_by_case, cb._by_case):
        f.cache_clear()


def timed(fn, cold):
    if cold:
        clear()
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--mean-size", type=float, default=2.5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = args.n
    y = (rng.random(n) < 0.4).astype(np.int64)
    probs = {m: np.clip(y * 0.3 + rng.random(n) * 0.7, 0, 1) for m in vd.MODELS}
    sizes = rng.geometric(1 / args.mean_size, n)
    labels = rng.permutation(np.repeat(np.arange(n), sizes)[:n])
    k = len(np.unique(labels))
    assert cb.cluster_bootstrap(probs, y, np.arange(n)) == vd.bootstrap(probs, y)
    protein = lambda: vd.bootstrap(probs, y)  # noqa: E731
    cluster = lambda: cb.cluster_bootstrap(probs, y, labels)  # noqa: E731
    rows = []
    for cold in (True, False):
        tp, tc = [], []
        for r in range(args.rounds):
            order = ((protein, tp), (cluster, tc)) if r % 2 == 0 else ((cluster, tc), (protein, tp))
            for fn, out in order:
                if not cold:
                    fn()  # its weights cached
                out.append(timed(fn, cold))
        rows.append(("cold" if cold else "warm", np.median(tp), np.median(tc)))
    print(
        f"n = {n} test proteins in {k} clusters (largest {np.bincount(labels).max()}); "
        f"{vd.RESAMPLES} resamples, twelve verdicts; median of {args.rounds} rounds; "
        "singletons reproduce the protein bootstrap: True"
    )
    print(f"{'weights':8} {'protein s':>10} {'cluster s':>10} {'ratio':>6}  target <= 2")
    for name, tp, tc in rows:
        print(f"{name:8} {tp:10.3f} {tc:10.3f} {tc / tp:6.2f}")


if __name__ == "__main__":
    main()
