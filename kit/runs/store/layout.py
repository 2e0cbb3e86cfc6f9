"""The store folder's own shape: an index that holds something, an ``arrays`` that is a folder.

Both are checked before the index is opened: SQLite takes an empty file for a new database (so a
store.sqlite emptied beside its arrays would read as a store without runs, and its arrays as
orphans), and an ``arrays`` that is a file fails every reader. Each is one Damaged line; repair
moves the thing aside (renamed, never deleted) and the store goes on from a new index or folder.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path

from ...core.errors import Damaged

INDEX = "store.sqlite"
RECORDS = "records"  # the runs' records beside the arrays (kit.runs.store.kept)


def has_records(root: Path) -> bool:
    """The store keeps its runs' records beside the arrays: a lost index can be rebuilt."""
    return any((Path(root) / RECORDS).glob("??/*.json"))


def _arrays_held(arrays: Path) -> int:
    return sum(1 for _ in arrays.glob("??/*.npy")) if arrays.is_dir() else 0


def problems(root: Path) -> list[tuple[Path, str]]:
    """(path, why) of what is not in the shape a store has."""
    out = []
    index, arrays = root / INDEX, root / "arrays"
    try:
        st = os.stat(arrays)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        out.append((arrays, "is not a folder: the store's arrays live there"))
    try:
        empty = os.stat(index).st_size == 0
    except FileNotFoundError:
        empty = False
    # an empty file beside no arrays is a store being made (SQLite writes its header at once)
    if empty and (n := _arrays_held(arrays)):
        out.append((index, f"is empty (0 bytes) while {n} array file(s) lie beside it"))
    return out


def check(root: Path) -> None:
    """Damaged, in one line, for the first thing out of shape."""
    for path, why in problems(Path(root)):
        if has_records(root):  # the runs' records beside the arrays hold what it held
            raise Damaged(
                f"{path} {why}; `kit store check --repair` moves it aside (kept) and "
                "rebuilds the index from the runs' records beside the arrays"
            )
        raise Damaged(
            f"{path} {why}; `kit store check --repair` moves it aside (kept) and "
            "drops the runs it held; the next `kit run` makes them again"
        )


def set_index_aside(root: Path, why: str, also: Iterable[str] = ()) -> list[str]:
    """Move the index (with its -wal, -shm and ``also``) aside; what was moved, as one line."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    src, moved = Path(root) / INDEX, []
    for name in [INDEX, f"{INDEX}-wal", f"{INDEX}-shm", *also]:
        if os.path.lexists(Path(root) / name):
            os.replace(Path(root) / name, Path(root) / f"{name}.damaged-{stamp}")
            moved.append(name)
    return [
        f"{src} {why}: moved to {src}.damaged-{stamp} (with {', '.join(moved[1:]) or 'nothing else'}); "
        "a new index is made from the records beside the arrays"
    ]


def repair(root: Path) -> list[str]:
    """Move aside what is out of shape (the index with its -wal and -shm); what was moved, as
    lines. The next open makes a new index (its arrays then predate it: set aside by the check,
    never deleted) or a new arrays folder (this machine's runs then miss theirs: dropped)."""
    done = []
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for path, why in problems(Path(root)):
        names = [path.name] + ([f"{INDEX}-wal", f"{INDEX}-shm"] if path.name == INDEX else [])
        for name in names:
            src = path.parent / name
            if os.path.lexists(src):
                dest = src.with_name(f"{name}.damaged-{stamp}")
                os.replace(src, dest)
                if name == path.name:
                    done.append(f"{src} {why}: moved to {dest}")
    return done
