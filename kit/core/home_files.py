"""The files kit keeps in KIT_HOME and reads back, each with its bound: what `store check` sees."""

from __future__ import annotations

import os
import time
from pathlib import Path

from .hosts import read_record
from .small_files import DATASET, SMALL, NotKits, read_home_json, shape_problem

PIPELINE = 4 << 20  # a lab's pipeline file (kit.worker.contract reads at most this)

# (pattern under KIT_HOME, bound): every file a reader, `kit store check` or a sweep reads there;
# tests/core/test_home_files.py damages each and runs every reader. The arrays
# (kit.runs.store.blobs) and the index (SQLite) have checks of their own.
KEPT = (
    ("host.json", 4096),
    ("cluster.toml", SMALL),
    ("datasets/*.json", DATASET),
    ("datasets/by-hash/*.json", DATASET),
    ("datasets/homology/*.json", DATASET),
    ("pipelines/by-hash/*.json", SMALL),
    ("pipelines/by-hash/*.py", PIPELINE),
    ("stacks/external.json", SMALL),
    ("writes/*.note", SMALL),
    ("store.json", SMALL),
)


def problems(home: Path) -> list[tuple[Path, str]]:
    """(path, why) of each file kept in ``home`` that is not one kit could have written: a link,
    a FIFO, a device, a folder or too large (from lstat alone: nothing such is opened), a small
    JSON record that is not JSON, and a host.json that is not this machine's record."""
    out = []
    for pattern, limit in KEPT:
        for path in sorted(Path(home).glob(pattern)):
            why = shape_problem(path, limit)
            if not why and limit <= SMALL and path.suffix == ".json":  # a record: is it JSON?
                try:
                    read_home_json(path, limit)
                except NotKits as e:
                    why = e.why
            if why:
                out.append((path, why))
    try:
        read_record(Path(home) / "host.json")
    except NotKits as e:
        if not any(p.name == "host.json" for p, _ in out):
            out.append((Path(e.path), e.why))
    return out


def set_aside(found: list[tuple[Path, str]]) -> list[str]:
    """Move each of ``found`` aside (renamed ``NAME.damaged-STAMP`` beside it, never deleted, so
    no pattern of ``KEPT`` matches it), as lines saying so; kit makes each again as it needs it
    (host.json from the index's record)."""
    stamp, done = time.strftime("%Y%m%d-%H%M%S"), []
    for path, why in found:
        dest = path.with_name(f"{path.name}.damaged-{stamp}")
        try:
            os.replace(path, dest)
        except FileNotFoundError:
            continue
        done.append(f"{path} {why}: moved to {dest}")
    return done
