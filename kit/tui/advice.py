"""6. Advice: what to pin first, from the numbers; the report on `e`."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Input, ProgressBar, Static, TabbedContent

from ..core.numbers import fmt
from ..core.paths import kit_home, subdir
from ..views.quoting import markdown as md
from .errors import guarded
from .pane import Pane


def advice_markdown(a: dict) -> str:
    """The advice as Markdown: the ranking as a table, each sentence a list item."""
    from ..views.tables import not_measured_lines, unit_lines

    # each name and sentence is Markdown text: a `|` or a newline in one breaks no row
    lines = ["## What to pin first", ""] + [f"{md(line)}.\n" for line in unit_lines(a)]
    lines += ["| # | factor | reached | seed units | pairs |", "|---|---|---|---|---|"]
    lines += [
        f"| {i + 1} | {md(r['factor'])} | {md(r['level'])} | {fmt(r['reach_seed_units'])} "
        f"| {r['pairs']} |"
        for i, r in enumerate(a["ranking"])
    ]
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
    _writing = False  # a report is being written (its worker cannot be stopped midway)
    _written: dict = {}  # folder -> the report.html written there from this tab

    class Step(Message):
        """From the report's worker: the part of the report it begins now."""

        def __init__(self, what: str):
            super().__init__()
            self.what = what

    def on_resize(self) -> None:
        if self._text_shown:
            self.show()
        if not self._writing:
            self._say_where()

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="advice-scroll"):
            # kit's own advice: Markdown, mounted when first drawn (its parser is imported then,
            # not before the app's first paint)
            yield Static(id="advice-lab")  # a pipeline's advice: kit's text, fitted to the pane
        with Horizontal(classes="buttons"):
            yield Input(placeholder="folder for report.md and report.html", id="report-dir")
            yield Button("Export report (e)", id="export")
        # while the report is written (its plots take seconds) each part is named as it begins,
        # and the tab stays usable
        with Horizontal(id="report-progress"):
            yield ProgressBar(id="report-bar", show_eta=False)
            yield Static(id="report-step")
        # where `e` writes, whole (the field cuts a long path: "…/reports/pipeline-kme"), and
        # once written, where it wrote
        yield Static(id="report-said")

    def on_mount(self) -> None:
        self.query_one("#report-progress").display = False

    def _default_folder(self, subject) -> str:
        """kit's own folder for this subject's report, never the current folder (a clone)."""
        from ..views.report import folder_name

        name = folder_name(subject) if subject is not None else self.app.dataset_name
        return str(kit_home(writing=False) / "reports" / name)

    def _folder(self, subject) -> str:
        """The folder the field names (kit's own if empty), as `e` writes to it: absolute."""
        folder = self.query_one("#report-dir", Input).value.strip() or self._default_folder(subject)
        return str(Path(folder).expanduser().resolve())

    def _path_lines(self, head: str, path: str) -> Text:
        """``head``, then ``path`` whole on lines of its own, broken only after a `/` (a toast
        split it mid-word: `repor` / `t.html`)."""
        return Text(head + "\n") + Text(
            break_at_slashes(path, max(self.text_width(), 20)), style="bold"
        )

    @on(Input.Changed, "#report-dir")
    def _say_where(self) -> None:
        """Under the field: the whole folder `e` writes to (a typed relative one resolved)."""
        if self._writing or not self.query_one("#report-dir", Input).value:
            return  # the field is filled once the advice is read: nothing to say before
        folder = self._folder(self.app.subject())
        if folder in self._written:  # a redraw (a resize, the tab read again) keeps saying it
            self.query_one("#report-said", Static).update(
                self._path_lines("wrote the report, report.md beside it:", self._written[folder])
            )
            return
        self.query_one("#report-said", Static).update(
            self._path_lines("e writes report.md and report.html to", folder)
        )

    def show(self) -> None:
        width = self.text_width()
        self.load(lambda: self._read_advice(width), self._draw)

    def _read_advice(self, width: int) -> tuple:
        """(subject, its advice: kit's text fitted to the pane, or Markdown of its numbers)."""
        from ..views.verbs import pane_text

        subject = self.app.subject()
        if subject is None:
            return None, "No runs yet: run a plan first (2, then r)."
        rec = self.app.kit.advise(subject, plat=self.app.platform)
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
        from textual.widgets import Markdown

        lab = self.query_one("#advice-lab", Static)
        self._text_shown = isinstance(advice, Text)
        lab.display = self._text_shown
        found = self.query("#advice-md")
        if found:
            found.first(Markdown).display = not self._text_shown
        if self._text_shown:
            lab.update(advice)
        elif found:
            found.first(Markdown).update(advice)
        else:  # its first drawing: made with the text
            self.query_one("#advice-scroll").mount(Markdown(advice, id="advice-md"), before=lab)

    @on(Button.Pressed, "#export")
    @guarded
    def action_export(self) -> None:
        from ..views.report import write_steps

        subject = self.app.subject()
        if subject is None:
            self.app.notify("nothing to report yet", severity="warning")
            return
        if self._writing:  # one writer at a time: two would write the same files
            self.app.notify(
                "the report is being written: its progress is under the field", severity="warning"
            )
            return
        where = self._folder(subject)
        own = Path(where) == Path(self._default_folder(subject)).resolve()
        self._writing = True
        # the parts the report reads, then those it draws and writes (a count, cheap: nothing
        # is drawn here); each is named under the field as it begins
        self._steps = len(self.app.kit.report_steps(subject)) + len(write_steps(subject))
        self.query_one("#report-progress").display = True
        self.query_one("#report-bar", ProgressBar).update(total=self._steps, progress=0)
        self.query_one("#report-step", Static).update("")
        self.query_one("#report-said", Static).update(
            self._path_lines("writing report.md and report.html to", where)
        )
        self.load(lambda: self._write(subject, where, own), self._wrote, "report")

    def _write(self, subject, where: str, own: bool) -> dict:
        if own:
            subdir("reports")  # kit's own folder: made here, whatever a writer asks of its parent
        from ..views.report import write

        def step(what: str) -> None:  # on this worker: the pane's widgets are the app thread's
            self.post_message(self.Step(what))

        return write(self.app.kit.report(subject, step=step), where, step=step)

    def on_advice_pane_step(self, m: Step) -> None:
        m.stop()
        if not self._writing:
            return  # a late one of a report already written
        bar = self.query_one("#report-bar", ProgressBar)
        bar.advance(1)
        self.query_one("#report-step", Static).update(f"{int(bar.progress)}/{self._steps} {m.what}")

    def settled(self, slot: str) -> None:
        if slot == "report":  # written, failed or dropped: the progress goes either way
            self._writing = False
            self.query_one("#report-progress").display = False
            self._say_where()

    def _wrote(self, out: dict) -> None:
        html = Path(out["html"]).resolve()
        self._written = {**self._written, str(html.parent): str(html)}
        self._say_where()
        if self.app.query_one(TabbedContent).active != "advice":  # here, the line says it
            self.app.notify("report written: its path is on the Advice tab (6)", timeout=4)
