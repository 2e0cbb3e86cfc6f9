"""Typed records of stored runs, and `as_json`: any records as dicts at the JSON edge."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping

from ...core.spec import RunSpec


@dataclass(frozen=True)
class Stage:
    """One stage array as its run recorded it."""
    sha256: str
    dtype: str
    shape: tuple

    def to_json(self) -> dict:
        return {"sha256": self.sha256, "dtype": self.dtype, "shape": list(self.shape)}


@dataclass(frozen=True)
class StoredRun:
    """A run in the store: its spec, when it was stored, the worker's manifest, its stages."""
    id: str
    spec: RunSpec
    created: str
    manifest: dict
    stages: Mapping[str, Stage]
    # the spec's JSON as stored: its sha256 is ``id`` (a spec stored by an older kit may lack
    # fields ``spec`` fills with their defaults), and the JSON edge shows it as it is
    spec_json: str = field(repr=False, compare=False, default="")

    @classmethod
    def from_row(cls, run_id: str, spec: str, created: str, manifest: str, stages) -> "StoredRun":
        """A run from its index row and its (stage, sha256, dtype, shape JSON) rows."""
        return cls(run_id, RunSpec.from_json(spec), created, json.loads(manifest),
                   {s: Stage(h, d, tuple(json.loads(sh))) for s, h, d, sh in stages}, spec)

    def to_json(self) -> dict:
        return {"id": self.id, "spec": json.loads(self.spec_json), "created": self.created,
                "manifest": self.manifest, "stages": {s: i.to_json() for s, i in self.stages.items()}}


@dataclass(frozen=True)
class StoredPair:
    """Two stored runs planned to differ in ``factor`` (at ``level``), as an audit labelled them."""
    factor: str
    level: str
    a: str
    b: str
    label: str

    def to_json(self) -> dict:
        return {"factor": self.factor, "level": self.level, "a": self.a, "b": self.b,
                "label": self.label}


def as_json(obj):
    """``obj`` with every record in it (anything with ``to_json``) in its JSON form, walking
    dicts and lists: what `--json` writes and what the notebook's frames are built from."""
    if hasattr(obj, "to_json"):
        return obj.to_json()
    if isinstance(obj, dict):
        return {k: as_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [as_json(v) for v in obj]
    return obj
