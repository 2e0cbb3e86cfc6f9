"""1. Setup: the dataset (fetch, verify) and the stacks (status, build)."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, DataTable, Input, ProgressBar, Static

from ..core.errors import KitError
from ..data import load_dataset
from ..envs.integrity import recheck
from ..views.quoting import markup
from .errors import guarded, said_in_worker
from .grid import Grid, fill
from .pane import Pane

HEAD = ("stack", "status", "python", "numpy", "sklearn/torch")
WRAP = (1, 3, 4)  # status, numpy, libraries: a stack's name is not wrapped


class SetupPane(Pane):
    """The dataset and the stacks: what is here, fetch, verify, build."""

    MAIN = "#stacks"
    _rows: list = []  # the stacks' rows, by show(): none before it (a resize has none to lay out)
    BINDINGS = [
        Binding("f", "job('fetch')", "Fetch"),
        Binding("v", "job('verify')", "Verify"),
        Binding("b", "build", "Build stack"),
    ]

    class JobDone(Message):
        """A setup job ended: what to tell the user (error: in red)."""

        def __init__(self, text: str, error: bool = False):
            super().__init__()
            self.text, self.error = text, error

    def compose(self) -> ComposeResult:
        # read in a worker once the screen is up (the stacks' status starts interpreters)
        yield Static("reading the dataset and the stacks ...", id="dataset-info")
        # fits 80 columns: the read tabs show the pipeline once Enter chooses it
        yield Input(id="pipeline-file", placeholder="or a pipeline: FILE.py or its hash, Enter")
        with Horizontal(classes="buttons"):
            yield Button("Fetch Swiss-Prot (f)", id="fetch")
            yield Button("Verify (v)", id="verify")
            yield Button("Build stack (b)", id="build")
        yield ProgressBar(id="setup-progress", show_eta=False)
        yield Grid(id="stacks", cursor_type="row", zebra_stripes=True, fixed_columns=1)
        yield Static(id="stack-help")

    def on_mount(self) -> None:
        # what it shows is read when its tab opens: the app starts on it (TabActivated)
        self.query_one("#setup-progress").display = False

    def show(self) -> None:
        self.load(self._read, self._draw)

    def _read(self) -> tuple:
        """(the dataset's lines, every stack's row): on a worker."""
        from ..envs.kinds import listing

        recheck()  # a stack may have been damaged (or repaired) since the app started
        return self._dataset_info(), listing(self.app.platform)

    def _draw(self, read: tuple) -> None:
        from ..views.tables import libraries

        info, listed = read
        self.query_one("#dataset-info", Static).update(info)
        self._about, self._reference, self._rows = {}, None, []
        for r in listed:
            if r["reference"]:
                self._reference = r["name"]
            a = r["attributes"]
            external = r["kind"] == "external"
            self._rows.append(
                [
                    r["name"],
                    r["name"] + (" *" if r["reference"] else ""),
                    r["status"] + (" (external)" if external else ""),
                    a["python"],
                    a.get("numpy") or "-",
                    libraries(a),
                ]
            )
            self._about[r["name"]] = (
                f"{r['status']}: {r['reason']}"
                if r["reason"]
                else f"external: {r['venv']}"
                if external
                else r["status"]
            )
        self._lay_out()

    def _dataset_info(self) -> str:
        """What runs on: the dataset of kit's own pipeline or, once one is chosen, the
        pipeline file, which reads its own data (the dataset line read as if it ran)."""
        chosen = self.app.pipeline  # the field's choice, over kit's own dataset
        return self._dataset_line() if chosen is None else self._pipeline_line(chosen)

    def _pipeline_line(self, chosen) -> str:
        return (
            f"[b]Pipeline[/] {markup(chosen.name)} ({chosen.short}): every tab works "
            f"on it; it reads its own data\n[dim]Dataset "
            f"{markup(self.app.dataset_name)}: kit's own pipeline's, not the file's[/]"
        )

    def _dataset_line(self) -> str:
        app = self.app
        try:
            s = load_dataset(app.dataset_name, app.n).summary()
            tag = "  [b yellow]SYNTHETIC[/]" if s["synthetic"] else ""
            rel = (
                f"UniProt release {s['release']} ({s.get('release_date')})"
                if s.get("release")
                else s["source"]
            )
            return (
                f"[b]Dataset[/] {markup(s['name'])}{tag}  ({markup(rel)})\n"
                f"{s['rows']} proteins: {s['train']} train / {s['test']} test; "
                f"{s['positives']} positive ({s['label_rate']:.1%}); sha256 {s['sha256'][:16]}"
            )
        except KitError as e:
            return f"[b]Dataset[/] {markup(app.dataset_name)}: [red]{markup(e)}[/]"

    def on_resize(self) -> None:
        if self._rows:
            self._lay_out()

    def _lay_out(self) -> None:
        """The stacks within the table's width: at 80 columns the last header was cut
        ("sklearn/tor") and the table scrolled sideways; now wide cells wrap instead."""
        t = self.query_one("#stacks", DataTable)
        row = t.cursor_row
        # the vertical scrollbar's columns are kept free: it shows or not by the rows' heights
        fill(
            t,
            list(HEAD),
            [r[1:] for r in self._rows],
            [r[0] for r in self._rows],
            room=t.size.width - t.styles.scrollbar_size_vertical,
            wrap=WRAP,
        )
        if t.row_count:
            t.move_cursor(row=min(row, t.row_count - 1))

    @on(DataTable.RowHighlighted, "#stacks")
    def describe(self, event: DataTable.RowHighlighted) -> None:
        # the reason a stack cannot exist here is long: it is spelled out under the table
        name = event.row_key.value
        # said of the highlighted stack only when it is the reference: the line under the table
        # otherwise read as if every stack were starred
        which = (
            "   [b]* the reference stack[/]"
            if name == self._reference
            else f"   (* marks the reference stack, {markup(self._reference)})"
            if self._reference
            else ""
        )
        self.query_one("#stack-help", Static).update(
            f"[b]{markup(name)}[/]: {markup(self._about.get(name, ''))}" + which
        )

    @on(Input.Submitted, "#pipeline-file")
    @guarded
    def choose_pipeline(self, event: Input.Submitted) -> None:
        """A lab pipeline every read tab shows from now on (empty: kit's own dataset again)."""
        try:
            chosen = self.app.show_pipeline(event.value.strip())
        except KitError as e:
            self.app.notify(markup(e), severity="error", timeout=8)
            return
        self.show()
        # a name is text, not markup (a bundle's can be `[bold]x.py`)
        self.app.notify(
            f"the tabs read pipeline {markup(chosen.name)} ({chosen.short})"
            if chosen
            else "the tabs read kit's own dataset",
            timeout=4,
        )

    @on(Button.Pressed, "#fetch")
    def _fetch(self) -> None:
        self.action_job("fetch")

    @on(Button.Pressed, "#verify")
    def _verify(self) -> None:
        self.action_job("verify")

    @on(Button.Pressed, "#build")
    def action_build(self) -> None:
        t = self.query_one("#stacks", DataTable)
        if t.row_count:
            self.action_job("build", t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value)

    @guarded
    def action_job(self, what: str, stack: str | None = None) -> None:
        bar = self.query_one("#setup-progress", ProgressBar)
        bar.display = True
        bar.update(total=None)
        self._job(what, stack)

    @work(thread=True, exclusive=True, group="setup")
    def _job(self, what: str, stack: str | None = None) -> None:
        app = self.app
        try:
            if what == "fetch":
                from ..data import uniprot

                def progress(taxid, name, done, total):
                    app.call_from_thread(app.notify, markup(f"{name}: {done}/{total}"), timeout=1)

                ds = uniprot.fetch_dataset(on_progress=progress)
                # on the app's thread, and before JobDone redraws this tab with it
                app.call_from_thread(app.show_dataset, uniprot.NAME, app.n)
                msg = f"fetched {ds.n} proteins, release {ds.meta.get('release')}"
            elif what == "verify":
                from ..data import uniprot

                if app.dataset_name == uniprot.NAME:
                    uniprot.verify()
                else:
                    load_dataset(app.dataset_name, app.n)
                msg = f"{app.dataset_name}: verified"
            else:
                from ..envs.kinds import stack_kind

                assert stack is not None  # "build" is asked with its row's stack (action_build)
                built = stack_kind(stack).build(
                    app.platform,
                    log=lambda m: app.call_from_thread(app.notify, markup(m), timeout=2),
                )
                msg = f"{stack}: {'built' if built else 'already built'}"
            self.post_message(self.JobDone(msg))
        except Exception as e:  # noqa: BLE001 - a full disk while building: said as the CLI does
            said = said_in_worker(app, e)
            if said is not None:
                self.post_message(self.JobDone(said, error=True))

    def on_setup_pane_job_done(self, message: JobDone) -> None:
        self.query_one("#setup-progress").display = False
        self.app.notify(
            markup(message.text),
            severity="error" if message.error else "information",
            timeout=8 if message.error else 4,
        )
        self.show()
