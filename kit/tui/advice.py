"""6. Advice: what to pin first, from the numbers; the report on `e`."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Input, Markdown, ProgressBar, Static

from ..core.numbers import fmt
from .errors import guarded
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
    _text_shown = False  # kit's text shown (a pipeline's advice): fitted again to a new width

    def on_resize(self) -> None:
        if self._text_shown:
            self.show()

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="advice-scroll"):
            yield Markdown(id="advice-md")
            yield Static(id="advice-lab")  # a pipeline's advice: kit's text, fitted to the pane
        with Horizontal(classes="buttons"):
            # a full path: where `e` writes is seen before it writes
            yield Input(placeholder="folder for report.md and report.html", id="report-dir")
            yield Button("Export report (e)", id="export")
        # while the report is written (its plots take seconds): the tab stays usable
        yield ProgressBar(id="report-progress", show_eta=False)
        yield Static(id="report-said")

    def on_mount(self) -> None:
        self.query_one("#report-progress").display = False

    def _default_folder(self, subject) -> str:
        """kit's own folder for this subject's report, never the current folder (a clone)."""
        from ..core.paths import kit_home

        from ..views.report import folder_name

        name = folder_name(subject) if subject is not None else self.app.dataset_name
        return str(kit_home(writing=False) / "reports" / name)

    def show(self) -> None:
        width = self.text_width()
        self.load(lambda: self._read_advice(width), self._draw)

    def _read_advice(self, width: int) -> tuple:
        """(subject, its advice: kit's text fitted to the pane, or Markdown of its numbers)."""
        from ..app.verbs import advise
        from ..views.verbs import pane_text

        subject = self.app.subject()
        if subject is None:
            return None, "No runs yet: run a plan first (2, then r)."
        rec = advise(self.app.store, subject, plat=self.app.platform)
        text = pane_text(rec, width=width)
        return subject, advice_markdown(rec.data) if text is None else Text(text)

    def _draw(self, read: tuple) -> None:
        """The advice: Markdown for kit's own, or a pipeline's text (as `kit advise --pipeline`,
        wrapped to the pane: in a Markdown code block, wrapped at the terminal's width, its
        lines' ends were cut off)."""
        subject, advice = read
        field = self.query_one("#report-dir", Input)
        if field.value in ("", self._default_dir):  # what the user typed there stays
            self._default_dir = field.value = self._default_folder(subject)
        md, lab = self.query_one("#advice-md", Markdown), self.query_one("#advice-lab", Static)
        self._text_shown = isinstance(advice, Text)
        md.display, lab.display = not self._text_shown, self._text_shown
        (lab if self._text_shown else md).update(advice)

    @on(Button.Pressed, "#export")
    @guarded
    def action_export(self) -> None:
        subject = self.app.subject()
        if subject is None:
            self.app.notify("nothing to report yet", severity="warning")
            return
        folder = (self.query_one("#report-dir", Input).value.strip()
                  or self._default_folder(subject))
        own = Path(folder) == Path(self._default_folder(subject))
        where = str(Path(folder).expanduser().resolve())
        bar = self.query_one("#report-progress", ProgressBar)
        bar.display = True
        bar.update(total=None)
        self.load(lambda: self._write(subject, where, own), self._wrote, "report")

    def _write(self, subject, where: str, own: bool) -> dict:
        if own:
            from ..core.paths import subdir

            subdir("reports")  # kit's own folder: made here, whatever a writer asks of its parent
        from ..app.verbs import report
        from ..views.report import write

        return write(report(self.app.store, subject), where)

    def settled(self, slot: str) -> None:
        if slot == "report":  # written, failed or dropped: the bar goes either way
            self.query_one("#report-progress").display = False

    def _wrote(self, out: dict) -> None:
        said = self.query_one("#report-said", Static)
        # the whole path on lines of its own, broken only after a `/` (a toast split it
        # mid-word: `repor` / `t.html`)
        said.update(Text("wrote the report (report.html, report.md) to\n")
                    + Text(break_at_slashes(str(Path(out["html"]).resolve()),
                                            said.content_region.width or 76), style="bold"))
        self.app.notify("report written: its path is under the Export button", timeout=4)
