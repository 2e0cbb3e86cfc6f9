"""A pipeline's protein id outputs, checked: kit homology --pipeline maps them into a clustering."""

from __future__ import annotations

import numpy as np

from .kinds import ID_KINDS as _KINDS
from .kinds import MAX_ID_CHARS, shown

# what each id output holds: "proteins" is not every protein, but the test rows' (drive 35 #9)
_HOLDS = {
    "proteins": "holding the test rows' ids (the train rows' are 'train proteins')",
    "train proteins": "holding the train rows' ids (the test rows' are 'proteins')",
}


def declared_twice(kinds: dict):
    """What is wrong with KINDS's protein outputs (one of each kind at most), or None."""
    for kind in _KINDS:
        # homology --pipeline reads one list of each: with two, which is the test set is a guess
        named = [out for out, k in kinds.items() if k == kind]
        if len(named) > 1:
            return (
                f"KINDS names {len(named)} {kind} outputs ({', '.join(map(shown, named))}): "
                f"declare one, {_HOLDS[kind]}"
            )
    return None


def wrong_ids(out: dict, kinds: dict):
    """What is wrong with the ids run returned, or None: each output's ids distinct, the
    "proteins" output one id per row of the truth output, in its order, no id longer than
    MAX_ID_CHARS (a bundle refuses longer: its runs could not travel), and no test protein among
    the train proteins."""
    truth = [k for k, v in kinds.items() if v == "truth"]
    for key in (k for k, v in kinds.items() if v in _KINDS):
        ids = out[key]
        # the dtype's width, as a bundle's import reads it: the longest id, as numpy made it
        wide = ids.dtype.itemsize // (4 if ids.dtype.kind == "U" else 1)
        if wide > MAX_ID_CHARS:
            return (
                f"output {shown(key)} ({kinds[key]}) holds ids of {wide} characters: a "
                f"protein id (an accession) is at most {MAX_ID_CHARS}"
            )
        twice = _twice(ids)
        if twice:
            return (
                f"output {shown(key)} ({kinds[key]}) holds {twice}: one protein id "
                f"(accession) per row"
            )
        if kinds[key] == "proteins" and truth and len(ids) != len(out[truth[0]]):
            return (
                f"output {shown(key)} (proteins) holds {len(ids)} ids but {shown(truth[0])} "
                f"(truth) {len(out[truth[0]])} rows: one protein id per truth row, in its "
                f"order"
            )
    test = [k for k, v in kinds.items() if v == "proteins"]
    train = [k for k, v in kinds.items() if v == "train proteins"]
    both = sorted(set(_text(out[test[0]])) & set(_text(out[train[0]]))) if test and train else []
    if both:
        more = f" (and {len(both) - 1} more)" if len(both) > 1 else ""
        return (
            f"id {shown(both[0])}{more} is in both {shown(test[0])} (proteins) and "
            f"{shown(train[0])} (train proteins): a test protein cannot also be a train "
            f"protein"
        )
    return None


def _twice(ids) -> str | None:
    """The first id ``ids`` repeats, named with its two rows, and how many repeats more (None:
    each id is there once)."""
    seen: dict = {}
    for row, v in enumerate(_text(ids)):
        if v in seen:
            more = len(ids) - len(np.unique(ids)) - 1
            return f"the id {shown(v)} twice (rows {seen[v]} and {row})" + (
                f" and {more:,} more repeat{'s' if more > 1 else ''}" if more else ""
            )
        seen[v] = row
    return None


def _text(a) -> list:
    """Ids as text: a bytes id and the same id as str are one protein."""
    return [v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else v for v in a.tolist()]
