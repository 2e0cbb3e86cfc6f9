"""Clustering a dataset's proteins with MMseqs2 on one core: kit against the bare command.

    .venv/bin/python bench/homology.py [--n 6000] [--dataset synthetic]

Runs `kit.data.homology.clustering` (FASTA written, mmseqs run, the table read strictly and
stored) in a fresh KIT_HOME, then the bare `mmseqs easy-cluster` with the same flags on the same
FASTA, alternating which goes first over --rounds; reports wall and child CPU of each, their
ratio, whether the clusterings agree, and the target (kit <= 60 s at 6,000 proteins).
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(fn):
    t, c = time.perf_counter(), child_cpu()
    out = fn()
    return out, time.perf_counter() - t, child_cpu() - c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    n, rounds = args.n, args.rounds
    from kit.data.dataset import make_dataset
    from kit.data.homology import clustering, labels_from_rows
    from kit.data.mmseqs import mmseqs_path
    from kit.data.synthetic import generate

    ds = make_dataset("bench", "synthetic", *generate(n))
    binary = mmseqs_path()
    kit_t, bare_t, agree = [], [], True
    for r in range(rounds):

        def ours():
            os.environ["KIT_HOME"] = tempfile.mkdtemp(prefix="kit-bench-")
            return clustering(ds)

        def bare():
            d = Path(tempfile.mkdtemp(prefix="mmseqs-bench-"))
            (d / "in.fa").write_text("".join(f">{i}\n{s}\n" for i, s in enumerate(ds.seqs)))
            subprocess.run(
                [
                    str(binary),
                    "easy-cluster",
                    "in.fa",
                    "out",
                    "tmp",
                    "--min-seq-id",
                    "0.3",
                    "-c",
                    "0.8",
                    "--cov-mode",
                    "0",
                    "--threads",
                    "1",
                    "-v",
                    "1",
                ],
                cwd=d,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            rows = [tuple(x.split("\t")) for x in (d / "out_cluster.tsv").read_text().splitlines()]
            return labels_from_rows(rows, ds.n)

        order = [("kit", ours), ("bare", bare)][:: 1 if r % 2 == 0 else -1]
        got = {}
        for name, fn in order:
            out, wall, cpu = timed(fn)
            got[name] = out.labels if name == "kit" else out
            (kit_t if name == "kit" else bare_t).append((wall, cpu))
        agree &= got["kit"] == got["bare"]
    kw, kc = min(kit_t)
    bw, bc = min(bare_t)
    c = clustering(ds).summary()
    print(f"n = {n}; {c['tool']} at binary {binary}; one thread; best of {rounds}")
    print(f"kit clustering():      wall {kw:6.1f} s, mmseqs CPU {kc:6.1f} s")
    print(f"bare mmseqs (baseline): wall {bw:6.1f} s, mmseqs CPU {bc:6.1f} s")
    print(
        f"ratio kit/bare wall {kw / bw:.2f}; clusterings identical: {agree}; "
        f"{c['clusters']:,} clusters, largest {c['largest']}, test with a train homolog "
        f"{c['test_with_train_homolog']:.3f}"
    )
    print(f"target kit <= 60 s at 6,000 proteins: {'met' if kw <= 60 else 'NOT met'} ({kw:.1f} s)")


if __name__ == "__main__":
    main()
