"""A name quoted for the text it goes into: Python, YAML, Markdown, HTML, Rich markup, a plot,
a spreadsheet's cell."""

from __future__ import annotations

import html as _html
import json
import re
import unicodedata

# Markdown's characters that make links, images, raw HTML, entities or table cells of plain
# text. Left alone: what only styles text mid-line and that kit's own sentences use (a `code`
# span, -> arrows, * and ~), `_` (x86_64 and svd_rand read as written) and `#` (a name is never
# at a line's start, where it makes a heading): kit's own report reads as it always has
_MD_SPECIAL = set("\\[]|&")


def _visible(text: str, keep: str = "") -> str:
    """``text`` with each control or format character (Unicode Cc/Cf: a newline, a tab, an
    escape, a right-to-left override) written as Python escapes it (``\\n``, ``\\x1b``), so
    that it shows and ends nothing: a line, a comment, a table row."""
    return "".join(
        repr(c)[1:-1] if c not in keep and unicodedata.category(c) in ("Cc", "Cf") else c
        for c in text
    )


def python(name) -> str:
    """``name`` as a Python string literal (its repr): code may hold it, a comment never."""
    return repr(str(name))


def yaml(name) -> str:
    """``name`` as a YAML double-quoted scalar: a JSON string is one, and escapes every control
    and non-ASCII character, so no newline, colon or dash in it starts a key or an item."""
    return json.dumps(str(name))


def markdown(name) -> str:
    """``name`` as inline Markdown text (a heading's, a list item's or a table cell's): its
    special characters backslash-escaped, control characters visible, on one line."""
    text = _visible(str(name))
    # a < that a > follows could open a tag or an autolink: an entity, so that the raw text
    # holds no tag either (a plain reader of report.md sees no <script>); a lone < (kit's own
    # "b<a" header) opens nothing and reads as written
    tags = "<" in text and ">" in text[text.index("<") :]
    return "".join(
        "&lt;" if c == "<" and tags else "\\" + c if c in _MD_SPECIAL else c for c in text
    )


def html(name) -> str:
    """``name`` as HTML text or an attribute's value: <, >, &, and both quotes escaped."""
    return _html.escape(str(name), quote=True)


def plot(name) -> str:
    """``name`` as matplotlib text: each ``$`` escaped (two would start mathtext, and a formula
    it cannot parse fails the whole figure), control characters visible."""
    return _visible(str(name)).replace("$", r"\$")


def markup(name) -> str:
    """``name`` inside a Rich/Textual markup string: a ``[`` in it opens no tag (a bundle's
    `[@click=app.quit]x.py` is shown, not run)."""
    from rich.markup import escape

    return escape(str(name))


# what a spreadsheet (Excel, LibreOffice, Google Sheets) reads as the start of a formula or a DDE
# call, as OWASP's "CSV Injection" lists it
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def spreadsheet(cell):
    """``cell`` as a CSV cell no spreadsheet runs: text that starts a formula (``=``, ``+``,
    ``-``, ``@``, a tab, a carriage return) gets a leading ``'`` (OWASP), unless it is a plain
    number (``-0.5`` stays one); anything but text is left as it is. Control characters are
    made visible first: a bare carriage return, which Python's CSV writer leaves unquoted,
    would start a row, and a formula after it, in a spreadsheet."""
    if not isinstance(cell, str):
        return cell
    cell = _visible(cell)
    if cell.startswith(_FORMULA_START) and not _NUMBER.fullmatch(cell):
        return "'" + cell
    return cell
