"""What killed commands left behind, swept by every command that opens the store."""

from __future__ import annotations

from .atomic import sweep_notes
from .paths import StrPath
from .spools import BUNDLE, sweep, sweep_trash


def sweep_store(root: StrPath) -> int:
    """Remove what killed commands left in a store's folder (a bundle's spool, up to its
    arrays' size; what ``spools.discard`` could not remove): every command that opens the store
    sweeps, not only the next import. Outside the store nothing is removed: the notes of killed
    writes there that left nothing are forgotten (``atomic.sweep_notes``), the rest said by
    `kit store check`. Apart from kit.core.spools, whose rule kit.core.atomic follows: no
    import circle."""
    return sweep(root, BUNDLE) + sweep_trash(root) + sweep_notes(root)
