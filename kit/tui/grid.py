"""DataTables filled with each column as wide as its widest cell, set as the cells are added."""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual.strip import Strip
from textual.widgets import DataTable

from ..views.quoting import markup


def _width(cell) -> int:
    # measured as DataTable draws it: a str is markup
    if isinstance(cell, Text):
        return cell.cell_len
    return (Text.from_markup(cell) if isinstance(cell, str) else Text(str(cell))).cell_len


class Grid(DataTable):
    """A DataTable that shows each column whole or not at all: scrolled sideways, Textual crops
    the line at any character, and the Verdicts table at 80x24 showed a column cut at its
    edges ("n.s." as ".s.", 10 as "0"). A column the view reaches only in part is drawn blank
    (its cells' background) but for an ellipsis on the side the view goes on to, so no number
    or header is ever read cut and the reader sees that there is more to scroll to."""

    def _render_line(self, y: int, x1: int, x2: int, base_style):
        strip = super()._render_line(y, x1, x2, base_style)
        widths = [c.get_render_width(self) for c in self.ordered_columns]
        fixed = sum(widths[: self.fixed_columns])
        width, start, cuts = self.size.width, 0, []
        for i, w in enumerate(widths):
            if i >= self.fixed_columns:
                # the scrolled part shows the row from x1 + fixed at the strip's ``fixed``
                a, b = start - x1, start + w - x1
                shown = (max(a, fixed), min(b, width))
                if shown[0] < shown[1] and (a < fixed or b > width):
                    cuts.append((*shown, b > width))
            start += w
        for a, b, right in cuts:
            n = b - a
            # the mark only where the part hides something: not on the lines under the rows
            hides = strip.crop(a, b).text.strip()
            text = (
                " " * n
                if n < 2 or not hides
                else " …" + " " * (n - 2)
                if right
                else " " * (n - 2) + "… "
            )
            blank = Strip([Segment(text, base_style)], n)
            strip = Strip.join([strip.crop(0, a), blank, strip.crop(b, width)])
        return strip


def fill(
    table: DataTable,
    head: list,
    rows: list,
    keys: list | None = None,
    room: int | None = None,
    wrap: tuple = (),
) -> None:
    """Replace ``table``'s columns and rows. Textual measures new rows only when the table is
    next idle, and keeps what it drew before that: a tab painted as it opens (6, then 4) showed
    `thread` and `0.4` for 0.438. A fixed width per column, from every cell, draws them whole
    the first time. Where they need more than ``room`` (the table's width, padding included)
    the ``wrap`` columns (plain text) share what the others leave by need, as kit's CLI tables
    do, each header whole and each row as tall as its cells wrap to."""
    from ..views.fit import share  # with tabulate: not before the app's first paint

    table.clear(columns=True)
    # DataTable reads a str cell as markup: a name in one (a bundle's host, a stack's) is
    # text, never a tag (`[@click=app.quit]`), so each is quoted for it here, once for all
    rows = [[markup(c) if isinstance(c, str) else c for c in r] for r in rows]
    widths = [max([_width(label)] + [_width(r[i]) for r in rows]) for i, label in enumerate(head)]
    pad = 2 * table.cell_padding
    tall = False
    if room is not None and room > 0 and wrap and sum(widths) + pad * len(widths) > room:
        fixed = sum(w + pad for i, w in enumerate(widths) if i not in wrap)
        shares = share(
            [[str(c) for c in r] for r in rows], widths, wrap, room - fixed - pad * len(wrap)
        )
        if shares is not None:  # else too narrow to wrap: the table scrolls sideways
            widths = [
                max(shares[i], _width(head[i])) if i in wrap else w for i, w in enumerate(widths)
            ]
            tall = True
    for label, w in zip(head, widths, strict=True):
        table.add_column(label, width=w)
    for i, r in enumerate(rows):
        # height None: as tall as the cells wrap to (Textual wraps a cell of a taller row)
        table.add_row(*r, key=keys[i] if keys else None, height=None if tall else 1)
