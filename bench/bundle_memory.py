"""Peak memory of `kit import` on a real bundle and on forgeries of it (issue 24's table).

A store of runs shaped like a 6,000-protein run's (hand-made arrays, stored by kit's own
put_run) is exported by `kit export --arrays`; the bundle is then forged consistently (runs'
records, blob keys, manifests and MANIFEST.json rewritten, as an attacker would):

  zeros   one stage replaced by --zeros-mib MiB of zeros (default 256; --full: 1024)
  manifest MANIFEST.json of 255 MiB: [0,0,...]
  padded  bundle.json padded with 60 M zeros
  deep    MANIFEST.json of 200,000 '['

Each `kit import` runs in a fresh process and KIT_HOME; its peak RSS (VmHWM) is reported as a
ratio against the legitimate import's, measured in the same run. Target: every peak below
2x the largest array the real bundle holds + 300 MB; forgeries refused with one line (the
zeros stage is refused above KIT_BUNDLE_MAX_ARRAY_MIB, default 256, and streamed below it).

    .venv/bin/python bench/bundle_memory.py [--zeros-mib 256 | --full] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
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
from kit.runs.store.blobs import blob_key  # noqa: E402


def _arrays(seed: int, n: int = 6000, n_test: int = 1998, nnz: int = 1_800_000) -> dict:
    """Stages the size a 6,000-protein run writes (k-mer and TF-IDF data are the largest)."""
    rng = np.random.default_rng(seed)
    y = (np.arange(n_test) % 3 == 0).astype(np.int64)
    out = {
        "kmer.data": rng.random(nnz),
        "kmer.indices": rng.integers(0, 8000, nnz, dtype=np.int32),
        "kmer.indptr": np.linspace(0, nnz, n + 1).astype(np.int32),
        "tfidf.data": rng.random(nnz),
        "tfidf.indices": rng.integers(0, 8000, nnz, dtype=np.int32),
        "tfidf.indptr": np.linspace(0, nnz, n + 1).astype(np.int32),
        "svd_rand": rng.normal(size=(n, 64)),
        "svd_rand.sv": np.linspace(9, 1, 64),
        "svd_arpack": rng.normal(size=(n, 64)),
        "svd_arpack.sv": np.linspace(9, 1, 64),
        "kmeans": rng.integers(0, 30, n),
        "kmeans.inertia": np.array([12.5]),
        "knn": rng.integers(0, n, (n, 10)),
        "y_test": y,
    }
    for m in ("lr", "mlp", "hgb", "rf"):
        out[m] = rng.random(n_test)
    return out


def _store(home: Path) -> int:
    """Two seed runs; returns the largest array's size in bytes."""
    st = Store(home)
    largest = 0
    for s in (0, 1):
        spec = RunSpec(dataset="d" * 64, stack="host", stack_id="s" * 64, seeds=seeds(s))
        out = home / f"out{s}"
        out.mkdir()
        stages = {}
        for name, a in _arrays(s).items():
            np.save(out / f"{name}.npy", a)
            stages[name] = {"sha256": array_sha256(a), "dtype": a.dtype.str, "shape": list(a.shape)}
            largest = max(largest, a.nbytes)
        env = {"python": "3", "packages": {}, "threadpools": [], "env": {}}
        st.put_run(spec, out, {"stages": stages, "timings": {}, "wall_s": 1.0, "env": env})
    st.close()
    return largest


class _Zeros(io.RawIOBase):
    """A .npy header then zeros, without holding them."""

    def __init__(self, header: bytes, n: int):
        self.header, self.left = header, n

    def readable(self):
        return True

    def readinto(self, b):
        if self.header:
            k = min(len(b), len(self.header))
            b[:k], self.header = self.header[:k], self.header[k:]
            return k
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k


def _npy_header(dtype: str, shape: tuple) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": dtype, "fortran_order": False, "shape": shape}
    )
    return buf.getvalue()


def _write(src: Path, out: Path, doc=None, manifest: bytes | None = None, extra=None):
    """Rewrite ``src`` with another bundle.json / MANIFEST.json and extra (name, size, stream)."""
    with tarfile.open(src, "r:gz") as t:
        ms = {m.name: t.extractfile(m).read() for m in t.getmembers()}
    ms.pop("MANIFEST.json")
    if doc is not None:
        ms["bundle.json"] = doc
    man = {n: {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)} for n, d in ms.items()}
    for name, size, sha, _ in extra or []:
        man[name] = {"sha256": sha, "size": size}
    with tarfile.open(out, "w:gz", compresslevel=1) as t:

        def add(name, size, stream):
            info = tarfile.TarInfo(name)
            info.size = size
            t.addfile(info, stream)

        m = manifest if manifest is not None else json.dumps(man).encode()
        add("MANIFEST.json", len(m), io.BytesIO(m))
        add("bundle.json", len(ms["bundle.json"]), io.BytesIO(ms.pop("bundle.json")))
        for name, data in ms.items():
            add(name, len(data), io.BytesIO(data))
        for name, size, _, make in extra or []:
            add(name, size, make())
    return out


