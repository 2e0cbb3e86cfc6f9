"""Typed records of stored runs and subjects, and `as_json`: any records as dicts at the JSON edge."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ...core.spec import RunSpec
from ...core.subject import KINDS_OF, PIPELINE


@dataclass(frozen=True)
class Stage:
    """One stage array as its run recorded it."""

    sha256: str
    dtype: str
    shape: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "dtype": self.dtype, "shape": list(self.shape)}


@dataclass(frozen=True)
class StoredRun:
    """A run in the store: its spec, when it was stored, the worker's manifest, its stages."""

    id: str
    spec: RunSpec
    created: str
    manifest: dict[str, Any]
    stages: Mapping[str, Stage]
    # the spec's JSON as stored: its sha256 is ``id`` (a spec stored by an older kit may lack
    # fields ``spec`` fills with their defaults), and the JSON edge shows it as it is
    spec_json: str = field(repr=False, compare=False, default="")

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "spec": json.loads(self.spec_json),
            "created": self.created,
            "manifest": self.manifest,
            "stages": {s: i.to_json() for s, i in self.stages.items()},
        }


@dataclass(frozen=True)
class StoredPair:
    """Two stored runs planned to differ in ``factor`` (at ``level``), as an audit labelled them."""

    factor: str
    level: str
    a: str
    b: str
    label: str

    def to_json(self) -> dict[str, Any]:
        return {
            "factor": self.factor,
            "level": self.level,
            "a": self.a,
            "b": self.b,
            "label": self.label,
        }


@dataclass(frozen=True)
class DatasetSummary:
    """The store's record of one subject its runs are of (kit.core.subject): a dataset kit's
    pipeline read, or a lab's pipeline file. ``rows`` and ``source`` as the summary says (None
    where it does not: a pipeline reads its own data); ``verified`` False for a bundle's dataset
    not found on this machine; ``summary`` the whole record, as the JSON edge shows it."""

    sha256: str
    kind: str
    name: str
    rows: int | None = None
    source: str | None = None
    verified: bool = True
    summary: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS_OF:
            raise ValueError(f"a stored subject is a {' or a '.join(KINDS_OF)}, not {self.kind!r}")
        object.__setattr__(self, "summary", MappingProxyType(copy.deepcopy(dict(self.summary))))

    @classmethod
    def from_summary(cls, kind: str, summary: Mapping[str, Any]) -> DatasetSummary:
        """The record of a datasets row's verified summary (kit.runs.store.rows) and subject."""
        rows, source = summary.get("rows"), summary.get("source")
        return cls(
            summary["sha256"],
            kind,
            summary["name"],
            rows if isinstance(rows, int) and not isinstance(rows, bool) else None,
            source if isinstance(source, str) else None,
            summary.get("verified") is not False,
            summary,
        )

    @property
    def is_pipeline(self) -> bool:
        return self.kind == PIPELINE

    def to_json(self) -> dict[str, Any]:
        """The summary as stored (what ``Store.datasets()`` maps its sha256 to)."""
        return copy.deepcopy(dict(self.summary))


def as_json(obj: Any) -> Any:
    """``obj`` with every record in it (anything with ``to_json``) in its JSON form, walking
    dicts and lists: what `--json` writes and what the notebook's frames are built from."""
    if hasattr(obj, "to_json"):
        return obj.to_json()
    if isinstance(obj, dict):
        return {k: as_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [as_json(v) for v in obj]
    return obj
