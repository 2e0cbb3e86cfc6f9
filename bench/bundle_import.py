"""Import time and peak memory of `kit import` on the largest legitimate bundle.json and on bombs.

A store of 20 runs (hand-made arrays, stored by kit's own put_run, manifests with a worker's
~80 packages) is exported by `kit export`; its bundle.json is then grown, as `kit export` would
write it for more runs, to RUNS replicate runs (each spec's replicate changed, its id recomputed,
a repeat pair each): a hashes-only bundle whose bundle.json is close to the 32 MiB cap. The bombs
are forgeries of the same bundle (issue 37, item 5):

  string   the host's name one 30 MiB string (a field bounded to 256 characters)
  strings  one run's manifest outputs 5 M two-letter strings (a list bounded to 1,024)
  deep     a run's manifest torch entry 100,000 '[' deep

Each `kit import` runs in a fresh process and KIT_HOME (its peak is its own VmHWM). Baseline, in
the same run: a plain ``json.loads`` of the same bundle.json in a fresh process (what parsing it
costs at least), and a bare ``import kit.cli``. ``--tree DIR`` imports with the kit of another
checkout (a worktree of an earlier commit: the "before" figures).

    .venv/bin/python bench/bundle_import.py [--runs 3000] [--tree DIR] [--only legit,string]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kit.core.spec import RunSpec, seeds  # noqa: E402
from kit.runs.store import Store, array_sha256  # noqa: E402

_PACKAGES = {f"package-{i:02d}": f"1.{i}.0" for i in range(80)}
_PEAK = (
    "import sys, time\nt = time.perf_counter()\n{body}\n"
    "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
    "sys.stderr.write('\\nPEAK %d %.3f' % (int(hwm.split()[1]), time.perf_counter() - t))\n"
    "sys.exit(rc)"
)
# the clock starts once kit's import modules are loaded: startup (~1 s here) is not parsing
_IMPORT = (
    "from kit.cli import main\nimport kit.app.bundle\nt = time.perf_counter()\n"
    "rc = main(['import', sys.argv[1]])"
)
# verify only (kit.app.bundle.read: decode and every check, no store): what parsing costs kit
_READ = (
    "from kit.app.bundle import read\nfrom kit.core.errors import KitError\n"
    "t = time.perf_counter()\ntry:\n    read(sys.argv[1])\n    rc = 0\n"
    "except KitError:\n    rc = 1"
)
_LOADS = (
    "import json\ntry:\n    json.loads(open(sys.argv[1], 'rb').read())\n"
    "except RecursionError:\n    pass\nrc = 0"
)
_BARE = "import kit.cli\nrc = 0"


# a small run's stages (60 proteins, 20 of them test), shaped as analysis combines them
_SHAPES = {
    "kmer.data": (5,),
    "kmer.indices": (5,),
    "kmer.indptr": (2,),
    "tfidf.data": (5,),
    "tfidf.indices": (5,),
    "tfidf.indptr": (2,),
    "svd_rand": (60, 8),
    "svd_rand.sv": (8,),
    "svd_arpack": (60, 8),
    "svd_arpack.sv": (8,),
    "kmeans": (60,),
    "kmeans.inertia": (1,),
    "knn": (60, 10),
    "y_test": (20,),
    "lr": (20,),
    "mlp": (20,),
    "hgb": (20,),
    "rf": (20,),
}


def _env() -> dict:
    return {
        "python": "3.12.1",
        "implementation": "CPython",
        "machine": "x86_64",
        "os": "linux",
        "cpu": "bench cpu",
        "host": "lab",
        "packages": _PACKAGES,
        "threadpools": [
            {
                "user_api": "blas",
                "internal_api": "openblas",
                "num_threads": 1,
                "version": "0.3.27",
                "architecture": "Haswell",
            }
        ],
        "env": {"OMP_NUM_THREADS": "1"},
    }


def _store(home: Path, n: int = 20) -> None:
    st = Store(home)
    rng = np.random.default_rng(0)
    for s in range(n):
        spec = RunSpec(dataset="d" * 64, stack="host", stack_id="s" * 64, seeds=seeds(s))
        out = home / f"out{s}"
        out.mkdir()
        stages = {}
        for name, shape in _SHAPES.items():
            a = (
                rng.random(shape)
                if name not in ("kmeans", "knn", "y_test")
                else rng.integers(0, 3, shape)
            )
            np.save(out / f"{name}.npy", a)
            stages[name] = {"sha256": array_sha256(a), "dtype": a.dtype.str, "shape": list(a.shape)}
        st.put_run(
            spec,
            out,
            {
                "stages": stages,
                "timings": {},
                "wall_s": 1.0,
                "env": _env(),
                "seeds": spec.seed_dict,
                "spec": json.loads(spec.to_json()),
            },
        )
    st.close()


def _write(body: bytes, out: Path) -> Path:
    man = json.dumps(
        {"bundle.json": {"sha256": hashlib.sha256(body).hexdigest(), "size": len(body)}}
    ).encode()
    with tarfile.open(out, "w:gz", compresslevel=6) as t:
        for name, data in (("MANIFEST.json", man), ("bundle.json", body)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return out


def _grown(doc: dict, runs: int) -> dict:
    """``doc`` with ``runs`` runs: replicates of its first, ids recomputed, a repeat pair each."""
    first = doc["runs"][0]
    out = []
    for k in range(runs):
        r = json.loads(json.dumps(first))
        r["spec"]["replicate"] = k
        r["manifest"]["spec"] = dict(r["spec"])
        r["id"] = hashlib.sha256(
            json.dumps(r["spec"], sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
        out.append(r)
    pairs = [
        {"factor": "repeat", "level": "", "a": out[0]["id"], "b": r["id"], "label": "run twice"}
        for r in out[1:]
    ]
    return {**doc, "arrays": False, "runs": out, "pairs": pairs}


def _bombs(doc: dict) -> dict:
    def edit(change):
        d = json.loads(json.dumps(doc))
        change(d)
        return json.dumps(d).encode()

    deep = b"[" * 100_000 + b"]" * 100_000
    return {
        "string": edit(lambda d: d["host"].update(name="a" * 30 * 2**20)),
        "strings": edit(lambda d: d["runs"][0]["manifest"].update(outputs=["ab"] * 5_000_000)),
        "deep": edit(lambda d: d["runs"][0]["manifest"]["env"].update(torch={"x": "DEEP"})).replace(
            b'"DEEP"', deep
        ),
    }


def _run(code: str, arg: Path, tree: Path, home: Path) -> tuple:
    """(exit code, peak MB, seconds, last stderr line) of ``code`` in a fresh process."""
    p = subprocess.run(
        [sys.executable, "-c", _PEAK.format(body=code), str(arg)],
        cwd=tree,
        env={**os.environ, "KIT_HOME": str(home)},
        capture_output=True,
        text=True,
    )
    m = re.search(r"\nPEAK (\d+) ([\d.]+)$", p.stderr)
    err = p.stderr[: m.start()] if m else p.stderr
    last = (err.strip().splitlines() or [""])[-1][:160]
    if not m:
        return p.returncode, float("nan"), float("nan"), last
    return p.returncode, int(m.group(1)) / 1024, float(m.group(2)), last


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3000)
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose kit imports")
    ap.add_argument("--only", default="legit,string,strings,deep")
    args = ap.parse_args()
    only = args.only.split(",")
    with tempfile.TemporaryDirectory(prefix="bundle-import-") as tmp:
        tmp = Path(tmp)
        os.environ["KIT_HOME"] = str(tmp / "lab")
        _store(tmp / "lab")
        from kit.cli import main as kit

        assert kit(["export", "--out", str(tmp / "lab.kit")]) == 0
        with tarfile.open(tmp / "lab.kit") as t:
            doc = json.loads(t.extractfile("bundle.json").read())
        body = json.dumps(_grown(doc, args.runs), sort_keys=True).encode()
        cases = {"legit": body, **_bombs(doc)}  # bombs of the 20 runs: under the 32 MiB cap
        code, bare, _, _ = _run(_BARE, tmp, args.tree, tmp / "bare")
        print(
            f"tree {args.tree}; bare `import kit.cli` {bare:.0f} MB; legitimate bundle.json "
            f"{len(body) / 2**20:.1f} MiB, {args.runs} runs"
        )
        print(
            f"{'case':8} {'body MiB':>8} {'file KB':>8} {'loads MB':>9} {'loads s':>8} "
            f"{'read MB':>8} {'read s':>7} {'import MB':>10} {'import s':>9} {'MB/loads':>9} "
            f"{'read s/loads':>12}  exit, says"
        )
        for name, data in cases.items():
            if name not in only:
                continue
            raw = tmp / f"{name}.json"
            raw.write_bytes(data)
            bundle = _write(data, tmp / f"{name}.kit")
            _, lmb, ls, _ = _run(_LOADS, raw, args.tree, tmp / "loads")
            _, rmb, rs, _ = _run(_READ, bundle, args.tree, tmp / f"read-{name}")
            rc, mb, s, says = _run(_IMPORT, bundle, args.tree, tmp / f"home-{name}")
            print(
                f"{name:8} {len(data) / 2**20:8.1f} {bundle.stat().st_size / 1e3:8.0f} "
                f"{lmb:9.0f} {ls:8.2f} {rmb:8.0f} {rs:7.2f} {mb:10.0f} {s:9.2f} "
                f"{mb / lmb:9.2f} {rs / max(ls, 1e-3):12.2f}  {rc}, "
                f"{says.split('.kit: ', 1)[-1][:100]}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
