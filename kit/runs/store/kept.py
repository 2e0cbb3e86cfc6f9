"""Each run's rows, each pair and each dataset record as content-addressed JSON beside the arrays.

The index alone held the runs' specs and manifests, so a truncated or deleted index lost every
run whose arrays were intact. As git keeps objects beside its index, a store keeps here each
row it indexes (``records/AB/SHA256.json``, named by the sha256 of its bytes, written whole
before the row is indexed), and ``kit store check --repair`` puts back into the index whatever
these hold that it lacks: after a truncation, a restored copy, rows deleted by hand. A pair's
level is derived again from its two specs (kit.core.factors.level), never taken from the file.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from ...core import factors
from ...core.atomic import write_bytes
from ...core.small_files import NotKits, read_home
from . import rows, schema
from .layout import RECORDS as DIR

if TYPE_CHECKING:
    from ...core.spec import RunSpec
    from .index import Store
LIMIT = 64 << 20  # the pairs record of a migrated store of 100,000 pairs


class RunDoc(TypedDict):
    kind: Literal["run"]
    row: list[Any]  # id, spec, dataset, stack, created, manifest, subject
    stages: list[list[Any]]  # stage, sha256, dtype, shape, blob
    at: int


class DatasetDoc(TypedDict):
    kind: Literal["dataset"]
    row: list[Any]  # sha256, name, summary, subject
    at: int


class PairsDoc(TypedDict):
    kind: Literal["pairs"]
    pairs: list[list[Any]]  # factor, level, a, b, label
    at: int


Doc = RunDoc | DatasetDoc | PairsDoc


def _bytes(doc: Doc) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def write(root: Path, doc: Doc) -> None:
    """``doc`` under its own hash; one already there is the same bytes, left as it is."""
    data = _bytes(doc)
    key = hashlib.sha256(data).hexdigest()
    path = Path(root) / DIR / key[:2] / f"{key}.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(path, data)


# ``at``: when the row was written (ns), or its rowid for a migrated store's (before any new
# one): readers take "the run stored last" by the index's order, which a rebuild keeps
def run_doc(
    row: Sequence[Any], stage_rows: Iterable[Sequence[Any]], at: int | None = None
) -> RunDoc:
    """A run's record from its index row (id, spec, dataset, stack, created, manifest, subject)
    and its stage rows (stage, sha256, dtype, shape, blob)."""
    return {
        "kind": "run",
        "row": list(row),
        "stages": [list(s) for s in stage_rows],
        "at": time.time_ns() if at is None else at,
    }


def dataset_doc(row: Sequence[Any], at: int | None = None) -> DatasetDoc:
    return {
        "kind": "dataset",
        "row": list(row),  # sha256, name, summary, subject
        "at": time.time_ns() if at is None else at,
    }


def pairs_doc(pairs: Iterable[Sequence[Any]], at: int | None = None) -> PairsDoc:
    return {
        "kind": "pairs",
        "pairs": [list(p) for p in pairs],
        "at": time.time_ns() if at is None else at,
    }


def read_all(root: Path) -> tuple[list[tuple[Path, Any]], list[tuple[Path, str]]]:
    """(path, record) of each record, and (path, why) of each that is not one kit wrote: its
    bytes not hashing to its name, not JSON, a link or a FIFO (never followed or opened)."""
    found: list[tuple[Path, Any]] = []
    bad: list[tuple[Path, str]] = []
    for path in sorted((Path(root) / DIR).glob("??/*.json")):
        try:
            data = read_home(path, LIMIT)
        except NotKits as e:
            bad.append((path, e.why))
            continue
        if data is None:
            continue
        if hashlib.sha256(data).hexdigest() != path.stem:
            bad.append((path, "does not hash to its name (edited, cut short or garbage)"))
            continue
        try:
            found.append((path, json.loads(data)))
        except ValueError:
            bad.append((path, "is not JSON"))
    return found, bad


def forget(root: Path, runs: Iterable[str] = (), datasets: Iterable[str] = ()) -> None:
    """Remove the records of ``runs`` (their pairs too) and ``datasets``: dropped by a repair,
    they must not come back at the next one."""
    gone, sets = set(runs), set(datasets)
    for path, doc in read_all(root)[0]:
        kind = doc.get("kind")
        if kind == "run" and doc["row"][0] in gone or kind == "dataset" and doc["row"][0] in sets:
            path.unlink(missing_ok=True)
        elif kind == "pairs" and gone:
            kept = [p for p in doc["pairs"] if p[2] not in gone and p[3] not in gone]
            if len(kept) < len(doc["pairs"]):
                if kept:
                    write(root, pairs_doc(kept))
                path.unlink(missing_ok=True)


def migrate(store: Store) -> None:
    """A store from before the records gets them, once, written from its index."""
    if store.db.execute("SELECT 1 FROM meta WHERE key='records'").fetchone():
        return
    for at, *row in store.db.execute(
        "SELECT rowid, id, spec, dataset, stack, created, manifest, "
        "subject FROM runs ORDER BY rowid"
    ):
        write(store.root, run_doc(row, store._stage_rows(row[0]), at))
    pairs = store.db.execute("SELECT factor, level, a, b, label FROM pairs ORDER BY rowid")
    if pairs:
        write(store.root, pairs_doc(pairs, 0))
    for at, *row in store.db.execute("SELECT rowid, sha256, name, summary, subject FROM datasets"):
        write(store.root, dataset_doc(row, at))
    with store._tx(count=False) as db:  # what the index holds is now in records too
        db.execute("INSERT OR IGNORE INTO meta VALUES ('records', '1')")


def differences(store: Store) -> dict[str, list[Any]]:
    """What the records hold that the index lacks: {"runs": [id], "pairs": [(factor, a, b)],
    "datasets": [sha256]}, and the records that are damaged, as {"damaged": [(path, why)]}."""
    found, bad = read_all(store.root)
    runs = {i for (i,) in store.db.execute("SELECT id FROM runs")}
    pairs = {tuple(p) for p in store.db.execute("SELECT factor, a, b FROM pairs")}
    sets = {h for (h,) in store.db.execute("SELECT sha256 FROM datasets")}
    out: dict[str, list[Any]] = {"runs": [], "pairs": [], "datasets": [], "damaged": bad}
    for _, doc in found:
        kind = doc.get("kind")
        if kind == "run" and doc["row"][0] not in runs:
            out["runs"].append(doc["row"][0])
        elif kind == "dataset" and doc["row"][0] not in sets:
            out["datasets"].append(doc["row"][0])
        elif kind == "pairs":
            out["pairs"] += [
                (p[0], p[2], p[3]) for p in doc["pairs"] if (p[0], p[2], p[3]) not in pairs
            ]
    return out


def restore(store: Store) -> list[str]:
    """Index what the records hold and the index lacks; what was done, as lines. A run whose
    spec does not hash to its id is left out (its record is damaged); a pair whose level its
    specs do not make, or whose runs are not both indexed, too."""
    found = sorted((d for _, d in read_all(store.root)[0]), key=lambda d: d.get("at", 0))
    runs = [d for d in found if d.get("kind") == "run"]
    done = {"runs": 0, "pairs": 0, "datasets": 0}
    with store._tx() as db:
        for doc in runs:
            row = doc["row"]
            try:
                rows.verified_spec(row[0], row[1], row[6])
            except Exception:  # noqa: BLE001 - a damaged record is left out, the rest restored
                continue
            if db.execute("SELECT 1 FROM runs WHERE id=?", (row[0],)).fetchone():
                continue
            db.execute(f"INSERT OR IGNORE {schema.RUN_ROW}", row)
            db.executemany(
                "INSERT OR IGNORE INTO stages VALUES (?,?,?,?,?,?)",
                [(row[0], *s) for s in doc["stages"]],
            )
            done["runs"] += 1
        latest: dict[
            str, list[Any]
        ] = {}  # a dataset's summary is replaced as runs record it anew: the last one's,
        for doc in (d for d in found if d.get("kind") == "dataset"):  # where it first came
            sha, summary = doc["row"][0], doc["row"][2]
            if sha not in latest or json.loads(summary).get("verified") is not False:
                latest[sha] = doc["row"]  # a bundle's unverified word never replaces one here
        for sha, row in latest.items():
            if not db.execute("SELECT 1 FROM datasets WHERE sha256=?", (sha,)).fetchone():
                db.execute(f"INSERT OR IGNORE {schema.DATASET_ROW}", row)
                done["datasets"] += 1
        specs: dict[str, RunSpec] = {}  # the sound runs' (a damaged row is the check's to drop)
        for i, s, k in db.execute("SELECT id, spec, subject FROM runs"):
            spec, why = rows.spec_problem(i, s, subject=k)
            if why is None and spec is not None:
                specs[i] = spec
        for doc in (d for d in found if d.get("kind") == "pairs"):
            for factor, level, a, b, label in doc["pairs"]:
                if (
                    a not in specs
                    or b not in specs
                    or db.execute(
                        "SELECT 1 FROM pairs WHERE factor=? AND a=? AND b=?", (factor, a, b)
                    ).fetchone()
                ):
                    continue
                if factors.level(factor, specs[a], specs[b]) != level:
                    continue  # not what its specs make: never taken on the file's word
                db.execute(
                    "INSERT OR IGNORE INTO pairs VALUES (?,?,?,?,?)", (factor, level, a, b, label)
                )
                done["pairs"] += 1
    if not any(done.values()):
        return []
    return [
        f"restored from {store.root / DIR}: {done['runs']} run(s), {done['pairs']} pair(s), "
        f"{done['datasets']} dataset record(s) the index lacked"
    ]
