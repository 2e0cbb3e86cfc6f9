"""Container stacks against their venvs: a run's cost with the container's start, a warm
worker's cost per run, and how long an image takes to build and to find built.

    .venv/bin/python bench/containers.py [--n 6000] [--rounds 2] [--stack np1-sk152]

In one KIT_HOME (a fresh one, or $KIT_HOME): the stack's venv and its image are built first (the
build timed, from uv's warm cache, the Debian base bootstrapped too, then the same command again
with nothing to do). Then, alternating which goes first, each round runs `kit run --factor seed`
on N synthetic proteins, one thread, one run at a time, in the venv and in the image: fresh
processes (two runs, --fresh: every run starts its worker, and in the image its container) and
a warm worker: two runs in a worker, then six runs in one worker, so that the cost of one more
run in a warm worker is (T6 - T2) / 4, with the worker's (and the container's) start and kit's
own start taken out. Each round takes new seeds (from --first-seed, random by default: a reused KIT_HOME keeps
an earlier bench's runs), so no run is stored before it is timed. Ratios
are image / venv of the same round's wall times; for fresh runs the whole command is timed, so
the container's start, kit's start and the store are in both.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def kit(home: Path, *argv) -> float:
    """Seconds ``kit ARGV`` took in ``home``; it must succeed."""
    env = dict(os.environ, KIT_HOME=str(home))
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "kit", *argv], env=env, cwd=ROOT, capture_output=True, text=True
    )
    took = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"kit {' '.join(argv)} failed:\n{proc.stderr[-2000:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--stack", default="np1-sk152")
    # a reused KIT_HOME already holds the runs of the seeds an earlier bench took, and a stored
    # run is not run again: each bench starts from seeds of its own (printed, to repeat it)
    ap.add_argument("--first-seed", type=int, default=secrets.randbelow(1 << 20) * 64)
    args = ap.parse_args()
    home = Path(os.environ.get("KIT_HOME") or tempfile.mkdtemp(prefix="kit-bench-ctr-"))
    image = f"{args.stack}@container"
    build = kit(home, "stacks", "build", args.stack, "--container")
    again = kit(home, "stacks", "build", args.stack, "--container")
    print(
        f"build of {image} (venv, base, image; uv's cache warm): {build:.1f} s; "
        f"again with nothing to do: {again:.2f} s"
    )
    kit(home, "data", "list")  # kit's start once, before anything is timed
    fresh, warm = {args.stack: [], image: []}, {args.stack: [], image: []}
    seed = args.first_seed
    print(f"seeds from {seed}")
    for r in range(args.rounds):
        order = [args.stack, image] if r % 2 == 0 else [image, args.stack]
        for stack in order:
            # two fresh runs: a worker (and a container) started for each
            fresh[stack].append(
                kit(
                    home,
                    "run",
                    "--factor",
                    "seed",
                    "--stack",
                    stack,
                    "--n",
                    str(args.n),
                    "--threads",
                    "1",
                    "--jobs",
                    "1",
                    "--fresh",
                    "--seeds",
                    f"{seed}-{seed + 1}",
                    "--yes",
                )
                / 2
            )
        seed += 2
        for stack in order:
            # two runs, then six runs, each in one warm worker (a seed factor needs two seeds):
            # the difference is four runs with every start (kit's, the worker's, the
            # container's) taken out
            two, six = (
                kit(
                    home,
                    "run",
                    "--factor",
                    "seed",
                    "--stack",
                    stack,
                    "--n",
                    str(args.n),
                    "--threads",
                    "1",
                    "--jobs",
                    "1",
                    "--seeds",
                    f"{first}-{first + k - 1}",
                    "--yes",
                )
                for first, k in ((seed, 2), (seed + 2, 6))
            )
            warm[stack].append((six - two) / 4)
            seed += 8
        print(
            f"round {r + 1}: fresh venv {fresh[args.stack][-1]:.2f} s/run, image "
            f"{fresh[image][-1]:.2f} s/run; warm venv {warm[args.stack][-1]:.2f} s/run, "
            f"image {warm[image][-1]:.2f} s/run"
        )
    for what, got in (
        ("fresh (container start included)", fresh),
        ("warm worker, one more run (every start taken out)", warm),
    ):
        ratios = [b / a for a, b in zip(got[args.stack], got[image], strict=False)]
        print(
            f"{what}: image / venv per run = {statistics.median(ratios):.3f} "
            f"(rounds {', '.join(f'{x:.3f}' for x in ratios)}); venv "
            f"{statistics.median(got[args.stack]):.2f} s, image {statistics.median(got[image]):.2f} s"
        )
    print(f"KIT_HOME {home}")


if __name__ == "__main__":
    main()
