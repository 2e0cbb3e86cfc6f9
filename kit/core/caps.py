"""Size caps a lab can raise by environment variable (MiB), and the one that holds a stage
array wherever it goes: what a run may store is what export writes and import reads.

``KIT_BUNDLE_MAX_ARRAY_MIB`` (one stage array, default 256: over 10x the largest stage a
6,000-protein run writes) is checked as a run's outputs are read, as a run is exported and as a
bundle is imported: a run whose stage could not travel fails at run time, never stored.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .errors import KitError

MIB = 2**20
STAGE_VAR, STAGE_MIB = "KIT_BUNDLE_MAX_ARRAY_MIB", 256


def cap(name: str, default_mib: int) -> int:
    """A size cap in bytes from the environment variable ``name`` (MiB), else the default."""
    raw = os.environ.get(name)
    if raw is None:
        return default_mib * MIB
    try:
        value = int(raw)
        assert value > 0
    except (ValueError, AssertionError):
        raise KitError(f"{name}={raw!r} is not a positive whole number of MiB") from None
    return value * MIB


def stage_cap() -> int:
    """What one stage array may hold, in bytes."""
    return cap(STAGE_VAR, STAGE_MIB)


def stage_bytes(dtype: str, shape: Sequence[int]) -> int:
    """The bytes of data a stage of ``dtype`` (a known dtype string) and ``shape`` holds."""
    import numpy as np

    return np.dtype(dtype).itemsize * int(np.prod(shape, dtype=object))


def stage_too_big(nbytes: int, verb: str = "holds") -> str | None:
    """Why a stage of ``nbytes`` bytes of data cannot be stored or travel, or None: one phrase
    ("holds 1,526 MiB, above the 256 MiB a stage may hold (...)") for every place that asks."""
    one = stage_cap()
    if nbytes <= one:
        return None
    return (
        f"{verb} {nbytes / MIB:,.0f} MiB, above the {one // MIB:,} MiB a stage may hold "
        f"({STAGE_VAR} raises it)"
    )
