"""Peak memory of `kit data import` on three inputs, against 2x the data it keeps + 300 MB.

The inputs of issue 24, generated in a temporary folder: only newlines; ASCII rows with one emoji
in a sequence near the end; a valid TSV (accession, sequence of 60-700 standard residues, label,
organism); the worst case for Python's per-string cost, a valid TSV of tiny rows (60-62
residues). Each `kit data import` runs in its own process under a fresh KIT_HOME; its peak RSS
(ru_maxrss of that child) is reported against the bound 2 x (bytes of the dataset file it stored,
0 when it refused the file) + 300 MB, and against a bare `python -m kit --help` measured in the
same run. Target: every ratio to the bound <= 1.

    .venv/bin/python bench/import_memory.py            # 100 MiB each, about a minute
    .venv/bin/python bench/import_memory.py --full     # 500 MiB / 500 MiB / 342 MB / 500 MiB
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

MIB = 2**20
ROOT = Path(__file__).resolve().parent.parent
AA = "ACDEFGHIKLMNPQRSTVWY"
ORGS = ("human", "mouse", "yeast", "E. coli", "fly", "worm")


def _rows(size: int, emoji_at: float | None = None, lengths=(60, 700)):
    """Valid TSV rows summing to about ``size`` bytes; one emoji in a sequence if asked."""
    rng = random.Random(20261005)
    out, n, i = [b"accession\tsequence\tlabel\torganism\n"], 0, 0
    pool = "".join(rng.choice(AA) for _ in range(1 << 16))
    while n < size:
        k = rng.randint(*lengths)
        at = rng.randrange(len(pool) - k)
        seq = pool[at : at + k]
        if emoji_at is not None and n >= size * emoji_at:
            seq, emoji_at = seq[:30] + "\U0001f600" + seq[31:], None
        line = f"B{i:08d}\t{seq}\t{i % 2}\t{ORGS[i % len(ORGS)]}\n".encode()
        out.append(line)
        n, i = n + len(line), i + 1
        if len(out) >= 4096:
            yield b"".join(out)
            out = []
    yield b"".join(out)


def make_input(folder: Path, key: str, size: int) -> Path:
    path = folder / f"{key}.tsv"
    with open(path, "wb") as f:
        if key == "newlines":
            while size:
                f.write(b"\n" * min(size, 16 * MIB))
                size -= min(size, 16 * MIB)
        else:
            lengths = (60, 62) if key == "tiny" else (60, 700)
            for block in _rows(size, 0.9 if key == "emoji" else None, lengths):
                f.write(block)
    return path


_MEASURE = """
import resource, subprocess, sys, time
t = time.monotonic()
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, p.returncode,
      round(time.monotonic() - t, 2), repr((p.stdout + p.stderr).strip()[-200:]))
"""


def peak(cmd: list, env: dict) -> tuple:
    """(peak RSS bytes, exit status, seconds, last output) of ``cmd`` in its own process."""
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, *cmd], env=env, capture_output=True, text=True, check=True
    ).stdout.split(" ", 3)
    return int(out[0]), int(out[1]), float(out[2]), eval(out[3])  # noqa: S307 - our own repr


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=float, default=100, help="size of each input in MiB")
    ap.add_argument(
        "--full", action="store_true", help="issue 24's sizes: 500/500 MiB, 342 MB; tiny 500 MiB"
    )
    ap.add_argument(
        "--only",
        choices=("newlines", "emoji", "valid", "tiny"),
        action="append",
        help="measure only these inputs (repeatable)",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    size = int(args.mib * MIB)
    sizes = (
        {"newlines": 500 * MIB, "emoji": 500 * MIB, "valid": 342 * 10**6, "tiny": 500 * MIB}
        if args.full
        else {"newlines": size, "emoji": size, "valid": size, "tiny": size}
    )
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPATH=str(ROOT), KIT_IMPORT_MAX_MIB="2048")
        home = Path(tmp) / "home"
        env["KIT_HOME"] = str(home)
        base = peak([sys.executable, "-m", "kit", "--help"], env)[0]
        for key in args.only or sizes:
            path = make_input(Path(tmp), key, sizes[key])  # one at a time: a modest disk
            rss, rc, secs, said = peak(
                [
                    sys.executable,
                    "-m",
                    "kit",
                    "data",
                    "import",
                    str(path),
                    "--name",
                    f"bench-{key}",
                ],
                env,
            )
            stored = home / "datasets" / f"bench-{key}.json"
            kept = stored.stat().st_size if stored.exists() else 0
            bound = 2 * kept + 300 * 10**6
            results.append(
                {
                    "input": key,
                    "file_mb": round(path.stat().st_size / 1e6, 1),
                    "exit": rc,
                    "seconds": secs,
                    "kept_mb": round(kept / 1e6, 1),
                    "peak_mb": round(rss / 1e6, 1),
                    "bound_mb": round(bound / 1e6, 1),
                    "ratio_to_bound": round(rss / bound, 3),
                    "ratio_to_bare_kit": round(rss / base, 2),
                    "said": said[-160:],
                }
            )
            path.unlink()
    if args.json:
        print(json.dumps({"bare_kit_mb": round(base / 1e6, 1), "results": results}, indent=1))
    else:
        print(f"bare `python -m kit --help`: {base / 1e6:.0f} MB peak")
        for r in results:
            print(
                f"{r['input']:>9}: {r['file_mb']:7.1f} MB file, exit {r['exit']}, "
                f"{r['seconds']:6.1f} s, kept {r['kept_mb']:6.1f} MB, peak {r['peak_mb']:7.1f} MB"
                f" = {r['ratio_to_bound']:.2f} x bound ({r['bound_mb']:.0f} MB)\n"
                f"{'':>11}{r['said']}"
            )
    return 0 if all(r["ratio_to_bound"] <= 1 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
