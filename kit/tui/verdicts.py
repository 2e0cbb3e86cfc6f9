"""5. Verdicts: do the twelve model comparisons hold within each run set?"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from ..core.errors import KitError
from ..views.quoting import markup
from .grid import Grid, fill
from .pane import Pane


class VerdictsPane(Pane):
    MAIN = "#verdicts-table"
    BINDINGS = [Binding("s", "next_set", "Next run set"), Binding("h", "homology", "Homology")]
    current: str | None = None
    homology = False  # the verdicts under the cluster bootstrap instead of a run set's

    def compose(self) -> ComposeResult:
        yield Static(id="verdicts-head")
        # cells: left and right reach the columns beyond 80 characters, the verdict's name
        # (the first column) fixed beside them: scrolled away, a row's numbers had no name
        yield Grid(id="verdicts-table", zebra_stripes=True, cursor_type="cell", fixed_columns=1)
        # a pipeline's verdicts or homology reading: kit's text, longer than the screen
        with VerticalScroll(id="verdicts-lab-scroll", can_focus=True):
            yield Static(id="verdicts-lab")

    def on_mount(self) -> None:
        self.query_one("#verdicts-lab-scroll").display = False

    def focus_main(self) -> None:
        scroll = self.query_one("#verdicts-lab-scroll")
        (scroll if scroll.display else self.query_one(self.MAIN)).focus()

    def action_homology(self) -> None:
        self.homology = not self.homology
        self.show()

    def action_next_set(self) -> None:
        self.show(step=True)

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # what the subject offers: run sets are where the pane lays out run sets (kit's own);
        # homology reads protein ids (the footer offered both for any pipeline, and neither key
        # did anything)
        subject = self.app.subject()
        if subject is None or action not in ("next_set", "homology"):
            return True
        return (
            self.app.kit.has_protein_ids(subject) if action == "homology" else not self._text_shown
        )

    _text_shown = False  # kit's text shown (a pipeline's): no run sets to step through

    def show(self, step: bool = False) -> None:
        self.refresh_bindings()  # the footer: which keys apply to what is chosen now
        width, homology = self.text_width(), self.homology
        self.load(lambda: self._read_verdicts(width, homology), lambda r: self._draw(r, step))

    def _read_verdicts(self, width: int, homology: bool):
        """The subject's verdicts (``homology``: under homology): kit's text fitted to the pane
        (a pipeline's, as `kit verdicts|homology --pipeline` print it), or kit's own numbers
        ("sets", report) or ("homology", reading or None) for its tables."""
        from ..views.verbs import pane_text

        k, subject = self.app.kit, self.app.subject()
        if subject is None:
            return "sets", None
        homology = homology and k.has_protein_ids(subject)
        try:
            rec = k.homology(subject) if homology else k.verdicts(subject)
        except KitError as e:
            if not homology:
                raise
            return Text(f"{e} (h: back to the verdicts)")  # one line, as the CLI says it
        text = pane_text(rec, homology, width)
        if text is not None:
            return Text(text)
        return ("homology", rec.data) if homology else ("sets", rec.data)

    def _draw(self, read, step: bool) -> None:
        self._text_shown = isinstance(read, Text)
        self.refresh_bindings()
        if self._text_shown:
            return self._draw_lab(read)
        what, data = read
        return self._draw_homology(data) if what == "homology" else self._draw_sets(data, step)

    def _show_lab(self, on: bool) -> None:
        """The scrolling view (a pipeline's text) or kit's own head and table."""
        for w in ("#verdicts-head", "#verdicts-table"):
            self.query_one(w).display = not on
        self.query_one("#verdicts-lab-scroll").display = on

    def _draw_lab(self, text: Text) -> None:
        self._show_lab(True)
        self.query_one("#verdicts-lab", Static).update(text)
        self.call_after_refresh(self.focus_main)

    def _draw_homology(self, h) -> None:
        from ..views.homology import VERDICT_HEAD as HEAD
        from ..views.homology import summary_line
        from ..views.homology import verdict_cells as cells

        self._show_lab(False)
        head, t = (
            self.query_one("#verdicts-head", Static),
            self.query_one("#verdicts-table", DataTable),
        )
        t.clear(columns=True)
        if h is None or not h.runs:
            head.update(
                "no homology clustering of this dataset's runs yet: `kit data homology "
                "NAME` clusters its proteins (MMseqs2); h: back to the run sets"
            )
            return
        head.update(
            summary_line(h).replace("`kit homology` shows each.", "h: back to the run sets")
        )
        fill(t, list(HEAD), [cells(v) for v in h.verdicts])

    def _draw_sets(self, rep: dict | None, step: bool = False) -> None:
        from ..views.tables import VERDICT_HEAD, verdict_cells

        self._show_lab(False)
        head = self.query_one("#verdicts-head", Static)
        rep = rep or {}
        names = list(rep)
        if not names:
            head.update("no pairs with verdicts yet: run a plan first (2, then r)")
            return
        if step:  # s: the next run set
            i = names.index(self.current) + 1 if self.current in names else 0
            self.current = names[i % len(names)]
        self.current = self.current if self.current in names else names[0]
        i = names.index(self.current) + 1
        head.update(
            f"run set [b]{markup(self.current)}[/] ({i} of {len(names)}; s: next; h: homology)   "
            "paired bootstrap, 2,000 resamples, 95% interval; a group: one reference run and "
            "the runs that differ from it only in the set's factor"
        )
        t = self.query_one("#verdicts-table", DataTable)
        fill(t, list(VERDICT_HEAD), [list(verdict_cells(v)) for v in rep[self.current]])
