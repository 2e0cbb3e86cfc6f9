"""5. Verdicts: do the twelve model comparisons hold within each run set?"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Static

from ..views.tables import VERDICT_HEAD, verdict_cells
from .grid import fill
from .pane import Pane


class VerdictsPane(Pane):
    MAIN = "#verdicts-table"
    BINDINGS = [Binding("s", "next_set", "Next run set")]
    current: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="verdicts-head")
        # cells: left and right reach the columns beyond 80 characters
        yield DataTable(id="verdicts-table", zebra_stripes=True, cursor_type="cell")

    def _report(self) -> dict:
        from ..analysis.verdicts import stability_report

        ds = self.app.dataset_hash()
        return stability_report(self.app.store, ds) if ds else {}

    def action_next_set(self) -> None:
        from ..analysis.verdicts import verdict_sets

        ds = self.app.dataset_hash()
        names = list(verdict_sets(self.app.store, ds)) if ds else []
        if names:
            i = names.index(self.current) + 1 if self.current in names else 0
            self.current = names[i % len(names)]
            self.show()

    def show(self) -> None:
        rep = self._report()
        names = list(rep)
        head = self.query_one("#verdicts-head", Static)
        if not names:
            head.update("no pairs with verdicts yet: run a plan first (2, then r)")
            return
        self.current = self.current if self.current in names else names[0]
        i = names.index(self.current) + 1
        head.update(f"run set [b]{self.current}[/] ({i} of {len(names)}; s: next)   paired "
                    "bootstrap, 2,000 resamples, 95% interval; a group: one reference run and "
                    "the runs that differ from it only in the set's factor")
        t = self.query_one("#verdicts-table", DataTable)
        fill(t, list(VERDICT_HEAD), [list(verdict_cells(v)) for v in rep[self.current]])
