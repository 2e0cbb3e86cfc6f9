"""Significant digits: on how many leading digits (and bits) two runs' numbers agree.

The definitions are those of the numerical-reproducibility literature as the `significantdigits`
package implements them (Sohier et al. 2021, "general" method, relative error, run a as the
reference): element i keeps

    bits_i = max{k in [0, m] : |b_i / a_i - 1| <= 2**-k}

where m is the mantissa width of the wider dtype (52 for float64, 23 for float32), and
digits = bits x log10(2). Bitwise identical numbers keep all m bits. A stage is summarised by
the median over its elements (what most numbers keep) and the minimum (the worst one).
tests/analysis/test_digits.py checks every element against the package itself.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
from numpy.typing import ArrayLike

LOG10_2 = float(np.log10(2.0))


class Agreement(TypedDict):
    """On how many leading bits and digits two runs' stage agrees: median and worst element."""

    bits: float
    digits: float
    bits_min: float
    digits_min: float
    max_bits: int


def element_bits(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """Bits on which each element of ``b`` agrees with the reference ``a`` (same shapes)."""
    a, b = np.asarray(a), np.asarray(b)
    m = int(np.finfo(np.result_type(a.dtype, b.dtype, np.float32)).nmant)
    a64, b64 = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    # in place, one array: a comparison runs this on every stage of every pair on the driver
    # (the analysis ahead), and the copies of the plain formula cost 8x the arithmetic
    with np.errstate(divide="ignore", invalid="ignore"):
        bits = np.divide(b64, a64)
        bits -= 1.0
        np.abs(bits, out=bits)
        np.log2(bits, out=bits)
        np.negative(bits, out=bits)
        np.floor(bits, out=bits)  # floor(-log2 |b/a - 1|)
    np.nan_to_num(bits, copy=False, nan=0.0, posinf=m, neginf=0.0)
    np.clip(bits, 0, m, out=bits)
    # a zero reference: equal numbers keep everything, anything else keeps nothing
    zero = a64 == 0
    if zero.any():
        bits[zero] = np.where(b64[zero] == 0, m, 0)
    nan = np.isnan(a64) | np.isnan(b64)
    if nan.any():
        bits[nan] = 0
    return bits


def agreement(a: ArrayLike, b: ArrayLike) -> Agreement | None:
    """{"digits", "bits", "digits_min", "bits_min", "max_bits"} of one stage (None: nothing to
    compare, or shapes that differ)."""
    a, b = np.asarray(a), np.asarray(b)
    if (
        a.shape != b.shape
        or a.size == 0
        or not (np.issubdtype(a.dtype, np.floating) and np.issubdtype(b.dtype, np.floating))
    ):
        return None
    m = int(np.finfo(np.result_type(a.dtype, b.dtype, np.float32)).nmant)
    if a.dtype == b.dtype and np.array_equal(a, b):  # no NaN (NaN != NaN): every bit, at once
        med = low = float(m)
    else:
        bits = element_bits(a, b)
        med, low = float(np.median(bits)), float(bits.min())
    return {
        "bits": med,
        "digits": med * LOG10_2,
        "bits_min": low,
        "digits_min": low * LOG10_2,
        "max_bits": m,
    }
