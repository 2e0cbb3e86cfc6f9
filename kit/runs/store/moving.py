"""Moving a finished run's arrays into the store and indexing it, under the arrays lock."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from ...core.errors import KitError
from ...core.spec import RunSpec
from ...worker.dtypes import recorded_problem
from .blobs import blob_key, check_array, load_npy
from . import schema
from .rows import run_subject


def put_run(store, spec: RunSpec, outdir: Path, manifest: dict) -> str:
    """Move a worker's arrays into ``store``, verify their hashes, index them at once.

    The move and the index happen under the arrays lock (``Store.moving_in``), so a repair
    beside it never takes the fresh files for orphans; it returns only once the run is indexed
    with every array in place: a run reported done is stored."""
    checked = []
    for stage, info in manifest["stages"].items():
        why = recorded_problem(info["dtype"], text=bool(spec.pipeline))
        if why:  # what is stored must travel: export and import hold the same set
            raise KitError(f"stage {stage}: dtype {info['dtype']!r} {why}")
        src = Path(outdir) / f"{stage}.npy"
        a = load_npy(src)
        why = check_array(a, info["sha256"], info["dtype"], info["shape"])
        if why:
            raise KitError(f"stage {stage}: the worker's array does not match its manifest ({why})")
        checked.append((stage, src, info["sha256"], a.dtype.str, list(a.shape)))
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    rows = []
    with store.moving_in():
        for stage, src, sha, dtype, shape in checked:
            blob = blob_key(sha, dtype, shape)
            store.blobs.put_file(src, blob, sha, dtype, shape)
            rows.append((spec.run_id, stage, sha, dtype, json.dumps(shape), blob))
        with store._tx() as db:
            db.execute(f"INSERT OR IGNORE {schema.RUN_ROW}",
                       (spec.run_id, spec.to_json(), spec.dataset, spec.stack, now,
                        json.dumps(manifest, sort_keys=True), run_subject(spec)))
            db.executemany("INSERT OR IGNORE INTO stages VALUES (?,?,?,?,?,?)", rows)
        lost = [st for st, b in store.stage_blobs(spec.run_id).items() if not store.blobs.exists(b)]
        if not store.has_run(spec.run_id) or lost:
            raise KitError(f"run {spec.run_id[:12]} was not stored whole (missing: "
                           f"{', '.join(lost) or 'its index row'}); run the same command again")
    return spec.run_id
