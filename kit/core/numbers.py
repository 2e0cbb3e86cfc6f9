"""One way to write a measured number in a table or a sentence, everywhere kit prints one."""

from __future__ import annotations

import math


def fmt(x: float | None, digits: int = 3) -> str:
    """None -> "-"; ints as they are; below 1e-3 and from 1e4 in e-notation (5.3e-05); the rest
    to ``digits`` significant digits without trailing zeros (2.0 flips -> "2", 0.404 seed units
    -> "0.404", 0.0042 -> "0.0042"): one notation from 1e-3 up, so 0.0042 and 0.01026 in one
    report read alike (4.2e-03 beside 0.01026 did not), and 3.6e-04 stays short. The line is
    drawn on the number as printed: 0.000999 reads "0.001", 1234 reads "1230"."""
    if x is None:
        return "-"
    if isinstance(x, (bool, int)):
        return str(int(x))
    if x != x:  # NaN: a measure undefined for these runs (one test class, say)
        return "n/a"
    if x == 0:
        return "0"
    if abs(x) < 1e-3:
        e = f"{x:.1e}"
        # the line is drawn on the number as printed: 0.000999 prints as 1.0e-03, which is
        # 0.001, so it reads "0.001" as 0.001 itself does (not 1.0e-03 over 0.001)
        return e if abs(float(e)) < 1e-3 else ("-0.001" if x < 0 else "0.001")
    short = f"{x:.{digits}g}"
    if abs(float(short)) >= 1e4:  # 9999.7 rounds to 1e+04: the e-notation side
        return f"{x:.1e}"
    # 1234 to 3 digits: "1230", not "1.23e+03" (below 1e4 is the plain side of the line)
    return f"{float(short):.0f}" if "e" in short else short


def span(seconds: float) -> str:
    """A measured duration in the unit a person plans by: "40 s", "12 min", "3.5 h"; one that
    is no duration (NaN, infinite, negative: a forged or broken record) is "an unknown time"."""
    if not is_duration(seconds):
        return "an unknown time"
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def is_duration(x: object) -> bool:
    """Whether a recorded time is one: a number, finite, not negative (a bundle's may be forged:
    JSON reads -Infinity)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0
