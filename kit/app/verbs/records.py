"""The records the verbs return, and what they share: an option a subject does not take."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ...core import factors
from ...core.errors import Refused
from ...core.subject import Subject

T = TypeVar("T")


class BadOption(Refused):
    """An option's value the subject does not take (an unknown factor of kit's own): said as
    the command line's usage error for ``option``."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


class Clash(Refused):
    """Options that do not go together (``options``: the ones named, as typed), said in one
    line: --timeout with --cluster, --hosts without one."""

    def __init__(self, options: tuple[str, ...], message: str):
        super().__init__(message)
        self.options = options


@dataclass(frozen=True)
class Budget:
    """``data``: the budget (--json's object); kit's own with ``factor``: its pairs' rows.
    ``verdicts``: a pipeline's verdicts, shown beside its budget."""

    subject: Subject
    data: dict[str, Any] | list[dict[str, Any]]
    factor: str | None = None
    verdicts: dict | None = None


@dataclass(frozen=True)
class Verdicts:
    subject: Subject
    data: dict
    note: str | None = None  # kit's own: the runs whose arrays are not stored


@dataclass(frozen=True)
class Reading(Generic[T]):
    """One verb's answer that is its numbers alone: amplify, advise, homology, tolerances
    (``data``: a dict, or the analysis's record where it has one: kit's own homology, a
    dataset beside its disjoint split)."""

    subject: Subject
    data: T


@dataclass(frozen=True)
class Runs:
    subject: Subject | None  # None: every stored run
    runs: tuple
    datasets: dict = field(default_factory=dict)
    filtered: bool = False


@dataclass(frozen=True)
class Explanation:
    """``result``: kit.app.releases.explained's, with ``unscanned`` the notes of scans not made
    (``declined``: the reason the release scan was skipped, for the front end to say how to
    run it); ``not_run``: why each cross-fed run that cannot be made here was left out."""

    subject: Subject
    result: dict
    declined: str | None = None
    not_run: tuple = ()
    scans: int = 0  # the pairs whose releases were scanned (--library asked: none is a failure)


@dataclass(frozen=True)
class Ran:
    """`kit run`'s answer: the budget after the runs (``asked``: the factors this command ran),
    and ``failure``, the error to raise once the budget is shown (runs that failed, or a
    pipeline's output whose shape changed), else None."""

    subject: Subject
    budget: dict
    asked: tuple
    failure: Exception | None = None


@dataclass(frozen=True)
class Doctor:
    """`kit doctor`: the machine's null experiment and probes, or a pipeline file's alone."""

    subject: Subject | None  # None: the machine's
    data: dict

    @property
    def ok(self) -> bool:
        return bool(self.data["ok"])


@dataclass(frozen=True)
class Compared:
    """`kit compare`: a bundle's runs rerun here, and the answer (``data``: its --json object;
    ``data["imported"]``: what the import added)."""

    data: dict


@dataclass(frozen=True)
class Export:
    """The runs an export of the subject carries (in order, each once)."""

    subject: Subject
    ids: tuple


def kit_factor_names(names) -> tuple:
    """``names`` as kit's own factor names; BadOption as --factor's type says it."""
    bad = [f for f in names if f not in factors.plannable()]
    if bad or not names:
        raise BadOption("--factor", factors.unknown_factor(bad[0] if bad else ",".join(names)))
    return tuple(names)


def factor_names(names, dataset=None, n=None, pipeline=None) -> tuple:
    """--factor's ``names`` checked against what the words (selection.select's) name, before
    anything is read: kit's own names (BadOption) unless a pipeline is named, whose factors
    are checked against its stored pairs (seed:NAME for its own SEEDS)."""
    names = tuple(names or ())
    return names if pipeline or not names else kit_factor_names(names)
