"""Peak memory of kit and its worker around one big output (issue 40: twice its size).

A lab pipeline returns one float64 output of --mib MiB. Measured, each in a process of its own
(its VmHWM, read by the process itself at its end):

  run       `kit run --pipeline big.py --factor repeat --jobs 1 --threads 1 --fresh`: kit, and
            the largest of its workers (ru_maxrss of its waited children: a fresh worker is
            waited for, a warm one is killed)
  export    `kit export --pipeline big.py --arrays`
  hash      the worker's stage hash of the output (kit.worker.dtypes.sha256_of)

and in the same run the old way of each: the export's members saved into memory with np.save
(as `kit export` did up to issue 40), the hash of ``a.tobytes()``. Target: kit's own peak
below 0.25x the output plus a bare kit (it streams what it verifies and writes); the worker and
the hash at most the output plus ~60 MB (the old way: twice the output).

    .venv/bin/python bench/output_memory.py [--mib 400]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_HWM = (
    "import resource, sys\n"
    "def hwm():\n"
    "    return int([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])\n"
)
_KIT = _HWM + (
    "from kit.cli import main\n"
    "rc = main(sys.argv[1:])\n"
    "print(hwm(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(rc)\n"
)
_PIPELINE = (
    "import numpy as np\nSEEDS = ('init',)\n\n\ndef run(seeds):\n"
    "    return {{'x': np.random.default_rng(seeds['init']).random({n})}}\n"
)
_HASH = _HWM + (
    "import hashlib, numpy as np\n"
    "a = np.random.default_rng(0).random(int(sys.argv[2]))\n"
    "base = hwm()\n"
    "if sys.argv[1] == 'old':\n"
    "    hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()\n"
    "else:\n"
    "    from kit.worker.dtypes import sha256_of\n"
    "    sha256_of(a)\n"
    "print(hwm(), base, file=sys.stderr)\n"
)
# the export's arrays as kit wrote them up to issue 40: each np.save'd into memory, then tarred
_OLD_EXPORT = _HWM + (
    "import hashlib, io, tarfile, numpy as np\n"
    "from kit.runs.store import Store\n"
    "st = Store()\n"
    "members = {}\n"
    "for r in st.runs():\n"
    "    for stage, blob in st.stage_blobs(r.id).items():\n"
    "        buf = io.BytesIO()\n"
    "        np.save(buf, st.array(r.id, stage), allow_pickle=False)\n"
    "        members[blob] = buf.getvalue()\n"
    "manifest = {n: hashlib.sha256(d).hexdigest() for n, d in members.items()}\n"
    "with tarfile.open(sys.argv[1], 'w:gz') as tar:\n"
    "    for n, d in members.items():\n"
    "        info = tarfile.TarInfo(n); info.size = len(d); tar.addfile(info, io.BytesIO(d))\n"
    "print(hwm(), 0, file=sys.stderr)\n"
)


def _peak(code: str, *argv, env) -> tuple:
    """(own VmHWM, children's max RSS) in MB of ``code`` run with ``argv``."""
    p = subprocess.run(
        [sys.executable, "-c", code, *map(str, argv)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if p.returncode != 0:
        sys.exit(f"failed: {p.stderr.strip().splitlines()[-3:]}")
    own, kids = p.stderr.strip().splitlines()[-1].split()
    return int(own) / 1024, int(kids) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=400, help="the output's size in MiB")
    args = ap.parse_args()
    n = args.mib * 2**20 // 8
    mb = n * 8 / 1e6
    work = Path(tempfile.mkdtemp(prefix="kit-output-memory-"))
    try:
        env = dict(os.environ, KIT_HOME=str(work / "home"), PYTHONPATH=str(ROOT))
        pipe = work / "big.py"
        pipe.write_text(_PIPELINE.format(n=n))
        bare, _ = _peak(_HWM + "import kit.cli\nprint(hwm(), 0, file=sys.stderr)\n", env=env)
        run, worker = _peak(
            _KIT,
            "run",
            "--pipeline",
            pipe,
            "--factor",
            "repeat",
            "--jobs",
            "1",
            "--threads",
            "1",
            "--fresh",
            "--yes",
            env=env,
        )
        export, _ = _peak(
            _KIT, "export", "--pipeline", pipe, "--arrays", "--out", work / "new.kit.tgz", env=env
        )
        old_export, _ = _peak(_OLD_EXPORT, work / "old.kit.tgz", env=env)
        new_hash, base = _peak(_HASH, "new", n, env=env)
        old_hash, _ = _peak(_HASH, "old", n, env=env)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"one float64 output of {mb:,.0f} MB; a bare kit {bare:,.0f} MB")
    print(
        f"{'':28} {'peak MB':>9} {'old way MB':>11} {'ratio':>6}  (above the bare process, / output)"
    )
    print(f"{'kit run (kit itself)':28} {run:9,.0f} {'':>11} {'':>6}  {(run - bare) / mb:.2f}")
    print(
        f"{'kit run (its worker)':28} {worker:9,.0f} {'':>11} {'':>6}  {(worker - bare) / mb:.2f}"
    )
    print(
        f"{'kit export --arrays':28} {export:9,.0f} {old_export:11,.0f} {export / old_export:6.2f}"
        f"  {(export - bare) / mb:.2f} (old {(old_export - bare) / mb:.2f})"
    )
    print(
        f"{'stage hash (above the array)':28} {new_hash - base:9,.0f} {old_hash - base:11,.0f} "
        f"{(new_hash - base) / max(old_hash - base, 1):6.2f}"
    )


if __name__ == "__main__":
    main()
