"""Tables and paragraphs that fit the terminal: cells wrapped between words, wide tables split.

The width is ``COLUMNS`` when set, else the terminal's, else 80 (output to a file or a pipe, as
rich does); ``unwrapped()`` (the commands' ``--wide``) prints whole lines for a script, and
``fitted(columns)`` fits a pane's width for a while (the TUI's, whatever the terminal's).

A table that does not fit is fitted in steps, each only as far as it must go: its headers
wrap between their words, its ``wrap`` columns share the room left (a cell wraps at spaces, and
a word longer than its column at a separator: "OPENBLAS_" / "CORETYPE=" / "Sandybridge"), its
columns split into several tables, and only then is a piece of a word still wider than its
column shortened with an ellipsis; ``shortened()`` says whether one was (the command then says
once that ``--wide`` prints it whole, HINT).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

import tabulate as _tabulate

MIN_WRAP = 12  # a wrapped column narrower than this reads worse than a split table
SHORT = 3  # a word this short (a count, a seed) is not left alone at the start of a line
PIPED = 80  # the width without a terminal or COLUMNS, as rich and argparse assume
GAP = 2  # the spaces between two columns (tabulate's "simple" format)
NOTE = "  "  # the indent of a row's note, under its row
HINT = "(cells shortened; --wide for the whole table)"


@dataclass(frozen=True)
class _Fit:
    """What the texts of one command (or one TUI pane's render) fit: ``--wide``, a pane's
    width, and whether a cell was shortened since the command began."""

    wide: bool = False
    columns: int | None = None
    shortened: bool = False


# one per context, not one per process: each TUI worker thread renders its pane at its own
# width while the others render theirs (a thread starts from the default)
_FIT: ContextVar[_Fit] = ContextVar("kit_fit", default=_Fit())  # noqa: B039 - frozen
# tabulate reads its padding from a module global: a render sets it and puts it back, so two
# threads rendering at once take turns there (and only there)
_PADDING = threading.Lock()


def _said_short(short: bool) -> None:
    if short and not _FIT.get().shortened:
        _FIT.set(replace(_FIT.get(), shortened=True))


# where a word may end a line: after a separator that a letter, a digit or an opening
# bracket follows ("OPENBLAS_" / "CORETYPE=" / "Sandybridge", "2024.2.2-" / "Product"); never
# inside a run of marks (a verdict's "=<==<" per run) nor inside a number ("0.3.27"). A list's
# separators first: "svd=1," / "kmeans=0", never "kmeans=" / "0" where the item fits a line.
_BREAK = re.compile(r"(?<=[,;:=/_\-+|&])(?=[^\W_]|[(\[~.])")
_LIST = re.compile(r"(?<=[,;])(?=[^\W_]|[(\[~.])")


def unwrapped(on: bool = True) -> None:
    """Print tables and paragraphs whole, at any width (``--wide``), or fit them again; either
    way nothing is shortened yet (a command starts here)."""
    _FIT.set(replace(_FIT.get(), wide=on, shortened=False))


def shortened() -> bool:
    """Whether a table printed since ``unwrapped()`` had a cell shortened to fit."""
    return _FIT.get().shortened


@contextmanager
def fitted(columns: int | None):
    """Within it, fit ``columns`` (a TUI pane's width: the terminal's is the whole screen's);
    None or 0 (a pane not laid out yet): fit as outside it. What it shortens is the pane's to
    show, not the command's to say (the TUI has no ``--wide``)."""
    before = _FIT.get()
    token = _FIT.set(
        replace(before, columns=columns if columns and columns > 0 else before.columns)
    )
    try:
        yield
    finally:
        _FIT.reset(token)


def width() -> int | None:
    """The width to fit, or None under ``unwrapped()``."""
    fit = _FIT.get()
    if fit.wide:
        return None
    if fit.columns:
        return fit.columns
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 20:
        return int(cols)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return PIPED


def _widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _ellipsis() -> str:
    """ "…" where the output can hold it, else "..." (a terminal of another encoding)."""
    try:
        "…".encode(getattr(sys.stdout, "encoding", None) or "utf-8")
        return "…"
    except (LookupError, UnicodeEncodeError):
        return "..."


def _pieces(word: str, w: int) -> list:
    """``word`` in the pieces a line of ``w`` may end between: its list items (_LIST), and an
    item longer than the line in its pieces (_BREAK)."""
    return [
        p for item in _LIST.split(word) for p in (_BREAK.split(item) if len(item) > w else [item])
    ]


def _wrapped_line(line: str, w: int) -> tuple:
    """(``line`` in lines of at most ``w``, whether a piece was shortened): broken at spaces;
    a word longer than the column at its separators (_BREAK; tabulate's wrap cut "mkl
    2024.2.2-Product" into "4.2.2-Produc" / "t", and "CORETYPE=Sandybri" / "dge"); a piece
    still longer than the column is shortened with an ellipsis, never cut in two. A word that
    fits a line is never broken ("pipeline two_" / "models.py" read as two names), and a short
    value keeps its word."""
    lines, cur, w, short = [], "", max(w, 1), False  # a column of no width would never end
    for word in line.split():
        joined = f"{cur} {word}" if cur else word
        if len(joined) <= w:
            cur = joined
            continue
        head, _, last = cur.rpartition(" ")
        if len(word) <= SHORT < len(last) and head.strip() and len(last) + 1 + len(word) <= w:
            # a short value goes with its word: "repeat 1", never "repeat" / "1" (but a
            # value is not taken from its own word: "seed 1" / "cpu", not "seed" / "1 cpu")
            lines.append(head.rstrip())
            cur = last + " " + word
            continue
        if len(word) <= w:
            lines.append(cur)
            cur = word
            continue
        cur = cur + " " if cur else ""  # too long for any line: its pieces fill this one on
        for piece in _pieces(word, w):
            if len(cur) + len(piece) <= w:
                cur += piece
                continue
            if cur.strip():
                lines.append(cur.rstrip())
            if len(piece) > w:
                mark = _ellipsis()
                piece, short = piece[: max(w - len(mark), 1)] + mark[: w - 1], True
            cur = piece
    if cur.strip() or not lines:
        lines.append(cur.rstrip())
    return lines, short


def _wrapped(text: str, w: int) -> tuple:
    """(a cell's text wrapped to ``w`` columns, its own line breaks kept; whether shortened)."""
    out, short = [], False
    for line in text.splitlines() or [""]:
        lines, s = _wrapped_line(line, w)
        out += lines
        short = short or s
    return "\n".join(out), short


def wrap_cell(text: str, w: int) -> str:
    """A cell's text wrapped to ``w`` columns (its own line breaks kept)."""
    return _wrapped(text, w)[0]


def _lines(text: str) -> list:
    return text.splitlines() or [""]


def _need(cells: list) -> int:
    """The width a column's cells need unwrapped."""
    return max([0] + [len(x) for c in cells for x in _lines(c)])


def _word(text) -> int:
    """The longest word of ``text``: a wrapped header keeps each whole ("distinguis" / "hes
    it" was kit runs' header at 80 columns)."""
    return max((len(x) for x in str(text).split()), default=0)


def _render(rows, headers, cols, limits=None):
    """(the table of columns ``cols``, [the height of each row]); ``limits``: {column: width}
    of a fitted table, whose cells and headers wrap to them (tabulate's own wrap cuts words
    mid-word) and whose headers tabulate then pads no further (its 2 columns of padding split
    kit runs' table at 80 columns)."""
    cells = []
    for r in rows:
        row = []
        for i in cols:
            text = r[i]
            if limits and _need([text]) > limits[i]:
                text, short = _wrapped(text, limits[i])
                _said_short(short)
            row.append(text)
        cells.append(row)
    heads = [headers[i] for i in cols]
    if limits:
        heads = [_wrapped(str(h), limits[i]) for h, i in zip(heads, cols, strict=True)]
        _said_short(any(s for _, s in heads))
        heads = [h for h, _ in heads]
    with _PADDING:
        padding = _tabulate.MIN_PADDING
        _tabulate.MIN_PADDING = 0 if limits else padding
        try:
            text = _tabulate.tabulate(cells, heads, disable_numparse=True)
        finally:
            _tabulate.MIN_PADDING = padding
    return text, [max(len(_lines(c)) for c in row) if row else 1 for row in cells]


def _shares(widths: dict | list, wrap, room: int) -> dict:
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


def _slack(rows: list, widths, room: dict, floor: dict | None = None) -> dict:
    """``room`` with what a wrapped column leaves unused (its words wrapped narrower than its
    share: "pipeline" / "two_models.py" used 13 of 21) given to those still wrapping, first to
    those it unwraps whole, the least needy first (a column wrapped at the width it used wraps
    the same); ``floor``: {column: the least it keeps} (its header's longest word: a column of
    "-" cells shortened its header "confounds" to "co…")."""
    used = {
        i: max(
            [1, (floor or {}).get(i, 0)]
            + [len(x) for r in rows for x in wrap_cell(r[i], room[i]).splitlines()]
        )
        for i in room
    }
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


def _fit(rows, headers, cols, wrap, w, least=MIN_WRAP) -> dict | None:
    """{column: its width} that fits the table of ``cols`` within ``w``: first the headers
    wrapped between their words, the one that gains most first and each only as far as the
    table must narrow, then the ``wrap`` columns sharing what the others leave, none narrower
    than ``least`` (nor than its header's longest word); None when that does not fit."""
    cells = {i: _need([r[i] for r in rows]) for i in cols}
    full = {i: max(cells[i], len(str(headers[i]))) for i in cols}
    need = {i: max(cells[i], _word(headers[i])) for i in cols}
    room = w - GAP * (len(cols) - 1)
    over = sum(full.values()) - room
    if over <= 0:
        return full
    if sum(need.values()) <= room:
        for i in sorted(cols, key=lambda i: need[i] - full[i]):
            cut = min(full[i] - need[i], over)
            full[i] -= cut
            over -= cut
        return full
    wrap = [i for i in cols if i in wrap]
    room -= sum(need[i] for i in cols if i not in wrap)
    if not wrap or room <= 0:
        return None
    shares = _shares(need, wrap, room)
    if any(shares[i] < min(need[i], max(least, _word(headers[i]))) for i in wrap):
        return None
    out = {**need, **_slack(rows, need, shares, {i: _word(headers[i]) for i in wrap})}
    # what the columns leave unused (a wrapped column's cells may use less than its share)
    # goes to headers wrapped at their longest word, the least needy first: kit runs piped,
    # 75 wide at 80 columns, wrapped its "wall s" onto two lines
    used = {
        i: max(
            len(x)
            for t in [headers[i]] + [r[i] for r in rows]
            for x in _lines(wrap_cell(str(t), out[i]))
        )
        for i in wrap
    }
    spare = w - GAP * (len(cols) - 1) - sum({**out, **used}.values())
    for i in sorted(
        (i for i in cols if i not in wrap and out[i] < full[i]), key=lambda i: full[i] - out[i]
    ):
        if full[i] - out[i] <= spare:
            spare -= full[i] - out[i]
            out[i] = full[i]
    return out


def _squeezed(rows, headers, cols, w) -> dict:
    """{column: its width} for a table of ``cols`` that fits ``w`` only if every column wraps
    and its longest words are shortened: the last resort, at least one column each."""
    need = {i: max(_need([r[i] for r in rows]), min(_word(headers[i]), MIN_WRAP)) for i in cols}
    shares = _shares(need, list(cols), max(w - GAP * (len(cols) - 1), len(cols)))
    return {i: max(x, 1) for i, x in _slack(rows, need, shares).items()}


def _groups(rows, headers, wrap, key, w) -> list:
    """[(columns, their widths)]: the columns in as few tables as fit ``w``, each repeating the
    first ``key`` columns and fitted on its own (a column moved to a table of its own had room
    there, yet kept the width the whole table left it: kit verdicts' per run at 12)."""
    keys = list(range(min(key, len(headers))))
    out, current = [], None
    for i in range(len(keys), len(headers)):
        if current is not None:
            limits = _fit(rows, headers, current[0] + [i], wrap, w)
            if limits is not None:
                current = (current[0] + [i], limits)
                continue
            out.append(current)
        cols = keys + [i]
        current = (
            cols,
            _fit(rows, headers, cols, wrap, w)
            or _fit(rows, headers, cols, tuple(cols), w)
            or _squeezed(rows, headers, cols, w),
        )
    if current is None:  # the key columns alone
        current = (keys, _fit(rows, headers, keys, wrap, w) or _squeezed(rows, headers, keys, w))
    return out + [current]


def _noted(text: str, heights: list, notes) -> str:
    """``text`` with each row's note (lines, or None) under the row's last line, indented."""
    if not notes or not any(notes):
        return text
    lines = text.splitlines()
    # the header ends at its rule of dashes (a wrapped header takes several lines)
    head = next(i for i, ln in enumerate(lines) if set(ln) <= {"-", " "} and ln.strip()) + 1
    out, at = lines[:head], head
    for height, note in zip(heights, notes, strict=False):
        out += lines[at : at + height]
        at += height
        for line in [note] if isinstance(note, str) else note or []:
            out.append(
                para(
                    line.strip(),
                    NOTE + " " * (len(line) - len(line.lstrip()) + 2),
                    NOTE + " " * (len(line) - len(line.lstrip())),
                )
            )
    return "\n".join(out + lines[at:])


def table(
    rows: list, headers: list, wrap: tuple = (), key: int = 1, notes: list | None = None
) -> str:
    """A tabulate table within the width: if too wide, its headers wrap, then the ``wrap``
    columns (indices) wrap, then the columns are split into several tables, each repeating
    the first ``key`` columns, and only then are the words still too wide shortened.

    ``notes``: a row's details on lines of their own under it (a str or a list of lines, or
    None): what a column would squeeze (the doctor's BLAS libraries, why a stack cannot be
    built) read in whole lines; they stay with the first table of a split one."""
    rows = [[("-" if c is None else str(c)) for c in r] for r in rows]
    everything = list(range(len(headers)))
    text, heights = _render(rows, headers, everything)
    w = width()
    if w is None or not headers or _widest(text) <= w:
        return _noted(text, heights, notes)
    tables = []
    for n, (cols, limits) in enumerate(_groups(rows, headers, wrap, key, w)):
        text, heights = _render(rows, headers, cols, limits)
        tables.append(_noted(text, heights, notes if n == 0 else None))
    return "\n\n".join(tables)


_RUN = re.compile(r"(?<=\S)\s+(?=\S)")  # whitespace between words


def para(text: str, indent: str = "", first: str | None = None) -> str:
    """A paragraph wrapped to the width (as it is when there is none); a word longer than a
    line is broken at its separators, as a table's cell is, never inside a word."""
    w = width()
    first = first if first is not None else indent
    # a run of spaces or a line break inside is how the text was assembled (a message split
    # over source lines), not a break the paragraph keeps: textwrap would keep it as spaces
    text = _RUN.sub(" ", text)
    if w is None:
        return first + text
    out = []
    for line in textwrap.wrap(
        text,
        w,
        initial_indent=first,
        subsequent_indent=indent,
        break_on_hyphens=False,
        break_long_words=False,
    ):
        if len(line) <= w:
            out.append(line)
            continue
        lead = first if not out else indent
        body, short = _wrapped_line(line[len(lead) :], max(w - max(len(first), len(indent)), 1))
        _said_short(short)
        out += [lead + body[0]] + [indent + x for x in body[1:]]
    return "\n".join(out)
