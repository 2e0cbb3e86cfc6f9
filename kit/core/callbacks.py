"""The callbacks a front end (the CLI, the TUI) hands to kit's verbs, as types.

A verb that builds, runs or imports tells its caller what happens (``log``, ``on_done``) and
asks before what costs time or trust (``confirm``, ``trust``). The parameters are positional-only:
any function or lambda of that shape fits, whatever its parameters are named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

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
