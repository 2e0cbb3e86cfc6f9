"""Tables and paragraphs that fit the terminal: long cells wrapped, wide tables split by columns.

The width is ``COLUMNS`` when set, else the terminal's, else 80 (output to a file or a pipe, as
rich does); ``unwrapped()`` (the commands' ``--wide``) prints whole lines for a script, and
``fitted(columns)`` fits a pane's width for a while (the TUI's, whatever the terminal's).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
from contextlib import contextmanager

from tabulate import tabulate

MIN_WRAP = 12  # a wrapped column narrower than this reads worse than a split table
SHORT = 3  # a word this short (a count, a seed) is not left alone at the start of a line
PIPED = 80  # the width without a terminal or COLUMNS, as rich and argparse assume

_state = {"wide": False, "columns": None}


def unwrapped(on: bool = True) -> None:
    """Print tables and paragraphs whole, at any width (``--wide``), or fit them again."""
    _state["wide"] = on


@contextmanager
def fitted(columns: int | None):
    """Within it, fit ``columns`` (a TUI pane's width: the terminal's is the whole screen's);
    None or 0 (a pane not laid out yet): fit as outside it."""
    before = _state["columns"]
    _state["columns"] = columns if columns and columns > 0 else before
    try:
        yield
    finally:
        _state["columns"] = before


def width() -> int | None:
    """The width to fit, or None under ``unwrapped()``."""
    if _state["wide"]:
        return None
    if _state["columns"]:
        return _state["columns"]
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 20:
        return int(cols)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return PIPED


def _widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _col_widths(rows, headers) -> list:
    return [max([len(str(h)) + 2] + [max((len(x) for x in str(r[i]).splitlines()), default=0)
                                     for r in rows]) for i, h in enumerate(headers)]


# a piece of a line that may end one: a run ending in a break character, or a plain word
_PIECES = re.compile(r"\s+|[^\s\-/_,]*[\-/_,]+|[^\s\-/_,]+")


def _wrap_line(line: str, w: int) -> list:
    """``line`` in lines of at most ``w``, broken at spaces; a word longer than the column is
    broken at '-', '/', '_' and ',' first, and cut only where one piece is longer than the column
    (tabulate's wrap cut "mkl 2024.2.2-Product" into "4.2.2-Produc" / "t"); a word that fits a
    line is never broken ("pipeline two_" / "models.py" read as two names), and a short value
    keeps its word."""
    lines, cur, w = [], "", max(w, 1)  # a column of no width would never end
    for word in line.split():
        joined = f"{cur} {word}" if cur else word
        if len(joined) <= w:
            cur = joined
            continue
        head, _, last = cur.rpartition(" ")
        if len(word) <= SHORT and head.strip() and len(last) + 1 + len(word) <= w:
            # a short value goes with its word: "repeat 1", never "repeat" / "1"
            lines.append(head.rstrip())
            cur = last + " " + word
            continue
        if len(word) <= w:
            lines.append(cur)
            cur = word
            continue
        cur = cur + " " if cur else ""  # too long for any line: its pieces fill this one on
        for piece in _PIECES.findall(word):
            if len(cur) + len(piece) <= w:
                cur += piece
                continue
            if cur.strip():
                lines.append(cur.rstrip())
            while len(piece) > w:
                lines.append(piece[:w])
                piece = piece[w:]
            cur = piece
    if cur.strip() or not lines:
        lines.append(cur.rstrip())
    return lines


def wrap_cell(text: str, w: int) -> str:
    """A cell's text wrapped to ``w`` columns (its own line breaks kept)."""
    return "\n".join(x for line in (text.splitlines() or [""]) for x in _wrap_line(line, w))


def _render(rows, headers, cols, limits) -> str:
    # the cells are wrapped here, not by tabulate's maxcolwidths (which cuts words mid-word)
    # and so is a wrapped column's header (tabulate pads a header by 2): a header wider than
    # its column split the table ("wall s" alone below kit runs)
    return tabulate([[wrap_cell(r[i], limits[i]) if limits[i] else r[i] for i in cols]
                     for r in rows],
                    [wrap_cell(str(headers[i]), max(limits[i] - 2, 1)) if limits[i] else headers[i]
                     for i in cols], disable_numparse=True)


def _shares(widths: list, wrap: tuple, room: int) -> dict:
    """{column: its width} sharing ``room`` among the ``wrap`` columns: one narrower than an
    equal share keeps its own width and leaves the rest to the others (an equal split wrapped
    kit runs' settings at 13 columns beside a 12-column dataset, 12 columns left unused)."""
    out, left = {}, list(wrap)
    while left:
        small = [i for i in left if widths[i] <= room // len(left)]
        if not small:
            break
        for i in small:
            out[i] = widths[i]
            room -= widths[i]
            left.remove(i)
    return {**out, **{i: room // len(left) for i in left}}


def _slack(rows: list, widths: list, room: dict) -> dict:
    """``room`` with what a wrapped column leaves unused (its words wrapped narrower than its
    share: "pipeline" / "two_models.py" used 13 of 21) given to those still wrapping, first to
    those it unwraps whole, the least needy first (a column wrapped at the width it used wraps
    the same)."""
    used = {i: max([1] + [len(x) for r in rows for x in wrap_cell(r[i], room[i]).splitlines()])
            for i in room}
    spare = sum(room[i] - used[i] for i in room)
    out = dict(used)
    for i in sorted((i for i in room if widths[i] > used[i]), key=lambda i: widths[i] - used[i]):
        if widths[i] - used[i] <= spare:
            spare -= widths[i] - used[i]
            out[i] = widths[i]
    wanting = [i for i in room if widths[i] > out[i]]
    return {i: out[i] + (spare // len(wanting) if i in wanting else 0) for i in room}


def share(rows: list, widths: list, wrap: tuple, room: int) -> dict | None:
    """{column: its width}: the ``wrap`` columns of ``rows`` (each needing ``widths``) sharing
    ``room`` by need, as table() shares them (the TUI's tables too); None when a column it
    narrows would be narrower than MIN_WRAP."""
    shares = _shares(widths, wrap, room)
    # a column kept at its own width is not wrapped: only a narrowed one must reach MIN_WRAP
    # (the TUI's 11-column stack status, kept whole, refused the share at 80 columns)
    if any(shares[i] < min(widths[i], MIN_WRAP) for i in wrap):
        return None
    return _slack(rows, widths, shares)


def _word(header) -> int:
    """The narrowest wrapped column that keeps each word of ``header`` whole ("distinguis" /
    "hes it" was kit runs' header at 80 columns): its longest word and tabulate's padding."""
    return max((len(x) for x in str(header).split()), default=0) + 2


def table(rows: list, headers: list, wrap: tuple = (), key: int = 1) -> str:
    """A tabulate table within the width: first the ``wrap`` columns (indices) are wrapped,
    then, if still too wide, the columns are split into several tables, each repeating the
    first ``key`` columns."""
    rows = [[("-" if c is None else str(c)) for c in r] for r in rows]
    everything = list(range(len(headers)))
    limits = [None] * len(headers)
    text = _render(rows, headers, everything, limits)
    w = width()
    if w is None or _widest(text) <= w or not headers:
        return text
    if wrap:
        widths = _col_widths(rows, headers)
        fixed = sum(x + 2 for i, x in enumerate(widths) if i not in wrap)
        room = _shares(widths, wrap, w - fixed - 2 * len(wrap))
        if min(room.values()) >= MIN_WRAP:
            room = _slack(rows, widths, room)
            limits = [max(room[i], _word(headers[i])) if i in wrap else None for i in everything]
            text = _render(rows, headers, everything, limits)
            if _widest(text) <= w:
                return text
        else:
            limits = [max(MIN_WRAP, _word(headers[i])) if i in wrap else None for i in everything]
    groups, current = [], list(range(key))
    for i in range(key, len(headers)):
        if current[key:] and _widest(_render(rows, headers, current + [i], limits)) > w:
            groups.append(current)
            current = list(range(key))
        current.append(i)
    groups.append(current)
    return "\n\n".join(_render(rows, headers, g, limits) for g in groups)


def para(text: str, indent: str = "", first: str | None = None) -> str:
    """A paragraph wrapped to the width (as it is when there is none)."""
    w = width()
    if w is None:
        return (first if first is not None else indent) + text
    return textwrap.fill(text, w, initial_indent=first if first is not None else indent,
                         subsequent_indent=indent, break_on_hyphens=False, break_long_words=True)
