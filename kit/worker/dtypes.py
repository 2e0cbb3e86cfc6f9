"""THE dtypes a stored array may have: what a run returns, the store takes, export and import carry.

One set for all four, so what a run stores always travels: plain numbers with no padding
(bool, int8-int64, uint8-uint64, float32, float64) and, for a lab's outputs, fixed-width text
(ids, labels) of 1 to MAX_TEXT_CHARS characters. Each is held in one canonical form
(little-endian, a bool's bytes 0 or 1), so an array's hash is a function of its values: a
longdouble's padding, a record's gaps or a byte order never reach it. The worker imports this
module (standard library and numpy, Python 3.9+); kit's side imports it from here.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

NUMBERS = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
)
MAX_TEXT_CHARS = 256  # an id (an accession, a FASTA name) or a label is far shorter
_NUMBER_STRS = frozenset(np.dtype(n).newbyteorder("<").str for n in NUMBERS)
# fixed-width text as a .npy header states it: unicode little-endian, bytes byte-order-free
_TEXT = re.compile(r"(?:<U|\|S)([1-9][0-9]{0,2})")


def stored(text: bool) -> str:
    """What kit stores, in words, from NUMBERS and the text rule themselves: a refusal never
    names another set than the check holds. ``text``: a lab's outputs, which may be text."""
    words = [*NUMBERS, f"fixed-width text of 1 to {MAX_TEXT_CHARS} characters a value"][
        : len(NUMBERS) + bool(text)
    ]
    return ", ".join(words[:-1]) + " and " + words[-1]


def recorded_problem(dtype: str, text: bool) -> str | None:
    """Why a recorded dtype string (a manifest's, a bundle's) is not one kit stores, or None.
    ``text``: a lab's run, whose outputs may also be fixed-width text. Read as a string first:
    a forged one ("<f1", a megabyte of text) never reaches np.dtype."""
    if not isinstance(dtype, str):
        return "is not a dtype string"
    if dtype in _NUMBER_STRS:
        return None
    m = _TEXT.fullmatch(dtype)
    if m and text:
        if int(m.group(1)) > MAX_TEXT_CHARS:
            return f"holds text over {MAX_TEXT_CHARS} characters a value"
        return None
    return (
        "is not a plain number type"
        + (" nor fixed-width text" if text else "")
        + f" (kit stores {stored(text)}; little-endian)"
    )


def output_problem(dtype: np.dtype) -> str | None:
    """Why a lab's output of ``dtype`` cannot be stored, as the fix: what to cast it to (None:
    it can, once in canonical form)."""
    kind, size = dtype.kind, dtype.itemsize
    if kind in "biu" or (kind == "f" and size in (4, 8)):
        return None
    if kind in "US":
        chars = size // 4 if kind == "U" else size
        if chars <= MAX_TEXT_CHARS:
            return None
        return (
            f"text of {chars:,} characters a value: kit stores text of at most "
            f"{MAX_TEXT_CHARS} (ids, labels); return numbers, or shorter text"
        )
    if kind == "f":
        to = "float32" if size < 4 else "float64"
        return (
            f"{_named(dtype)}: cast it to {to} (np.asarray(x, dtype=np.{to})); "
            f"kit stores {stored(True)}"
        )
    if kind == "c":
        to = "float32" if size <= 8 else "float64"
        return (
            f"{dtype.name}: return its real and imaginary parts as two {to} outputs "
            f"(x.real.astype(np.{to}), x.imag.astype(np.{to})); kit stores {stored(True)}"
        )
    if kind in "Mm":
        return (
            f"{dtype.name}: cast it to int64 (x.astype(np.int64), its count of "
            f"{np.datetime_data(dtype)[0]} units); kit stores {stored(True)}"
        )
    if kind == "V" and dtype.names:
        fields = ", ".join(dtype.names[:3]) + (", ..." if len(dtype.names) > 3 else "")
        return (
            f"a structured array (fields {fields}): return each field as an output of its "
            f"own (x[{dtype.names[0]!r}]); kit stores {stored(True)}"
        )
    if kind == "V":
        return (
            f"void ({size} bytes a value): return its bytes as uint8 "
            f"(x.view(np.uint8).reshape(x.shape + (-1,))); kit stores {stored(True)}"
        )
    return (
        f"{dtype}: cast it to float64 (np.asarray(x, dtype=np.float64)); kit stores {stored(True)}"
    )


def _named(dtype: np.dtype) -> str:
    """A float's name as the user wrote it: longdouble rather than float128 (x86's 80 bits)."""
    if dtype == np.dtype(np.longdouble):
        return "longdouble" if dtype.name == "longdouble" else f"longdouble ({dtype.name})"
    return dtype.name


def sha256_of(a: np.ndarray) -> str:
    """The stage hash: SHA-256 of the C-contiguous bytes (dtype and shape kept beside it),
    hashed where they lie: a C-order array is not copied (tobytes() held a big output twice)."""
    a = np.ascontiguousarray(a)
    return hashlib.sha256(a.reshape(-1).view(np.uint8) if a.nbytes else b"").hexdigest()


def canonical(a: np.ndarray) -> np.ndarray:
    """``a`` as kit stores it (an allowed dtype): C-contiguous, little-endian, a bool's bytes 0
    or 1 (numpy's views can hold others, which would hash apart from equal values)."""
    a = np.ascontiguousarray(a)
    if a.dtype.str[0] == ">":  # .str always states the order: "<", ">" or "|"
        a = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<")))
    if a.dtype.kind == "b":
        a = np.asarray(a.view(np.uint8) != 0)
    return a