def _zeros(src: Path, out: Path, mib: int) -> Path:
    doc = json.loads(dict(_members(src))["bundle.json"])
    n = mib * 2**20 // 8
    header = _npy_header("<f8", (n,))
    h = hashlib.sha256()
    whole = hashlib.sha256(header)
    block = bytes(2**20)
    for _ in range(mib):
        h.update(block)
        whole.update(block)
    r = doc["runs"][0]
    info = {"sha256": h.hexdigest(), "dtype": "<f8", "shape": [n]}
    old = f"arrays/{r['blobs']['kmer.data']}.npy"
    r["stages"]["kmer.data"] = r["manifest"]["stages"]["kmer.data"] = info
    r["blobs"]["kmer.data"] = blob_key(info["sha256"], "<f8", [n])
    name, size = f"arrays/{r['blobs']['kmer.data']}.npy", len(header) + n * 8
    tmp = _write(src, out.with_suffix(".tmp"), json.dumps(doc).encode())
    with tarfile.open(tmp, "r:gz") as t:  # drop the member the forged stage replaced
        keep = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.name != old}
    tmp.unlink()
    body = keep.pop("bundle.json")
    keep.pop("MANIFEST.json")
    with tarfile.open(out, "w:gz", compresslevel=1) as t:
        man = {
            n_: {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)} for n_, d in keep.items()
        }
        man["bundle.json"] = {"sha256": hashlib.sha256(body).hexdigest(), "size": len(body)}
        man[name] = {"sha256": whole.hexdigest(), "size": size}
        for nm, data in [
            ("MANIFEST.json", json.dumps(man).encode()),
            ("bundle.json", body),
            *keep.items(),
        ]:
            info_ = tarfile.TarInfo(nm)
            info_.size = len(data)
            t.addfile(info_, io.BytesIO(data))
        info_ = tarfile.TarInfo(name)
        info_.size = size
        t.addfile(info_, io.BufferedReader(_Zeros(header, n * 8), 2**20))
    return out


def _members(path):
    with tarfile.open(path, "r:gz") as t:
        return [(m.name, t.extractfile(m).read()) for m in t.getmembers()]


_RUN = (
    "import sys\nfrom kit.cli import main\ntry:\n    rc = main(['import', sys.argv[1]])\n"
    "finally:\n    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
    "    open(sys.argv[2], 'w').write(hwm[0].split()[1])\nsys.exit(rc)"
)


def _import(bundle: Path, work: Path) -> tuple:
    """(peak RSS in MB, exit status, last line of stderr) of `kit import` in a fresh KIT_HOME.

    The peak is the process's own VmHWM after exec (a forked child's ru_maxrss would count
    this benchmark's memory too)."""
    home = Path(tempfile.mkdtemp(dir=work, prefix="home-"))
    env = dict(os.environ, KIT_HOME=str(home), PYTHONPATH=str(ROOT))
    p = subprocess.run(
        [sys.executable, "-c", _RUN, str(bundle), str(work / "hwm.txt")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    shutil.rmtree(home)
    line = p.stderr.strip().splitlines()
    return int((work / "hwm.txt").read_text()) / 1024, p.returncode, line[-1] if line else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--zeros-mib", type=int, default=256)
    ap.add_argument("--full", action="store_true", help="the issue's 1 GiB zeros stage")
    ap.add_argument("--keep", help="leave the bundles in this folder")
    args = ap.parse_args()
    mib = 1024 if args.full else args.zeros_mib
    work = Path(args.keep or tempfile.mkdtemp(prefix="kit-bundle-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        largest = _store(work / "lab")
        env = dict(os.environ, KIT_HOME=str(work / "lab"), PYTHONPATH=str(ROOT))
        real = work / "real.kit"
        subprocess.run(
            [sys.executable, "-m", "kit", "export", "--out", str(real), "--arrays"],
            env=env,
            check=True,
            capture_output=True,
        )
        doc = dict(_members(real))["bundle.json"]
        body = json.loads(doc)
        body["padding"] = [0] * 60_000_000
        cases = {
            "real": real,
            f"zeros {mib} MiB stage": _zeros(real, work / "zeros.kit", mib),
            "MANIFEST 255 MiB": _write(
                real, work / "manifest.kit", manifest=b"[" + b"0," * (255 * 2**19 - 1) + b"0]"
            ),
            "bundle.json + 60 M zeros": _write(
                real, work / "padded.kit", json.dumps(body).encode()
            ),
            "MANIFEST [ x 200000": _write(real, work / "deep.kit", manifest=b"[" * 200000),
        }
        del body
        base = None
        bound = 2 * largest / 1e6 + 300
        print(
            f"largest legitimate array {largest / 1e6:.1f} MB; bound 2x that + 300 MB = "
            f"{bound:.0f} MB"
        )
        print(f"{'bundle':28} {'size MB':>8} {'peak MB':>8} {'ratio':>6} {'exit':>4}  message")
        for name, path in cases.items():
            peak, rc, msg = _import(path, work)
            base = base or peak
            print(
                f"{name:28} {path.stat().st_size / 1e6:8.1f} {peak:8.0f} {peak / base:6.2f} "
                f"{rc:4}  {'ok' if peak <= bound else 'ABOVE BOUND'}; {msg[:110]}"
            )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
