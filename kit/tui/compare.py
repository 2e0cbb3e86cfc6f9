"""7. Compare: a lab's bundle rerun here, with the same answer as `kit compare`."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, DataTable, Input, Log, Static

from ..core.errors import KitError
from ..core.numbers import fmt
from ..views.quoting import markup
from .errors import said_in_worker
from .grid import Grid, fill
from .pane import Pane


class ComparePane(Pane):
    MAIN = "#compare"  # the button: the digits and the footer's keys work when the tab opens
    LEAVE = "#compare"  # Escape leaves the path field for the button
    BINDINGS = [Binding("p", "path", "Type path")]

    class Answered(Message):
        def __init__(self, report: dict | None, error: str | None = None):
            super().__init__()
            self.report, self.error = report, error

    def compose(self) -> ComposeResult:
        with Horizontal(classes="buttons"):
            yield Input(
                placeholder="path to a bundle from `kit export` (e.g. lab.kit)", id="bundle-path"
            )
            yield Button("Compare", id="compare", variant="primary")
        yield Static(
            "Rerun a lab's runs here and see whether, and how far, they differ. Press p, "
            "type the bundle's path and press enter.",
            id="compare-answer",
        )
        yield Grid(id="compare-table", zebra_stripes=True, fixed_columns=1)
        yield Log(id="compare-env", highlight=False)

    # The tab opens on the Compare button, never in the path field (empty or not): a digit
    # pressed to go on to another tab was typed into the field, and q and ? with it, whatever
    # the footer said. `p` (in the footer) or Enter on an empty path enters the field.
    def action_path(self) -> None:
        self.query_one("#bundle-path", Input).focus()

    @on(Button.Pressed, "#compare")
    @on(Input.Submitted, "#bundle-path")
    def start(self) -> None:
        path = self.query_one("#bundle-path", Input).value.strip()
        if not path:
            self.action_path()
            self.app.notify("type the bundle's path, then enter", severity="warning")
            return
        self.query_one("#compare-answer", Static).update(f"comparing {markup(path)} ...")
        self._compare(path)

    @work(thread=True, exclusive=True, group="compare")
    def _compare(self, path: str) -> None:
        app = self.app

        def refuse(stacks):  # gigabytes are not built behind a keypress: Setup builds them
            raise KitError(
                "this bundle's runs need stacks that are not built here: "
                + ", ".join(f"{n} (~{b / 2**20:.0f} MB)" if b else n for n, b in stacks)
                + "; build them on the Setup tab (1, then b) and compare again"
            )

        try:
            rep = app.kit.compare(
                path,
                plat=app.platform,
                confirm=refuse,
                log=lambda m: app.call_from_thread(app.notify, markup(m), timeout=2),
            ).data
        except Exception as e:  # noqa: BLE001 - a full disk, an unreadable bundle: one line
            said = said_in_worker(app, e)
            if said is not None:
                self.post_message(self.Answered(None, said))
            return
        self.post_message(self.Answered(rep))

    def on_compare_pane_answered(self, m: Answered) -> None:
        answer = self.query_one("#compare-answer", Static)
        rep = m.report
        if m.error or rep is None:  # a report comes without an error, and None with one
            answer.update(f"[red]{markup(m.error or '')}[/]")
            return
        # the hosts' names (the bundle's is the sender's word) and the answer are text
        answer.update(
            f"[b]{markup(rep['bundle_host']['name'])} vs "
            f"{markup(rep['this_host']['name'])}:[/] {markup(rep['answer'])}"
        )
        t = self.query_one("#compare-table", DataTable)
        fill(
            t,
            ["run (theirs vs here)", "stages identical", "emb diff", "flips"],
            [
                [
                    r["label"],
                    f"{r['identical_stages']}/{r['stages']}",
                    fmt(r["emb_rel"]),
                    " ".join(f"{m}:{v}" for m, v in r["flips"].items()),
                ]
                for r in rep["per_run"]
            ],
        )
        log = self.query_one("#compare-env", Log)
        log.clear()
        log.write_line("What differs between the two machines (measured):")
        for k, v in rep["environment_differences"].items():
            log.write_line(f"  {k}: {'; '.join(v)}")
        for x in rep["not_compared"]:
            log.write_line(f"not compared: {x['run'][:12]}: {x['reason']}")
        t.focus()
