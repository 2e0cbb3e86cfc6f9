"""One way to write a measured number in a table or a sentence, everywhere kit prints one."""

from __future__ import annotations


def fmt(x, digits: int = 3) -> str:
    """None -> "-"; ints as they are; below 1e-3 and from 1e4 in e-notation (5.3e-05); the rest
    to ``digits`` significant digits without trailing zeros (2.0 flips -> "2", 0.404 seed units
    -> "0.404", 0.0042 -> "0.0042"): one notation from 1e-3 up, so 0.0042 and 0.01026 in one
    report read alike (4.2e-03 beside 0.01026 did not), and 3.6e-04 stays short."""
    if x is None:
        return "-"
    if isinstance(x, (bool, int)):
        return str(int(x))
    if x != x:  # NaN: a measure undefined for these runs (one test class, say)
        return "n/a"
    if x == 0:
        return "0"
    if abs(x) < 1e-3 or abs(x) >= 1e4:
        return f"{x:.1e}"
    return f"{x:.{digits}g}"
