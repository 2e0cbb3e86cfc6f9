"""6. Advice: what to pin first, from the numbers; the report on `e`."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Input, Markdown

from ..core.numbers import fmt
from .pane import Pane


def advice_markdown(a: dict) -> str:
    """The advice as Markdown: the ranking as a table, each sentence a list item."""
    from ..analysis.advice import not_measured_lines

    lines = ["## What to pin first", "", "| # | factor | reached | seed units | pairs |",
             "|---|---|---|---|---|"]
    lines += [f"| {i + 1} | {r['factor']} | {r['level']} | {fmt(r['reach_seed_units'])} | {r['pairs']} |"
              for i, r in enumerate(a["ranking"])]
    lines += ["", "## Advice", ""] + [f"- {r['text']}" for r in a["recommendations"]]
    lines += [""] + [f"- {line}" for line in not_measured_lines(a)]
    return "\n".join(lines)


class AdvicePane(Pane):
    MAIN = "#advice-scroll"
    BINDINGS = [Binding("e", "export", "Export report")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="advice-scroll"):
            yield Markdown(id="advice-md")
        with Horizontal(classes="buttons"):
            # a full path: where `e` writes is seen before it writes
            yield Input(str(Path.cwd() / "kit-report"),
                        placeholder="folder for report.md and report.html", id="report-dir")
            yield Button("Export report (e)", id="export")

    def show(self) -> None:
        from ..analysis.advice import advise

        ds = self.app.dataset_hash()
        md = self.query_one("#advice-md", Markdown)
        if not ds:
            md.update("No runs yet: run a plan first (2, then r).")
            return
        md.update(advice_markdown(advise(self.app.store, ds, plat=self.app.platform)))

    @on(Button.Pressed, "#export")
    def action_export(self) -> None:
        from ..views.report import write

        ds = self.app.dataset_hash()
        if not ds:
            self.app.notify("nothing to report yet", severity="warning")
            return
        folder = Path(self.query_one("#report-dir", Input).value.strip() or "kit-report")
        out = write(self.app.store, ds, str(folder.expanduser().resolve()))
        self.app.notify(f"wrote {Path(out['html']).resolve()}")
