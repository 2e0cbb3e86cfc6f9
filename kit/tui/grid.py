"""DataTables filled with each column as wide as its widest cell, set as the cells are added."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable


def _width(cell) -> int:
    # measured as DataTable draws it: a str is markup
    if isinstance(cell, Text):
        return cell.cell_len
    return (Text.from_markup(cell) if isinstance(cell, str) else Text(str(cell))).cell_len


def fill(table: DataTable, head: list, rows: list, keys: list | None = None) -> None:
    """Replace ``table``'s columns and rows. Textual measures new rows only when the table is
    next idle, and keeps what it drew before that: a tab painted as it opens (6, then 4) showed
    `thread` and `0.4` for 0.438. A fixed width per column, from every cell, draws them whole
    the first time."""
    table.clear(columns=True)
    for i, label in enumerate(head):
        table.add_column(label, width=max([_width(label)] + [_width(r[i]) for r in rows]))
    for i, r in enumerate(rows):
        table.add_row(*r, key=keys[i] if keys else None)
