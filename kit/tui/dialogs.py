"""The help screen (scrolls with the keyboard) and a yes/no question."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
# kit: a reproducibility budget

Walk the tabs in order (the digit keys switch tabs; inside a text field they are typed, and
`escape` leaves the field):

1. **Setup**: the dataset (synthetic, or the Swiss-Prot subset: `f` fetches it, `v` verifies it)
   and the stacks (pinned environments; `b` builds the highlighted one). The field (the first
   `tab`) takes your pipeline file: every tab, Plan and Run too, then works on it.
2. **Plan**: tick factors with `space`; `tab` moves to the settings (dataset, proteins, threads,
   seeds, power iterations, PyTorch device). The ticked ones head the list; greyed factors
   cannot run here, and the line under the list says why. The summary names each ticked
   factor with its pairs, counts runs, says which stacks a run would build and estimates the
   time from past runs.
3. **Run**: `r` (or `ctrl+r` anywhere) runs the plan; `c` cancels after the run in progress.
   Every finished run is kept: run again to resume.
4. **Budget**: one row per factor. `u` switches raw flips and seed units, `p` shows the flips
   per factor as bars, `a` the amplification curves (`perturb` factor), `enter` lists the
   highlighted factor's pairs and what else differed within them.
5. **Verdicts**: do the twelve model comparisons hold across seeds and stacks? `s` shows the
   next run set.
6. **Advice**: what to pin first, from the numbers; `e` writes report.md and report.html into
   the folder named whole under the field, naming each part as it goes.
7. **Compare**: a lab's bundle (`kit export`) rerun here: does this machine reproduce it?
   `p` enters the path field: type its path and press `enter`.

`?` this help (arrows and page keys scroll it; `escape` closes it), `d` light/dark, `q` quit
(while a plan runs, it asks first). The mouse works too.
"""


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "close")]

    def compose(self) -> ComposeResult:
        from textual.widgets import Markdown  # its parser: imported when help is first asked

        with VerticalScroll(id="help"):
            yield Markdown(HELP)

    def on_mount(self) -> None:
        self.query_one("#help").focus()  # up/down/pageup/pagedown scroll it at once


class ConfirmScreen(ModalScreen[bool]):
    """A question answered with y or n (escape: no)."""

    BINDINGS = [Binding("y", "answer(True)", "yes"), Binding("n,escape", "answer(False)", "no")]

    def __init__(self, question: str):
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(self.question)
            yield Static("[b]y[/] yes    [b]n[/] no", id="confirm-keys")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
