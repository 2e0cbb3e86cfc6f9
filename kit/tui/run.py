"""3. Run: the plan in a worker thread, with progress, a live log and cancel-and-resume."""

from __future__ import annotations

from queue import Empty, Queue

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, Log, ProgressBar, Static
from textual.worker import Worker, WorkerState, get_current_worker

from ..core.numbers import span
from ..core.said import translate
from .dialogs import ConfirmScreen
from .pane import Pane


class RunPane(Pane):
    """Runs the plan: overall progress, the current run, a live log; `c` cancels."""

    MAIN = "#run-log"
    BINDINGS = [Binding("c", "cancel", "Cancel run")]

    class Progress(Message):
        """From the worker: a line for the log, and how far the plan is (None: not known)."""

        def __init__(
            self,
            line: str,
            status: str | None = None,
            done: int | None = None,
            total: int | None = None,
        ):
            super().__init__()
            self.line, self.status, self.done, self.total = line, status, done, total

    def compose(self) -> ComposeResult:
        yield Static("Nothing running. Choose a plan (2) and press r.", id="run-status")
        with Horizontal(classes="buttons"):
            yield ProgressBar(total=1, id="run-progress", show_eta=True)
            yield Button("Cancel (c)", id="cancel", variant="error")
        yield Log(id="run-log", highlight=False)

    @property
    def running(self) -> bool:
        return any(w.group == "run" and w.is_running for w in self.app.workers)

    def on_mount(self) -> None:
        self._cancellable(False)

    def _cancellable(self, on: bool) -> None:
        """Cancel is on the screen and in the footer only while a plan runs (after one
        finished it stayed there and did nothing)."""
        self.query_one("#cancel", Button).display = on
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        return self.running if action == "cancel" else True

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "run":
            self._cancellable(event.state in (WorkerState.PENDING, WorkerState.RUNNING))

    def start(self, asked) -> None:
        """Run what the Plan's fields ask (kit.tui.plan.Asked), for whichever subject is chosen."""
        if self.running:
            self.app.notify("a plan is already running; cancel it first (c)", severity="warning")
            return
        self.query_one("#run-log", Log).clear()
        self._run(asked, self.app.choice())

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        if self.running:
            self.app.workers.cancel_group(self, "run")
            self.query_one("#run-log", Log).write_line("cancel: stopping after the current run")

    def on_run_pane_progress(self, m: Progress) -> None:
        if m.line:
            self.query_one("#run-log", Log).write_line(m.line)
        if m.status is not None:
            self.query_one("#run-status", Static).update(m.status)
        bar = self.query_one("#run-progress", ProgressBar)
        if m.total is not None:
            bar.update(total=max(m.total, 1), progress=m.done or 0)
        elif m.done is not None:
            bar.update(progress=m.done)

    @work(thread=True, exclusive=True, group="run")
    def _run(self, asked, started: tuple) -> None:
        """Plan and run as `kit run` does (kit.app.verbs.to_run, then run): the subject found
        here, on the worker (a pipeline's file is kept by its hash now, kit's own dataset
        loaded), its pairs planned by the plan verb, the budget read after; never on the
        app's thread."""
        from ..app.verbs import run
        from .progress import Messages

        worker = get_current_worker()
        out = Messages(self, asked.factors)
        app = self.app
        try:
            target = app.to_run(asked.factors, asked.dataset, asked.n)
            # one run at a time: the store is shared with the screens that read it meanwhile
            ran = run(
                app.store,
                target,
                asked.options,
                jobs=1,
                progress=out,
                confirm=lambda ask: self._confirm(ask, worker),
                chosen=out.chosen,
                should_stop=lambda: worker.is_cancelled,
                plat=app.platform,
            )
        except _Declined:
            _ended(out, worker, False)
            return
        except Exception as e:  # noqa: BLE001 - as the CLI says it (a full disk, the file's
            # contract): one line; a bug's names its traceback's file, and the app goes on (a
            # damaged store's index)
            out.failed(translate(e).text)
            return
        app.call_from_thread(app.ran, started, ran.subject)
        if ran.failure is not None and not worker.is_cancelled:  # runs that failed, a shape
            out.failed(ran.failure)
        else:
            _ended(out, worker, True)

    def _confirm(self, ask, worker) -> bool:
        """Asked by the audit (a kit.app.audit.Ask). Stacks to build: yes (the Plan's summary
        named them, and r was pressed). A large plan:
        asked on the screen while the worker waits (no: _Declined, raised, as run_audit lets a
        confirm refuse, so nothing is read after; cancelled: no)."""
        if ask.stacks:
            return True
        est = ask.estimate()  # as the CLI asks it (the dialog gave no time)
        question = (
            f"{ask.runs} runs to do"
            + (f" (about {span(est)} from past timings)" if est else "")
            + ". Start them?"
        )
        answers = Queue()
        self.app.call_from_thread(self.app.push_screen, ConfirmScreen(question), answers.put)
        while not worker.is_cancelled:
            try:
                if answers.get(timeout=0.2):
                    return True
                raise _Declined
            except Empty:
                pass
        raise _Declined


class _Declined(Exception):
    """The user said no to a large plan (or cancelled while asked): nothing ran."""


def _ended(out, worker, started: bool) -> None:
    if worker.is_cancelled:
        out.say(status=f"cancelled after {out.made} run(s); they are stored, run again to resume")
    elif not started:
        out.say(status="not started; nothing was run")
    else:
        out.say(status=f"finished: {out.made} run(s). The budget (4) is ready.")
        out.pane.app.call_from_thread(out.pane.app.notify, "plan finished: see the budget (4)")
