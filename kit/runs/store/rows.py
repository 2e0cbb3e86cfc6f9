"""A run's index row verified as it is read: its spec hashes to its id, its manifest and stages are what kit wrote.

A run's id is the sha256 of its spec, so one changed byte of a stored spec (a seed, a thread
count) would otherwise relabel the run in every reader; its manifest is parsed by the strict
schema (kit.core.documents) and its stage rows must be its manifest's stages under their blob
keys; its subject column is what its spec is of (a lab pipeline's run names the pipeline, any
other is a dataset's: kit.core.subject). A row that fails is a damaged run
(kit.core.errors.Damaged): readers name it and
`kit store check --repair`, which drops it with what depended on it (kit.runs.store.check).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from ...core.documents import DocumentError, control_free, decode_manifest, spec_from_json
from ...core.errors import Damaged
from ...core.spec import RunSpec
from ...core.subject import DATASET, PIPELINE
from .blobs import blob_key
from .records import Stage, StoredRun

REPAIR = "`kit store check --repair` drops it and what depended on it"
# a stage's index row: (stage, sha256, dtype, shape as JSON, blob key)
StageRow = tuple[str, str, str, str, str]
# a run's index row as readers select it: (id, spec, created, manifest, dataset, stack, subject)
RunRow = tuple[str, str, str, str, str, str, str | None]


def shown(run_id: str, n: int = 12) -> str:
    """A run id as a line may print it: a damaged page may have left bytes that are not text."""
    return run_id[:n].encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")


def damaged(run_id: str, why: str) -> Damaged:
    return Damaged(f"run {shown(run_id)} in the store is damaged ({why}); {REPAIR}")


_NOT_UTF8 = "its index row is not valid UTF-8: a damaged page"
_UNCHECKED = object()  # a subject column not read (NULL is a value: a row the migration left)


def run_subject(spec: RunSpec) -> str:
    """What a run is of: the lab pipeline its spec names, else the dataset kit's pipeline read."""
    return PIPELINE if spec.pipeline else DATASET


def dataset_subject(summary: Mapping[str, Any]) -> str:
    """What a datasets record is of: a lab pipeline's summary is marked ``"source": "pipeline"``
    (kit.data.pipelines.LabData); any other is a dataset's (a bundle's unverified one too)."""
    return PIPELINE if summary.get("source") == PIPELINE else DATASET


def spec_problem(
    run_id: str,
    spec: str,
    dataset: str | None = None,
    stack: str | None = None,
    subject: object = _UNCHECKED,
) -> tuple[RunSpec | None, str | None]:
    """(the spec, None), or (None, why the row's spec is not its run's).

    The index connection decodes a text that is not UTF-8 with surrogateescape
    (kit.runs.store.locked): its lone surrogates fail the decoders here (UnicodeError), and an
    id, dataset or stack holding one is not its spec's."""
    try:
        s = spec_from_json(spec)
        # the text as written hashes to its id (one sha256); a text that does not (written by
        # another JSON writer, or changed) is judged by the spec it parses to
        same = hashlib.sha256(spec.encode()).hexdigest() == run_id or s.run_id == run_id
    except DocumentError as e:
        return None, f"its {e}"
    except UnicodeError:
        return None, _NOT_UTF8
    if not same:
        return None, "its spec does not hash to its id: a changed byte would relabel it"
    if (dataset is not None and s.dataset != dataset) or (stack is not None and s.stack != stack):
        return None, "its dataset or stack column is not its spec's"
    if subject is not _UNCHECKED and subject != run_subject(s):
        return None, "its subject column is not its spec's (a dataset's run or a pipeline's)"
    return s, None


def _stages(
    manifest: dict[str, Any], rows: Iterable[StageRow], thorough: bool
) -> tuple[dict[str, Stage] | None, str | None]:
    """{stage: Stage} of the stage rows, or why they are not the manifest's stages; ``thorough``
    also derives each blob key (`kit store check`; a reader's array is hashed when it is read)."""
    recorded = manifest["stages"]
    out = {}
    for stage, sha, dtype, shape, blob in rows:
        try:
            dims = json.loads(shape)
        except ValueError:
            return None, f"the shape of its stage {stage[:40]!r} is not JSON"
        if recorded.get(stage) != {"sha256": sha, "dtype": dtype, "shape": dims} or (
            thorough and blob != blob_key(sha, dtype, dims)
        ):
            return None, f"its stage {stage[:40]!r} is not the one its manifest records"
        out[stage] = Stage(sha, dtype, tuple(dims))
    return out, None


def problem(
    run_id: str,
    spec: str,
    created: str,
    manifest: str,
    dataset: str,
    stack: str,
    subject: str | None,
    stage_rows: Iterable[StageRow],
    thorough: bool = False,
) -> tuple[StoredRun, None] | tuple[None, str]:
    """(StoredRun, None), or (None, why the run's rows are damaged)."""
    s, why = spec_problem(run_id, spec, dataset, stack, subject)
    if why:
        return None, why
    try:
        datetime.fromisoformat(created)
        m = decode_manifest(manifest)
    except DocumentError as e:
        return None, f"its {e}"
    except UnicodeError:
        return None, _NOT_UTF8
    except ValueError:
        return None, "its date is not a date"
    stages, why = _stages(m, stage_rows, thorough)
    if why:
        return None, why
    assert s is not None and stages is not None  # no why: both were read
    return StoredRun(run_id, s, created, m, stages, spec), None


def verified(
    run_id: str,
    spec: str,
    created: str,
    manifest: str,
    dataset: str,
    stack: str,
    subject: str | None,
    stage_rows: Iterable[StageRow],
) -> StoredRun:
    """The run of these rows; Damaged (one line naming it and the repair) if they are not its."""
    run, why = problem(run_id, spec, created, manifest, dataset, stack, subject, stage_rows)
    if run is None:
        raise damaged(run_id, why or "no run")
    return run


def verified_spec(run_id: str, spec: str, subject: object = _UNCHECKED) -> RunSpec:
    s, why = spec_problem(run_id, spec, subject=subject)
    if why or s is None:
        raise damaged(run_id, why or "no spec")
    return s


def dataset_summary(
    sha: str, text: str, subject: object = _UNCHECKED
) -> tuple[dict[str, Any] | None, str | None]:
    """(summary, None) of a datasets row as kit writes it, else (None, why): a JSON object
    naming its own sha256 and a name, every string free of control characters (the name
    reaches every table's heading), its subject column what the summary is of."""
    try:
        summary = json.loads(text)
    except (TypeError, ValueError):
        return None, "its summary is not JSON"
    if (
        not isinstance(summary, dict)
        or summary.get("sha256") != sha
        or not isinstance(summary.get("name"), str)
    ):
        return None, "its summary is not a dataset's (its sha256 and name)"
    bad = next((v for v in summary.values() if isinstance(v, str) and not control_free(v)), None)
    if bad is not None:
        return None, f"its summary holds a control character ({bad[:40]!r})"
    if subject is not _UNCHECKED and subject != dataset_subject(summary):
        return None, "its subject column is not its summary's (a dataset's or a pipeline's)"
    return summary, None
