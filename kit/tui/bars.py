"""Horizontal bars drawn as text: each bar on the same line as its label, so a plot cannot
draw a value against another row's name, and a test can read it."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ..core.numbers import fmt


def bars(rows: list, width: int, unit: float | None = None, title: str = "") -> Text:
    """``rows``: [(label, value or None)]. Bars scale to the largest value (at least ``unit``,
    drawn as a mark so 1 seed unit stays in view)."""
    label_w = max((len(label) for label, _ in rows), default=5)
    room = max(10, width - label_w - 10)
    top = max([v for _, v in rows if v is not None] + [unit or 0, 1e-300])
    out = Text(title + "\n" if title else "")
    for label, value in rows:
        out.append(f"{label:<{label_w}} ")
        if value is None:
            out.append("-".ljust(room), style="dim")
        else:
            n = round(room * value / top)
            mark = min(room - 1, round(room * unit / top)) if unit else None
            line = ["█" if i < n else ("│" if i == mark else " ") for i in range(room)]
            out.append("".join(line), style="bold")
        out.append(f" {fmt(value)}\n")
    return out


class Bars(Static):
    """A Static that redraws its bars to its width."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self._args = ([], None, "")

    def plot(self, rows: list, unit: float | None = None, title: str = "") -> None:
        self._args = (rows, unit, title)
        self.update(bars(rows, self.size.width or 80, unit, title))

    def on_resize(self) -> None:
        rows, unit, title = self._args
        self.update(bars(rows, self.size.width or 80, unit, title))
