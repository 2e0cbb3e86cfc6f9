"""The callbacks a front end (the CLI, the TUI) hands to kit's verbs, as types.

A verb that builds, runs or imports tells its caller what happens (``log``, ``on_done``, an
audit's ``Progress``, an explanation's ``ExplainProgress``, ``busy`` around slow work) and asks
before what costs time or trust (``confirm``, ``trust``). A function's parameters are
positional-only: any function or lambda of that shape fits, whatever its parameters are named.
The two progress Protocols say nothing by default: a front end subclasses one and overrides
what it shows (``QUIET`` and ``QUIET_EXPLAIN`` show nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:  # spec imports the factor registry, which imports nothing of this
    from .spec import RunSpec

Q_contra = TypeVar("Q_contra", contravariant=True)


class Log(Protocol):
    """A line of progress (a stack being built, a bundle being checked)."""

    def __call__(self, line: str, /) -> None: ...


class StackLog(Protocol):
    """A line from building ``stack``."""

    def __call__(self, stack: str, line: str, /) -> None: ...


class OnBuilt(Protocol):
    """``stack`` is ready (``built``: built just now)."""

    def __call__(self, stack: str, built: bool, /) -> None: ...


class OnDone(Protocol):
    """A run is stored (called once per run, for progress displays)."""

    def __call__(self, spec: RunSpec, /) -> None: ...


class Confirm(Protocol[Q_contra]):
    """Asked before what costs time or trust: the stacks to build ([(name, download bytes or
    None)]), an audit's Ask, the images a bundle carries; False stops, and nothing is done."""

    def __call__(self, question: Q_contra, /) -> bool: ...


class Busy(Protocol):
    """A context around slow work (``what``: said while it lasts, a spinner's text)."""

    def __call__(self, what: str, /) -> AbstractContextManager[object]: ...


class Step(Protocol):
    """Told as each part of a longer reading begins (the TUI's progress bar counts them)."""

    def __call__(self, what: str, /) -> None: ...


class Counted(Protocol):
    """What an audit's plan holds once its runs are counted (kit.app.audit.Planned): its pairs,
    their runs once each, and the pairs skipped with why ([(pair, why)])."""

    @property
    def pairs(self) -> Sequence[Any]: ...

    @property
    def specs(self) -> Sequence[Any]: ...

    @property
    def skipped(self) -> Sequence[Any]: ...


class Progress(Protocol):
    """What an audit (kit.app.audit.run_audit, run_pairs) reports as it goes, for either kind
    of subject; a front end overrides what it shows (here: nothing)."""

    def building(self, stacks: list[Any], /) -> AbstractContextManager[object]:
        """Around building the stacks: ``stacks`` [(name, download bytes or None)] are the ones
        not built yet (maybe none)."""
        return nullcontext()

    def log(self, stack: str, line: str, /) -> None:
        """A line from building ``stack``."""
        return None

    def built(self, stack: str, made: bool, /) -> None:
        """``stack`` is ready (``made``: built just now)."""
        return None

    def noted(self, line: str, /) -> None:
        """What the plan leaves out, and why, in one line (a stack's pairs skipped)."""
        return None

    def planned(self, plan: Counted, todo: list[Any], /) -> None:
        """The runs are planned; ``todo`` are the ones not stored yet."""
        return None

    def running(self, todo: list[Any], /) -> AbstractContextManager[object]:
        """Around running the ``todo`` runs."""
        return nullcontext()

    def done(self, spec: RunSpec, /) -> None:
        """A run is stored."""
        return None


class ExplainProgress(Protocol):
    """What `kit explain` reports as it goes; a front end overrides what it shows (here:
    nothing)."""

    def planned(self, plan: Any, /) -> None:
        """The cross-fed runs are planned (``plan.feeds`` to make, ``plan.stored`` stored)."""
        return None

    def scanning(self, scans: list[Any], builds: int, runs: int, /) -> None:
        """The release scan is planned: ``builds`` probe stacks to build, ``runs`` runs."""
        return None

    def running(self, what: str, total: int, /) -> AbstractContextManager[OnDone]:
        """Around ``total`` runs of ``what`` ("cross-fed runs", "release scan"): a context
        whose value is called once per run stored."""
        return nullcontext(_nothing)

    def log(self, line: str, /) -> None:
        """A line from building a stack."""
        return None


def _nothing(spec: RunSpec, /) -> None:
    """A run stored, told to no one."""


class _Quiet(Progress):
    """An audit's progress shown nowhere."""


class _QuietExplain(ExplainProgress):
    """An explanation's progress shown nowhere."""


QUIET: Progress = _Quiet()
QUIET_EXPLAIN: ExplainProgress = _QuietExplain()
