"""Moving a finished run's arrays into the store and indexing it, under the arrays lock."""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.caps import stage_bytes, stage_too_big
from ...core.errors import KitError
from ...core.spec import RunSpec
from ...worker.dtypes import recorded_problem
from . import identity, kept, schema
from .blobs import blob_key, file_problem
from .rows import run_subject

if TYPE_CHECKING:  # the store calls this: its type only, for annotations
    from .index import Store


def put_run(
    store: Store,
    spec: RunSpec,
    outdir: Path,
    manifest: dict[str, Any],
    held: Collection[str] = frozenset(),
) -> str:
    """Move a worker's arrays into ``store``, verify their hashes, index them at once.

    Each file is read once: its header checked against the manifest and its data hashed as it
    streams by. ``held``: blob keys whose arrays did not come back because the store holds them
    (a cluster node sends only what the store lacks): a stage whose key is among them and
    whose file is absent is indexed only if the store's own copy verifies, under the lock.
    The move and the index happen under the arrays lock (``Store.moving_in``), so a repair
    beside it never takes the fresh files for orphans; the run's rows and the identities of
    the files just verified go in one transaction, and it returns only once the run is indexed
    with every array in place: a run reported done is stored."""
    stages: list[
        tuple[str, str | None, str, str, list[int], str]
    ] = []  # (stage, its file or None: held, sha256, dtype, shape, blob key)
    for stage, info in manifest["stages"].items():
        why = recorded_problem(info["dtype"], text=bool(spec.pipeline))
        if why:  # what is stored must travel: export and import hold the same set
            raise KitError(f"stage {stage}: dtype {info['dtype']!r} {why}")
        why = stage_too_big(stage_bytes(info["dtype"], info["shape"]))
        if why:  # and the same cap: a stage no import would take is never stored
            raise KitError(
                f"stage {stage} {why}: no `kit import` would take it, so the run is not stored"
            )
        sha, dtype, shape = info["sha256"], info["dtype"], list(info["shape"])
        blob = blob_key(sha, dtype, shape)
        src = os.path.join(outdir, f"{stage}.npy")
        if blob in held and not os.path.exists(src):
            stages.append((stage, None, sha, dtype, shape, blob))  # verified under the lock
            continue
        why = file_problem(src, sha, dtype, shape)
        if why:
            raise KitError(f"stage {stage}: the worker's array does not match its manifest ({why})")
        stages.append((stage, src, sha, dtype, shape, blob))
    now = datetime.now(UTC).isoformat(timespec="seconds")
    rows: list[tuple[str, str, str, str, str, str]] = []
    noted: list[tuple[str, str | None]] = []
    with store.moving_in():
        identity.still_here(store)  # a store deleted or replaced under the run takes none of it
        gone = [
            st
            for st, src, sha, dtype, shape, blob in stages
            if src is None and not store.blobs.holds(blob, sha, dtype, shape)
        ]
        if gone:  # said before a file is moved: nothing of the run is left behind
            raise KitError(
                f"stage {', '.join(gone)}: not sent back, as the store held an equal "
                "array, which it no longer holds whole; nothing of the run was "
                "stored, run the same command again to make it"
            )
        moved: set[str] = set()
        for stage, file, sha, dtype, shape, blob in stages:
            if file is not None and blob in moved:  # two stages of one array (indptr ...)
                os.unlink(file)
            elif file is not None:
                store.blobs.put_file(file, blob, sha, dtype, shape, noted)
                moved.add(blob)
            rows.append((spec.run_id, stage, sha, dtype, json.dumps(shape), blob))
        row = (
            spec.run_id,
            spec.to_json(),
            spec.dataset,
            spec.stack,
            now,
            json.dumps(manifest, sort_keys=True),
            run_subject(spec),
        )
        kept.write(store.root, kept.run_doc(row, [r[1:] for r in rows]))  # before it is indexed
        with store._tx() as db:
            db.execute(f"INSERT OR IGNORE {schema.RUN_ROW}", row)
            db.executemany("INSERT OR IGNORE INTO stages VALUES (?,?,?,?,?,?)", rows)
            db.executemany("INSERT OR REPLACE INTO verified VALUES (?,?)", noted)
        identity.still_here(store)  # committed into the file this process opened: is it the store?
        lost = [st for st, b in store.stage_blobs(spec.run_id).items() if not store.blobs.exists(b)]
        if not store.has_run(spec.run_id) or lost:
            raise KitError(
                f"run {spec.run_id[:12]} was not stored whole (missing: "
                f"{', '.join(lost) or 'its index row'}); run the same command again"
            )
    return spec.run_id
