"""The Textual application: seven tabs in the order of an audit, driven from the keyboard."""

from __future__ import annotations

import io
import sys
from pathlib import Path

from rich.console import Console
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Header, Input, TabbedContent, TabPane, Tabs

from ..app.facade import Kit, Store
from ..core.errors import KitError
from ..core.logs import log_traceback
from ..core.said import Said
from ..core.subject import Subject
from ..data.dataset import FIRST_LOOK_N
from ..envs.platforms import Platform, detect
from ..views.quoting import markup
from .advice import AdvicePane
from .budget import BudgetPane
from .compare import ComparePane
from .dialogs import ConfirmScreen, HelpScreen
from .errors import guarded
from .plan import PlanPane
from .run import RunPane
from .setup import SetupPane
from .verdicts import VerdictsPane

PANES = {
    "setup": SetupPane,
    "plan": PlanPane,
    "run": RunPane,
    "budget": BudgetPane,
    "verdicts": VerdictsPane,
    "advice": AdvicePane,
    "compare": ComparePane,
}
TABS = tuple(PANES)


class KitApp(App):
    """kit's terminal interface over one ``store`` (injected: `kit tui` opens it, tests their
    own), read and run through the facade ``self.kit`` (kit.app.facade.Kit) in workers;
    ``platform`` may be injected too (tests)."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    TITLE = "kit: reproducibility budget"
    # the first focus: Setup's stacks table, as Textual's own auto-focus gives it (else the
    # first focusable widget, the pipeline field, where the digits would be typed); focusing
    # it by hand in on_mount landed late and brought Setup back over a digit pressed at once
    AUTO_FOCUS = "#stacks"
    BINDINGS = [
        # the tabs' own titles carry their digits ("4 Budget"): the footer keeps its 80
        # columns for the keys nothing else shows
        *[
            Binding(str(i), f"tab('{t}')", t.title(), priority=True, show=False)
            for i, t in enumerate(TABS, 1)
        ],
        Binding("ctrl+r", "run_plan", "Run plan", priority=True),
        Binding("r", "run_plan", "Run plan", show=False),
        Binding("escape", "leave_field", "Leave field"),  # in the footer only in a field
        Binding("d", "toggle_dark", "Light/dark", show=False),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit_app", "Quit"),
    ]

    def __init__(
        self,
        dataset: str = "synthetic",
        n: int | None = FIRST_LOOK_N,
        platform: Platform | None = None,
        threads: str = "",
        seeds: str = "",
        *,
        store: Store,
    ):
        super().__init__()
        self.kit = Kit(store=store)  # its store's index is safe to read from worker threads
        self.dataset_name = dataset
        self.n = n
        self.initial = {"threads": threads, "seeds": seeds}  # prefilled plan settings
        self.platform = platform or detect()
        # the pipeline Setup chose, as kit.app.selection.select makes it from the words typed
        # (its summary keeps them, "given", and the file, "file"); None: kit's own on the dataset
        self.pipeline: Subject | None = None
        # (choice, Subject): resolved once per choice
        self._subject: tuple[tuple | None, Subject | None] = (None, None)
        # the one line about a bug, printed by run_app once the screen is gone
        self.bug_line: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(initial="setup"):
            for i, (tab, pane) in enumerate(PANES.items(), 1):
                with TabPane(f"{i} {tab.title()}", id=tab):
                    yield pane(id=f"{tab}-pane")
        yield Footer()

    def on_mount(self) -> None:
        # the digits switch tabs: the tab bar (TabbedContent's Tabs) out of the focus chain, so
        # that the first Tab from a tab's main widget reaches the tab's own first field
        # (Setup's pipeline file), not the bar above it
        self.query_one(Tabs).can_focus = False

    def choice(self) -> tuple:
        """What the tabs are told to show, as chosen (cheap: a pane's load compares it to drop
        what it read for an earlier choice)."""
        chosen = self.pipeline
        return (
            self.dataset_name,
            self.n,
            chosen and chosen.sha256,
            chosen and chosen.summary.get("file"),
        )

    def subject(self) -> Subject | None:
        """What every tab shows: the pipeline chosen on Setup, else the Plan's dataset resolved as
        every read command resolves it; None when that dataset cannot be read (the panes say
        there is nothing yet). Resolved once per choice (safe to call from a worker)."""
        choice = self.choice()
        known, subject = self._subject
        if known != choice:
            subject = self._resolve()
            self._subject = (choice, subject)
        return subject

    def _resolve(self) -> Subject | None:
        try:  # the Setup's choice first: a pipeline reads its own data
            return self.pipeline or self.kit.subject(self.dataset_name, self.n)
        except KitError:
            return None

    def to_run(self, factors=(), dataset: str | None = None, n: int | None = None):
        """What Plan and Run run, found as `kit run` finds it (kit.app.verbs.to_run): the
        pipeline Setup chose, from the words typed (a file is kept by its hash as it is now),
        else kit's own pipeline on ``dataset`` (the Plan's fields). KitError: one line."""
        words = self.pipeline.summary.get("given") if self.pipeline else None
        # the file reads its own data: the dataset fields are kit's own pipeline's words
        return self.kit.to_run(factors, *((None, None) if words else (dataset, n)), pipeline=words)

    def show_dataset(self, name: str, n: int | None) -> None:
        """The dataset every tab shows from now on (on the app's thread: a worker calls it with
        ``call_from_thread``): resolved again even if named as before (a fetch makes it)."""
        self.dataset_name, self.n = name, n
        self._subject = (None, None)

    def show_pipeline(self, text: str) -> Subject | None:
        """The lab pipeline (a file or hash prefix) every tab shows, and Plan and Run plan and
        run, from now on; "" for kit's own dataset again (None returned). KitError: one line,
        and the choice stays as it was."""
        self.pipeline = self.kit.subject(pipeline=text) if text else None
        return self.pipeline

    def ran(self, started: tuple, subject: Subject) -> None:
        """A Run that started on choice ``started`` made runs of ``subject`` (a pipeline's file
        as kept then: maybe edited since chosen): the tabs show it if nothing else was chosen
        meanwhile; another choice made meanwhile stays, and is said to."""
        if self.choice() == started:
            if self.pipeline is not None:  # the file as run is the one the tabs read now
                self.pipeline = subject
            self._subject = (None, None)  # its declaration, or a dataset now stored: read again
            return
        # a name is text (a bundle's may read as markup: `[@click=app.quit]x.py`)
        self.notify(
            f"the finished runs are of {markup(subject.label())}, not of the one Setup "
            f"chose since: the tabs show that one",
            timeout=8,
        )

    @guarded
    def on_plan_pane_plan_chosen(self, m: PlanPane.PlanChosen) -> None:
        # the Plan's fields chose a dataset, and with ``r`` a plan: the Run tab runs it
        self.show_dataset(m.dataset, m.n)
        if m.asked is not None:
            self.action_tab("run")
            self.pane("run").start(m.asked)
        else:  # the fields named another dataset: the plan's summary is read for it now
            self.pane("plan").update_summary()

    def pane(self, tab: str):
        return self.query_one(f"#{tab}-pane")

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # the digits are priority bindings (they switch tabs from any widget) except where they
        # are typed: a text field. Letters (r, q, d) are plain bindings, which fields take first.
        # The footer shows only what a key does where the focus is: in a field, q ? d are typed
        # (hidden there) and escape leaves it (shown only there).
        in_field = isinstance(self.focused, Input)
        if action in ("tab", "quit_app", "help", "toggle_dark") and in_field:
            return False
        return action != "leave_field" or in_field

    # -- actions ----------------------------------------------------------------------------
    @guarded
    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self.pane(tab).focus_main()  # now, so that the next key already reaches the new tab,
        self.call_after_refresh(self._keep_focus_in, tab)  # and once it is drawn

    def _keep_focus_in(self, tab: str) -> None:
        """Focus the tab's main widget unless focus is already somewhere in that tab (a quick
        typist's `tab` must not be undone)."""
        if self.query_one(TabbedContent).active != tab:  # a late message about an earlier tab
            return
        pane, focused = self.pane(tab), self.focused
        if focused is None or pane not in focused.ancestors_with_self:
            pane.focus_main()

    @guarded
    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # each tab opens with its main widget focused: Down and Enter work at once
        tab = event.pane.id
        assert tab is not None  # each TabPane is composed with its tab's name as id (compose)
        pane = self.pane(tab)
        pane.show()
        self._keep_focus_in(tab)

    def action_leave_field(self) -> None:
        if isinstance(self.focused, Input):
            self.pane(self.query_one(TabbedContent).active).leave_field()

    @guarded
    def action_run_plan(self) -> None:
        self.pane("plan").run_plan()

    def action_toggle_dark(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    @guarded
    def action_quit_app(self) -> None:
        if self.pane("run").running:
            self.push_screen(
                ConfirmScreen(
                    "A plan is running. Quit now? Finished runs are kept; "
                    "running the plan again resumes it."
                ),
                lambda yes: self.exit() if yes else None,
            )
        else:
            self.exit()

    def ended_by(self, said: Said) -> None:
        """A bug (an exception kit did not expect) in a handler or a worker, said by
        kit.tui.errors.say: its traceback is in a log file, and the app ends with exit status
        1; run_app prints the one line naming the file once the terminal is back (the first
        bug's, if more follow)."""
        if self.bug_line is None:
            self.bug_line = f"kit tui: {said.text}"
        self.bell()
        self.exit(return_code=1)


def run_app(app: KitApp, headless: bool = False) -> int:
    """Run an app; its exit status, with the one line about a bug (if any) on stderr."""

    # what Textual prints for an exception that reached it (one no handler of kit's caught:
    # a widget's own) goes to a file, as every bug's traceback does: one line on the screen
    caught = io.StringIO()
    app.error_console = Console(file=caught, markup=False, highlight=False, width=100)
    app.run(headless=headless)
    if app.bug_line is None and caught.getvalue().strip():
        app.bug_line = (
            f"kit tui: internal error (a bug in kit; the traceback is in "
            f"{log_traceback(_Printed(caught.getvalue()))})"
        )
    if app.bug_line:
        print(app.bug_line, file=sys.stderr)
    return app.return_code or 0


class _Printed(Exception):
    """The traceback Textual printed, to log where log_traceback logs every bug's."""
