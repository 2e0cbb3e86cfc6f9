"""6. Advice: what to pin first, from the numbers; the report on `e`."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Input, Markdown, Static

from ..core.numbers import fmt
from .pane import Pane


def advice_markdown(a: dict) -> str:
    """The advice as Markdown: the ranking as a table, each sentence a list item."""
    from ..views.quoting import markdown as md
    from ..views.tables import not_measured_lines

    # each name and sentence is Markdown text: a `|` or a newline in one breaks no row
    lines = ["## What to pin first", "", "| # | factor | reached | seed units | pairs |",
             "|---|---|---|---|---|"]
    lines += [f"| {i + 1} | {md(r['factor'])} | {md(r['level'])} | {fmt(r['reach_seed_units'])} "
              f"| {r['pairs']} |" for i, r in enumerate(a["ranking"])]
    lines += ["", "## Advice", ""] + [f"- {md(r['text'])}" for r in a["recommendations"]]
    lines += [""] + [f"- {md(line)}" for line in not_measured_lines(a)]
    return "\n".join(lines)


def break_at_slashes(path: str, width: int) -> str:
    """``path`` on lines of at most ``width`` characters, broken after a `/` (a name longer
    than a line is cut where it must): a wrapped path is never split mid-name."""
    lines, line = [], ""
    for part in path.replace("/", "/\0").split("\0"):
        while len(part) > width:
            if line:
                lines.append(line)
                line = ""
            lines.append(part[:width])
            part = part[width:]
        if len(line) + len(part) > width:
            lines.append(line)
            line = ""
        line += part
    return "\n".join(lines + [line])


class AdvicePane(Pane):
    MAIN = "#advice-scroll"
    BINDINGS = [Binding("e", "export", "Export report")]
    _default_dir = ""  # the folder the field was last given by kit (not typed by the user)
    _lab_shown = False  # a pipeline's advice shown: fitted again to a new width

    def on_resize(self) -> None:
        if self._lab_shown:
            self.show()

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="advice-scroll"):
            yield Markdown(id="advice-md")
            yield Static(id="advice-lab")  # a pipeline's advice: kit's text, fitted to the pane
        with Horizontal(classes="buttons"):
            # a full path: where `e` writes is seen before it writes
            yield Input(placeholder="folder for report.md and report.html", id="report-dir")
            yield Button("Export report (e)", id="export")
        yield Static(id="report-said")

    def _default_folder(self, ds: str | None) -> str:
        """kit's own folder for this dataset's report, never the current folder (a clone)."""
        from ..core.paths import kit_home

        lab = getattr(self.app, "pipeline", None)
        if lab is not None:  # a pipeline's report beside its name and hash, never a dataset's
            return str(kit_home(writing=False) / "reports" /
                       f"pipeline-{Path(lab['name']).stem}-{lab['sha256'][:12]}")
        name = (self.app.store.datasets().get(ds) or {}).get("name") if ds else None
        return str(kit_home(writing=False) / "reports" / (name or self.app.dataset_name))

    def show(self) -> None:
        from ..analysis.advice import advise

        ds = self.app.dataset_hash()
        field = self.query_one("#report-dir", Input)
        if field.value in ("", self._default_dir):  # what the user typed there stays
            self._default_dir = field.value = self._default_folder(ds)
        md = self.query_one("#advice-md", Markdown)
        from .lab import lab_text

        lab = lab_text(self.app, "advice", self.text_width())
        # a lab pipeline: what to fix first, as `kit advise --pipeline`, wrapped to the pane (in
        # a Markdown code block, wrapped at the terminal's width, its lines' ends were cut off)
        self._lab_shown = lab is not None
        md.display = not self._lab_shown
        self.query_one("#advice-lab", Static).display = self._lab_shown
        if lab is not None:
            self.query_one("#advice-lab", Static).update(lab)
            return
        if not ds:
            md.update("No runs yet: run a plan first (2, then r).")
            return
        md.update(advice_markdown(advise(self.app.store, ds, plat=self.app.platform)))

    @on(Button.Pressed, "#export")
    def action_export(self) -> None:
        from ..views.report import write

        ds, lab = self.app.dataset_hash(), getattr(self.app, "pipeline", None)
        if not ds and lab is None:
            self.app.notify("nothing to report yet", severity="warning")
            return
        folder = self.query_one("#report-dir", Input).value.strip() or self._default_folder(ds)
        if Path(folder) == Path(self._default_folder(ds)):
            from ..core.paths import subdir

            subdir("reports")  # kit's own folder: made here, whatever a writer asks of its parent
        where = str(Path(folder).expanduser().resolve())
        if lab is not None:  # the pipeline chosen on Setup: its report, as `kit report --pipeline`
            from ..views.lab_readers import write_lab_report

            out = write_lab_report(self.app.store, lab, where)
        else:
            out = write(self.app.store, ds, where)
        said = self.query_one("#report-said", Static)
        # the whole path on lines of its own, broken only after a `/` (a toast split it
        # mid-word: `repor` / `t.html`)
        said.update(Text("wrote the report (report.html, report.md) to\n")
                    + Text(break_at_slashes(str(Path(out["html"]).resolve()),
                                            said.content_region.width or 76), style="bold"))
        self.app.notify("report written: its path is under the Export button", timeout=4)
