"""`kit store check`: verify everything a store holds; with repair, drop what is damaged.

Every array is hashed again against what its runs recorded, every dataset file a worker reads
is re-hashed, and array files no run refers to are found. Repair deletes damaged and orphan
files and drops the runs (with their pairs, comparisons and verdicts) that depended on a
damaged or missing array: the next `kit run` of the same factors makes them again.
"""

from __future__ import annotations

from ...data.dataset import verify_worker_file
from ...core.hosts import host_id
from ...core.paths import subdir
from .index import Store


def check_store(store: Store, repair: bool = False, full: bool = True) -> dict:
    """What is damaged in ``store`` (and, with ``repair``, what was dropped because of it).

    ``full`` hashes every array again; otherwise arrays verified since their last change are
    trusted (kit.runs.store.blobs remembers each verified file's identity; an edit changes it).
    """
    here = host_id()
    local = {i for i, s in store.specs().items() if s.host == here}
    recorded, users = {}, {}
    for run, _, blob, st in store.stage_records():
        recorded[blob] = (st.sha256, st.dtype, list(st.shape))
        users.setdefault(blob, set()).add(run)
    damaged, missing = {}, {}
    for blob, (sha, dtype, shape) in recorded.items():
        if not store.blobs.exists(blob):
            made_here = sorted(users[blob] & local)
            if made_here:  # an imported run may travel without arrays; a local one may not
                missing[blob] = made_here
            continue
        why = store.blobs.problem(blob, sha, dtype, shape, force=full)
        if why:
            damaged[blob] = why
    orphans = [k for k in store.blobs.files() if k not in recorded]
    bad_datasets = {p.name: why for p in (subdir("datasets") / "by-hash").glob("*.json")
                    if (why := verify_worker_file(p))}
    drop = {r for b in list(damaged) + list(missing) for r in users[b]}
    # torch and perturbed runs trained on a dropped run's embedding go with it
    drop = sorted(drop | store.runs_trained_on(drop))
    factors = store.pair_factors(drop) if drop else []
    report = {"arrays": len(recorded), "files": len(recorded) - len(missing) + len(orphans),
              "damaged": [{"blob": b, "why": w, "runs": sorted(users[b])} for b, w in damaged.items()],
              "missing": [{"blob": b, "runs": r} for b, r in missing.items()],
              "orphans": len(orphans), "datasets": bad_datasets, "runs_affected": drop,
              "factors_to_rerun": factors, "repaired": False}
    report["ok"] = not (damaged or missing or orphans or bad_datasets)
    if repair and not report["ok"]:
        store.drop_runs(drop)
        # damaged files, and every file no remaining run refers to (the dropped runs' others)
        still = {blob for _, _, blob, _ in store.stage_records()}
        for b in set(damaged) | (set(store.blobs.files()) - still):
            store.blobs.forget(b)
        for name in bad_datasets:  # made again from the named dataset before the next run
            (subdir("datasets") / "by-hash" / name).unlink(missing_ok=True)
        report["repaired"] = True
    return report
