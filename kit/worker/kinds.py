"""The kinds a pipeline's outputs may be declared as, and what each needs of its array."""

from __future__ import annotations

import unicodedata

import numpy as np

from .dtypes import MAX_TEXT_CHARS
from .names import shown  # noqa: F401 (how a message quotes a user's name)

OUTPUT_KINDS = (
    "embedding",
    "labels",
    "neighbours",
    "probabilities",
    "truth",
    "array",
    "proteins",
    "train proteins",
    "metrics",
    "classes",
    "centroids",
)
ID_KINDS = ("proteins", "train proteins")  # what kit homology --pipeline maps into a clustering
MAX_ID_CHARS = MAX_TEXT_CHARS  # a protein id (an accession, a FASTA name): text as kit stores it
NEEDS = {  # kind: (dimensions allowed, dtype kinds allowed, what it must be)
    "embedding": ((2,), "f", "a 2-d float array (rows x components)"),
    "labels": ((1,), None, "a 1-d array of labels"),
    "truth": ((1,), None, "a 1-d array of labels"),
    "proteins": ((1,), "US", "a 1-d string array of ids"),
    "train proteins": ((1,), "US", "a 1-d string array of ids"),
    "neighbours": ((2,), "iu", "a 2-d integer array (rows x k)"),
    "probabilities": ((1, 2), "f", "a 1-d or 2-d float array of probabilities in [0, 1]"),
    "metrics": ((1,), "f", "a 1-d float array (one value per metric)"),
    "classes": ((1,), None, "a 1-d array of predicted classes"),
    "centroids": ((2,), "f", "a 2-d float array (clusters x features)"),
}


def kind_problem(kind: str, ndim: int, dtype_kind: str) -> str | None:
    """What a kind's comparison needs of an array's dimensions and dtype that this one lacks
    (None: nothing). A bundle's runs are checked with it from their recorded shapes too."""
    need = NEEDS.get(kind)
    if need and (ndim not in need[0] or (need[1] and dtype_kind not in need[1])):
        return need[2]
    return None


def values_problem(kind: str, a) -> str | None:
    """What a kind needs of an array's values that this one's lack, naming the values (None:
    nothing): probabilities lie in [0, 1], and NaN is none."""
    if kind != "probabilities" or a.size == 0:
        return None
    bad = np.isnan(a) | (a < 0) | (a > 1)
    if not bad.any():
        return None
    said = []
    nans = np.isnan(a)
    if (a < 0).any():
        at = int(np.argmin(np.where(nans, np.inf, a)))
        said.append(f"min {_outside(a.flat[at], a.dtype)} at {_place(a, at)}")
    if (a > 1).any():
        at = int(np.argmax(np.where(nans, -np.inf, a)))
        said.append(f"max {_outside(a.flat[at], a.dtype)} at {_place(a, at)}")
    if nans.any():
        first = _place(a, int(np.argmax(nans)))
        n = int(nans.sum())
        said.append(f"NaN at {first}" if n == 1 else f"{n:,} NaN, the first at {first}")
    return (
        f"probabilities must lie in [0, 1]: {', '.join(said)} ({int(bad.sum()):,} of its "
        f"{a.size:,} values; a score or logit needs a sigmoid or softmax first)"
    )


def _outside(x, dtype, lo: float = 0.0, hi: float = 1.0) -> str:
    """A value outside [lo, hi] written so that it reads outside: 6 significant digits where
    they show it (2, -0.25, 1.5e+30), else the fewest that give the value back in its own dtype
    (1.0000001, not "1"). Plain formatting, for any numpy and Python 3.9+ the worker runs in."""
    x = float(x)
    text = f"{x:.6g}"
    if lo <= float(text) <= hi:
        back = np.dtype(dtype).type
        for digits in range(7, 18):
            text = f"{x:.{digits}g}"
            if back(text) == back(x):
                break
    return text


def a_kind(kind: str) -> str:
    """A kind with its article, as a sentence says it: "an embedding", "a labels"."""
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def _place(a, flat: int) -> str:
    """Where a value of ``a`` is, as a user finds it: its row (and column, for a table)."""
    where = [int(i) for i in (divmod(int(flat), a.shape[1]) if a.ndim == 2 else (flat,))]
    return f"row {where[0]}" + (f", column {where[1]}" if len(where) == 2 else "")


def control_in(name) -> str | None:
    """The first control or format character (Unicode Cc/Cf: a newline, a tab, an escape, a
    right-to-left override) in a declared name, or None: such a name would end a line of
    whatever text it reaches (a comment of a generated test file, a YAML key), so it is refused
    where a pipeline declares it."""
    if not isinstance(name, str) or name.isprintable():  # C-quick: most names are plain
        return None
    return next((c for c in name if unicodedata.category(c) in ("Cc", "Cf")), None)
