"""What an audit is of: kit's own protein pipeline on a dataset, or a lab's pipeline file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..worker.pipeline import KINDS, SEED_NAMES

DATASET = "dataset"  # kit's built-in pipeline (kit.worker.pipeline) on one stored dataset
PIPELINE = "pipeline"  # a lab's own file (docs/pipelines.md), which reads its own data
KINDS_OF = (DATASET, PIPELINE)


@dataclass(frozen=True)
class Subject:
    """One audited thing, as every verb of kit.app takes it: its kind, the sha256 that names it
    in the store (a dataset's content hash, or a pipeline file's), a name to show, and what it
    declares: its named seeds and each output's kind (kit's own pipeline declares them as a lab
    file does, so one engine reads both). ``summary``: the store's record of it (a dataset's
    rows and source, a pipeline's imported declaration); ``why``: how it was chosen, shown beside
    its name so a read command never surprises."""

    kind: str
    sha256: str
    name: str
    seeds: tuple[str, ...] = ()
    kinds: Mapping[str, str] = field(
        default_factory=dict, compare=False
    )  # its seeds and sha256 name it
    dtype: bool = True  # its run takes a dtype: the precision factor can run
    summary: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    why: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS_OF:
            raise ValueError(f"a subject is a {' or a '.join(KINDS_OF)}, not {self.kind!r}")
        if not (len(self.sha256) == 64 and all(c in "0123456789abcdef" for c in self.sha256)):
            raise ValueError(f"a subject's sha256 is 64 hex digits, not {self.sha256!r}")
        # frozen all the way down: a reader cannot change what another reader is shown
        object.__setattr__(self, "seeds", tuple(self.seeds))
        object.__setattr__(self, "kinds", MappingProxyType(dict(self.kinds)))
        object.__setattr__(self, "summary", MappingProxyType(dict(self.summary)))

    @property
    def is_pipeline(self) -> bool:
        return self.kind == PIPELINE

    @property
    def reads_own_data(self) -> bool:
        """A pipeline file loads its own data (kit records only the file): a dataset's words
        (name, size) and kit's own settings do not reach it."""
        return self.kind == PIPELINE

    @property
    def short(self) -> str:
        return self.sha256[:12]

    def kind_of(self, output: str) -> str:
        """The declared kind of ``output`` ("array" for one it does not declare)."""
        return self.kinds.get(output, "array")

    def label(self) -> str:
        """How a line names it: 'dataset synthetic-1000' or 'pipeline digits.py (3f2a...)'."""
        if self.is_pipeline:
            return pipeline_head(self.name, self.sha256)
        return f"dataset {self.name}"


def pipeline_head(name: str, sha: str) -> str:
    """The words that name a lab's pipeline, "pipeline NAME (HASH)", as every reader says them
    (a line of them goes through kit.views.fit.para: a long file name made 100 columns)."""
    return f"pipeline {name} ({sha[:12]})"


def of_dataset(sha256: str, summary: Mapping[str, Any], why: str = "") -> Subject:
    """kit's own pipeline on the dataset ``sha256`` (``summary``: the store's datasets row)."""
    return Subject(
        DATASET,
        sha256,
        str(summary.get("name") or sha256[:12]),
        SEED_NAMES,
        KINDS,
        True,
        summary,
        why,
    )


def of_pipeline(
    info: Mapping[str, Any], why: str = "", summary: Mapping[str, Any] | None = None
) -> Subject:
    """A lab's pipeline from its declaration (kit.data.pipelines' info: sha256, name, seeds,
    kinds, dtype)."""
    return Subject(
        PIPELINE,
        info["sha256"],
        str(info.get("name") or info["sha256"][:12]),
        tuple(info.get("seeds") or ()),
        dict(info.get("kinds") or {}),
        bool(info.get("dtype")),
        summary if summary is not None else info,
        why,
    )
