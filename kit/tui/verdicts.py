"""5. Verdicts: do the twelve model comparisons hold within each run set?"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from ..views.tables import VERDICT_HEAD, verdict_cells
from .grid import fill
from .pane import Pane


class VerdictsPane(Pane):
    MAIN = "#verdicts-table"
    BINDINGS = [Binding("s", "next_set", "Next run set"),
                Binding("h", "homology", "Homology")]
    current: str | None = None
    homology = False  # the verdicts under the cluster bootstrap instead of a run set's

    def compose(self) -> ComposeResult:
        yield Static(id="verdicts-head")
        # cells: left and right reach the columns beyond 80 characters
        yield DataTable(id="verdicts-table", zebra_stripes=True, cursor_type="cell")
        # a pipeline's verdicts or homology reading: kit's text, longer than the screen
        with VerticalScroll(id="verdicts-lab-scroll", can_focus=True):
            yield Static(id="verdicts-lab")

    def on_mount(self) -> None:
        self.query_one("#verdicts-lab-scroll").display = False

    def focus_main(self) -> None:
        scroll = self.query_one("#verdicts-lab-scroll")
        (scroll if scroll.display else self.query_one(self.MAIN)).focus()

    def _report(self) -> dict:
        from ..analysis.verdicts import stability_report

        ds = self.app.dataset_hash()
        return stability_report(self.app.store, ds) if ds else {}

    def action_homology(self) -> None:
        self.homology = not self.homology
        self.show()

    def _show_homology(self, head, t) -> None:
        from ..analysis.homology import for_dataset
        from ..views.homology import VERDICT_HEAD as HEAD, summary_line, verdict_cells as cells

        ds = self.app.dataset_hash()
        h = for_dataset(self.app.store, ds) if ds else None
        t.clear(columns=True)
        if h is None or not h.runs:
            head.update("no homology clustering of this dataset's runs yet: `kit data homology "
                        "NAME` clusters its proteins (MMseqs2); h: back to the run sets")
            return
        head.update(summary_line(h).replace("`kit homology` shows each.", "h: back to the run "
                                            "sets"))
        fill(t, list(HEAD), [cells(v) for v in h.verdicts])

    def action_next_set(self) -> None:
        from ..analysis.verdicts import verdict_sets

        ds = self.app.dataset_hash()
        names = list(verdict_sets(self.app.store, ds)) if ds else []
        if names:
            i = names.index(self.current) + 1 if self.current in names else 0
            self.current = names[i % len(names)]
            self.show()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # a pipeline chosen: no run sets to step through, and homology only of protein ids
        # (the footer offered both, and neither key did anything)
        from .lab import has_proteins

        if getattr(self.app, "pipeline", None) is None:
            return True
        return action != "next_set" and (action != "homology" or has_proteins(self.app))

    def _show_lab(self) -> bool:
        """A lab pipeline's verdicts, as `kit verdicts --pipeline`, or (h) its reading under
        homology, as `kit homology --pipeline`, in the scrolling view; False when none is
        chosen (kit's own head and table shown again)."""
        from ..core.errors import KitError
        from .lab import has_proteins, lab_homology_text, lab_text

        lab = lab_text(self.app, "verdicts", self.text_width())
        for w in ("#verdicts-head", "#verdicts-table"):
            self.query_one(w).display = lab is None
        scroll = self.query_one("#verdicts-lab-scroll")
        scroll.display = lab is not None
        if lab is None:
            return False
        if self.homology and has_proteins(self.app):
            try:
                lab = lab_homology_text(self.app, self.text_width())
            except KitError as e:  # one line, as the CLI's
                lab = Text(f"{e} (h: back to the verdicts)")
        self.query_one("#verdicts-lab", Static).update(lab)
        self.call_after_refresh(self.focus_main)
        return True

    def show(self) -> None:
        from ..views.quoting import markup

        self.refresh_bindings()  # the footer: which keys apply to what is chosen now
        if self._show_lab():
            return
        head = self.query_one("#verdicts-head", Static)
        if self.homology:
            self._show_homology(head, self.query_one("#verdicts-table", DataTable))
            return
        rep = self._report()
        names = list(rep)
        if not names:
            head.update("no pairs with verdicts yet: run a plan first (2, then r)")
            return
        self.current = self.current if self.current in names else names[0]
        i = names.index(self.current) + 1
        head.update(f"run set [b]{markup(self.current)}[/] ({i} of {len(names)}; s: next; h: homology)   "
                    "paired bootstrap, 2,000 resamples, 95% interval; a group: one reference run and "
                    "the runs that differ from it only in the set's factor")
        t = self.query_one("#verdicts-table", DataTable)
        fill(t, list(VERDICT_HEAD), [list(verdict_cells(v)) for v in rep[self.current]])
