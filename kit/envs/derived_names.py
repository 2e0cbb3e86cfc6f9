"""Derived stacks' names: ``req-BASE-DIGEST``, made from a base stack and requirements, read back
without trusting them (a name is matched, never used as a path)."""

from __future__ import annotations

import re

from ..data.requires import digest
from .catalogue import definitions

PREFIX = "req-"
_NAME = re.compile(r"req-([a-z0-9][a-z0-9._-]{0,80})-([0-9a-f]{10})", re.A)


def derived_name(base: str, requires) -> str:
    return f"{PREFIX}{base}-{digest(requires)}"


def base_of(name) -> str | None:
    """The catalogue stack a derived stack's name is of (None: not a derived stack's name)."""
    m = _NAME.fullmatch(name) if isinstance(name, str) else None
    return m.group(1) if m and m.group(1) in definitions() else None
