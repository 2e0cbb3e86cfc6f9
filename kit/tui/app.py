"""The Textual application: six tabs in the order of an audit, keyboard first."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Footer, Header, Markdown, TabbedContent, TabPane

from ..data.dataset import FIRST_LOOK_N
from ..errors import KitError
from ..platforms import Platform, detect
from .panes import (AdvicePane, BudgetPane, ComparePane, PlanPane, RunPane, SetupPane,
                    VerdictsPane)

TABS = ("setup", "plan", "run", "budget", "verdicts", "advice", "compare")

HELP = """\
# kit: a reproducibility budget

Walk the tabs in order:

1. **Setup**: the dataset (synthetic, or the Swiss-Prot subset: *Fetch*) and the stacks
   (pinned environments; *Build* the highlighted one).
2. **Plan**: tick factors (space), set threads, seeds, power iterations and the PyTorch device.
   Greyed factors cannot run here; the line says why. The summary counts runs and estimates time.
3. **Run**: `r` or `ctrl+r` runs the plan; `Cancel` keeps every finished run; run again to resume.
4. **Budget**: one row per factor. `u` switches raw flips and seed units, `p` the flips plot,
   `a` the amplification curves (`perturb` factor), Enter shows a factor's pairs and confounds.
5. **Verdicts**: do the twelve model comparisons hold across seeds and stacks? `s` next run set.
6. **Advice**: what to pin first, from the numbers; *Export report* writes Markdown + HTML.
7. **Compare**: a lab's bundle (`kit export`) rerun here: does this machine reproduce it?

Keys: `1`-`7` tabs, `ctrl+r` run, `d` light/dark, `?` this help, `q` quit, `tab` next field.
The mouse works too.
"""


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "close")]

    def compose(self) -> ComposeResult:
        yield Markdown(HELP, id="help")


class KitApp(App):
    """kit's terminal interface; ``platform`` may be injected (tests)."""

    CSS_PATH = "app.tcss"
    TITLE = "kit: reproducibility budget"
    BINDINGS = [
        Binding("1", "tab('setup')", "Setup", priority=True),
        Binding("2", "tab('plan')", "Plan", priority=True),
        Binding("3", "tab('run')", "Run", priority=True),
        Binding("4", "tab('budget')", "Budget", priority=True),
        Binding("5", "tab('verdicts')", "Verdicts", priority=True),
        Binding("6", "tab('advice')", "Advice", priority=True),
        Binding("7", "tab('compare')", "Compare", show=False, priority=True),
        Binding("ctrl+r", "run_plan", "Run plan", priority=True),
        Binding("r", "run_plan", "Run plan", show=False),
        Binding("u", "toggle_units", "Units", show=False),
        Binding("p", "toggle_plot('budget-plot')", "Plot", show=False),
        Binding("a", "toggle_plot('amplify-plot')", "Amplification", show=False),
        Binding("s", "next_set", "Run set", show=False),
        Binding("d", "toggle_dark", "Light/dark"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, dataset: str = "synthetic", n: int | None = FIRST_LOOK_N,
                 platform: Platform | None = None, threads: str = "", seeds: str = ""):
        super().__init__()
        self.dataset_name = dataset
        self.n = n
        self.initial = {"threads": threads, "seeds": seeds}  # prefilled plan settings
        self.platform = platform or detect()
        self.seed_units = False
        self.verdict_set = None
        self.last_budget = None

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(initial="setup"):
            for tab, pane in zip(TABS, (SetupPane, PlanPane, RunPane, BudgetPane, VerdictsPane,
                                        AdvicePane, ComparePane)):
                with TabPane(f"{TABS.index(tab) + 1} {tab.title()}", id=tab):
                    yield pane(id=f"{tab}-pane")
        yield Footer()

    def dataset_hash(self) -> str | None:
        from ..data import load_dataset

        try:
            return load_dataset(self.dataset_name, self.n).sha256
        except KitError:
            return None

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # digits switch tabs from anywhere except where they are typed (an Input)
        from textual.widgets import Input

        if action == "tab" and isinstance(self.focused, Input):
            return False
        return True

    # -- actions ----------------------------------------------------------------------------
    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        tab = event.pane.id
        if tab in ("budget", "verdicts", "advice"):
            self.query_one(f"#{tab}-pane").show()
        elif tab == "setup":
            self.query_one("#setup-pane", SetupPane).refresh_all()
        elif tab == "plan":  # keyboard users start at the factor list, then Tab through settings
            self.query_one("#factors").focus()

    def action_run_plan(self) -> None:
        try:
            audit = self.query_one("#plan-pane", PlanPane).audit()
        except KitError as e:
            self.notify(str(e), severity="error", timeout=8)
            return
        self.action_tab("run")
        self.query_one("#run-pane", RunPane).start(audit)

    def action_toggle_units(self) -> None:
        self.seed_units = not self.seed_units
        self.query_one("#budget-pane", BudgetPane).show()

    def action_toggle_plot(self, plot_id: str) -> None:
        plot = self.query_one(f"#{plot_id}")
        plot.display = not plot.display

    def action_next_set(self) -> None:
        from ..verdicts import verdict_sets
        from ..store import Store

        ds = self.dataset_hash()
        names = list(verdict_sets(Store(), ds)) if ds else []
        if names:
            i = names.index(self.verdict_set) + 1 if self.verdict_set in names else 0
            self.verdict_set = names[i % len(names)]
            self.query_one("#verdicts-pane", VerdictsPane).show()

    def action_toggle_dark(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def _handle_exception(self, error: Exception) -> None:
        """A KitError is the user's to fix: shown, and the app goes on. Anything else is a bug:
        the app ends with one line naming the file that holds the traceback, and exits 1."""
        if isinstance(error, KitError):
            self.notify(str(error), severity="error", timeout=10)
            return
        from ..cli import _log_traceback

        self._return_code = 1
        if self._exception is None:  # as Textual does: the test pilot re-raises it
            self._exception = error
            self._exception_event.set()
        self.panic(f"kit tui: internal error: {type(error).__name__}: {error} (a bug in kit; the "
                   f"traceback is in {_log_traceback(error)})")


def run(dataset: str = "synthetic", n: int | None = FIRST_LOOK_N, threads: str = "",
        seeds: str = "") -> int:
    """Run the app; its exit status (non-zero when it ended on an error)."""
    app = KitApp(dataset, n, threads=threads, seeds=seeds)
    app.run()
    return app.return_code or 0
