"""4. Budget: one row per factor (raw or in seed units), a factor's pairs, bars and curves."""

from __future__ import annotations

import math
from typing import Any, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from ..core import factors
from ..core.numbers import fmt
from ..core.subject import Subject
from ..views.quoting import markup
from .bars import Bars
from .errors import guarded
from .grid import Grid, fill
from .pane import Pane

# no dataset the tabs can read yet: an empty table, and why
NO_BUDGET: dict[str, Any] = {
    "rows": [],
    "dataset": {},
    "yardstick": None,
    "note": "no dataset yet",
    "curves": {},
}


def flips_bars(b: dict) -> tuple:
    """[(factor, largest median flips in seed units)] for the bars (the yardsticks are 1 by
    definition and left out), and whether the values are seed units or raw counts."""
    from ..views.tables import factor_label

    rows = [r for r in b["rows"] if not factors.is_yardstick(r.factor)]
    units = b["yardstick"] is not None
    out = []
    for r in rows:
        vals = [m.flips_median_seed_units if units else m.flips_median for m in r.models.values()]
        vals = [v for v in vals if v is not None]
        out.append((factor_label(r.factor, r.level), max(vals) if vals else None))
    return out, units


class BudgetPane(Pane):
    """The budget table (raw or seed units), a factor's pairs, and flips per factor."""

    MAIN = "#budget-table"
    BINDINGS = [
        Binding("u", "units", "Units"),
        Binding("p", "view('bars-scroll')", "Bars"),
        Binding("a", "view('amplify-plot')", "Curves"),
        Binding("x", "explain", "Why"),
    ]
    seed_units = False
    _rows: list = []
    # one at a time fills the pane
    _VIEWS = ("budget-table", "bars-scroll", "amplify-plot", "explain-scroll")

    def compose(self) -> ComposeResult:
        yield Static(id="budget-head")
        # wider than 80 columns: the factor's name (the first column) stays as it scrolls
        yield Grid(id="budget-table", cursor_type="row", zebra_stripes=True, fixed_columns=1)
        with VerticalScroll(id="bars-scroll", can_focus=True):
            yield Bars(id="budget-bars")
        # the curves view: the plot (mounted when first drawn: plotext is imported then, not
        # before the first paint), or (no perturb runs) why there is none; plotext drops a
        # title wider than its box, which left an empty box at 80x24
        with Vertical(id="amplify-plot"):
            yield Static(id="amplify-none")
        with VerticalScroll(id="explain-scroll", can_focus=True):
            yield Static(id="explain-text")
        yield Grid(id="pairs", cursor_type="row", fixed_columns=1)

    def on_mount(self) -> None:
        for w in ("#pairs", "#bars-scroll", "#amplify-plot", "#explain-scroll"):
            self.query_one(w).display = False
        # focusable, so that once shown it holds the focus and u, p, a keep reaching this pane
        # (a hidden table cannot: the keys went nowhere until a digit)
        self.query_one("#amplify-plot").can_focus = True

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # a pipeline's budget is kit's text: it has no units to switch, no bars and no curves
        # (p and a showed an empty pane over it); the footer offers only what applies
        return not (action in ("units", "view") and getattr(self, "_text_shown", False))

    def action_units(self) -> None:
        self.seed_units = not self.seed_units
        self.redraw()

    def action_view(self, view: str) -> None:
        """Show ``view`` instead of the table (the same key again: back to the table)."""
        current = next(v for v in self._VIEWS if self.query_one(f"#{v}").display)
        target = "budget-table" if view == current else view
        for v in self._VIEWS:
            self.query_one(f"#{v}").display = v == target
        self.query_one("#pairs").display = False
        # focused once shown: the keys (arrows to scroll, p/a/u) keep reaching this pane
        self.call_after_refresh(self.query_one(f"#{target}").focus)

    @guarded
    def action_explain(self) -> None:
        """The highlighted row's explanation from the stored cross-fed runs (x again: back to
        the table); nothing is run from here: a row not explained yet says what would run."""
        if getattr(self, "_text_shown", False):  # a lab file's budget text: x swaps it with
            if getattr(self, "_scan_shown", False):  # its stored release scans, and back
                self._scan_shown = False
                self.query_one("#explain-text", Static).update(self._file_budget)
                return None
            self._scan_shown = True
            return self.load(self._file_explained, self._draw_explained, "explain")
        if self.query_one("#explain-scroll").display:
            return self.action_view("explain-scroll")
        t = self.query_one("#budget-table", DataTable)
        if not t.row_count:
            return None
        name = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value
        assert name is not None  # each row is added with a key: its factor's label (_draw_budget)
        return self.load(lambda: self._explained(name, self._rows), self._draw_explained, "explain")

    def _draw_explained(self, text: str) -> None:
        self.query_one("#explain-text", Static).update(text)
        if not self.query_one("#explain-scroll").display:
            self.action_view("explain-scroll")

    def _explained(self, name: str, rows: list) -> str:
        from ..views.explain import stored_lines

        app, (factor, _, level) = self.app, name.partition("=")
        subject = self._shown()
        x = app.kit.stored_explanation(subject, factor, rows, level=level)
        if not x["pairs"] and x["runs"]:  # nothing of it stored: what `kit explain` would run
            n = app.kit.stored_explanation(subject, factor, rows)["runs"]  # every level's
            lines = [
                f"not explained yet: `kit explain {factor}` (it runs {n} cross-fed "
                f"run{'s' if n != 1 else ''})"
            ]
        else:
            lines = stored_lines(x) or [f"{name}: no pair to explain"]
        return (
            f"[b]Where {markup(name)}'s differences start[/] (stored cross-fed runs; "
            "x: back)\n\n" + "\n\n".join(markup(ln) for ln in lines)
        )

    def _file_explained(self) -> str:
        """A lab file's stored release scans (`kit explain FACTOR --pipeline FILE` makes
        them), each factor's pairs with where each output changes; nothing is run."""
        from ..views.explain import stored_lines

        found = self.app.kit.stored_output_explanations(self._shown())
        lines = [ln for x in found for ln in [f"{x['factor']}:"] + stored_lines(x)]
        return (
            "[b]Where your file's outputs change[/] (stored release scans; x: back)\n\n"
            + "\n\n".join(markup(ln) for ln in lines)
            if lines
            else "[b]No release scan of this file is stored[/] (x: back)\n\n"
            + markup(
                "`kit explain sklearn --pipeline FILE.py` (or numpy, python, or any "
                "factor with --library NAME A B) reruns the file in each release "
                "between a pair's two versions and says where each output changes."
            )
        )

    def show(self) -> None:
        width = self.text_width()
        self.load(lambda: self._read_budget(width), self._draw)

    def _read_budget(self, width: int):
        """The subject's budget: kit's text fitted to the pane (a pipeline's), or its rows with
        the amplification curves for the table, bars and curves."""
        from ..analysis.amplify import curves
        from ..views.verbs import pane_text

        subject = self.app.subject()
        if subject is None:
            return NO_BUDGET
        rec = self.app.kit.budget(subject)
        text = pane_text(rec, width=width)
        if text is not None:
            return Text(text)
        b = cast(dict[str, Any], rec.data)  # kit's own budget, of every factor: a dict
        return {**b, "curves": curves(b["rows"])}

    def _draw(self, read) -> None:
        (self._draw_text if isinstance(read, Text) else self._draw_budget)(read)

    def _draw_text(self, text: Text) -> None:
        """A pipeline's budget, as `kit budget --pipeline` prints it, in the scrolling pane
        (longer than a screen: its loose-generator line comes last)."""
        self.query_one("#budget-head", Static).update(
            "[b]your pipeline's budget[/] (arrows / PgDn scroll)"
        )
        self.query_one("#budget-table", DataTable).clear(columns=True)
        self.query_one("#explain-text", Static).update(text)
        self._file_budget, self._scan_shown = text, False
        for v in self._VIEWS:
            self.query_one(f"#{v}").display = v == "explain-scroll"
        self.call_after_refresh(self.query_one("#explain-scroll").focus)
        self._text_shown = True
        self.refresh_bindings()

    def _draw_budget(self, b: dict) -> None:
        if getattr(self, "_text_shown", False):  # the pipeline emptied: kit's own table again
            self._text_shown = False
            self.refresh_bindings()
            self.action_view("budget-table")
        self._budget = b
        self.redraw()

    def redraw(self) -> None:
        """Kit's own budget as last read, in the units chosen now (u: nothing to read again)."""
        from ..analysis.compare import ALL_MODELS
        from ..views.tables import (
            factor_label,
            flips_cell,
            identical_cell,
            one_class_note,
            verdicts_cell,
        )

        b = getattr(self, "_budget", None)
        if b is None or getattr(self, "_text_shown", False):
            return
        d, units = b["dataset"], self.seed_units
        self._rows = b["rows"]  # x reads the perturbation curves from them
        # the dataset's name and the notes are text inside markup (a bundle names a dataset)
        head = (
            f"[b]{markup(d.get('name') or self.app.dataset_name)}[/]"
            + ("  [b yellow]SYNTHETIC[/]" if d.get("synthetic") else "")
            + f"   flips {'in seed units' if units else 'median/max'} (u)   bars (p)   "
            "curves (a)   pairs: enter"
        )
        for note in (one_class_note(b["rows"]), b.get("note")):
            if note:
                head += f"\n[dim]{markup(note)}[/]"
        self.query_one("#budget-head", Static).update(head)
        t = self.query_one("#budget-table", DataTable)
        row = t.cursor_row
        models = [m for m in ALL_MODELS if any(m in r.models for r in b["rows"])]
        cells = []
        for r in b["rows"]:
            emb = r.emb_rel_seed_units if units else r.emb_rel_max
            cells.append(
                [
                    factor_label(r.factor, r.level),
                    str(r.pairs),
                    identical_cell(r),
                    fmt(emb),
                    *[flips_cell(r.models.get(m), units=units) for m in models],
                    verdicts_cell(r),
                ]
            )
        # "identical" counts pairs here (every stage bitwise equal); the pairs view counts stages
        fill(
            t,
            ["factor", "pairs", "pairs identical", "emb diff", *models, "verdicts"],
            cells,
            keys=[c[0] for c in cells],
        )
        if b["rows"]:
            t.move_cursor(row=min(row, len(b["rows"]) - 1))
        vals, raw_units = flips_bars(b)
        self.query_one("#budget-bars", Bars).plot(
            vals,
            unit=1.0 if raw_units else None,
            title=(
                "median flips in seed units, the largest model (│ = 1 seed unit)"
                if raw_units
                else "median flips, the largest model (no seed runs: raw counts)"
            ),
        )
        self._amplify(b.get("curves") or {})

    def _amplify(self, drawn: dict) -> None:
        from textual_plotext import PlotextPlot

        plots = self.query("#amplify-curves")
        if plots:
            plot = plots.first(PlotextPlot)
        else:  # its first drawing: mounted now, drawn once mounted
            plot = PlotextPlot(id="amplify-curves")
            self.query_one("#amplify-plot").mount(plot)
        plt = plot.plt
        plt.clear_data()
        for m, c in drawn.items():
            plt.plot([math.log10(p["eps"]) for p in c], [p["flips_median"] for p in c], label=m)
        plt.title("amplification: median flips against log10(eps)")
        plot.display = bool(drawn)
        none = self.query_one("#amplify-none", Static)
        none.display = not drawn
        none.update(
            "no perturbation runs yet: `kit run --factor perturb` or the plan tab (2, tick "
            "perturb, r) measures these curves.\n\na: back to the table"
        )
        plot.refresh()

    @on(DataTable.RowSelected, "#budget-table")
    @guarded
    def drill(self, event: DataTable.RowSelected) -> None:
        name = event.row_key.value
        assert name is not None  # each row is added with a key: its factor's label (_draw_budget)
        factor, _, level = name.partition("=")
        self.load(lambda: self._pairs(factor, level), self._draw_pairs, "pairs")

    def _pairs(self, factor: str, level: str) -> list:
        return [p for p in self.app.kit.pairs(self._shown(), factor) if p["level"] == level]

    def _shown(self) -> Subject:
        """The subject whose budget the pane shows, for what its rows or text offer (a row, or
        a lab file's text, is there only once a subject's budget is)."""
        subject = self.app.subject()
        assert subject is not None  # see above; a read for an earlier choice is dropped
        return subject

    def _draw_pairs(self, rows: list) -> None:
        from ..views.pairs import pair_cells

        t = self.query_one("#pairs", DataTable)
        head = ("pair", "identical", "emb diff", "digits", "flips", "confounds")
        fill(
            t,
            [("stages identical" if h == "identical" else h) for h in head],
            [[pair_cells(p)[h] for h in head] for p in rows],
        )
        t.display = True
        t.focus()
