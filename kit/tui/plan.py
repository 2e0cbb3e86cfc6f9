"""2. Plan: the factors and their settings; how many runs, which stacks, how long."""

from __future__ import annotations

from rich.segment import Segment
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import (Button, Checkbox, Input, Label, RadioButton, RadioSet,
                             SelectionList, Static)
from textual.strip import Strip
from textual.widgets.option_list import OptionDoesNotExist
from textual.widgets.selection_list import Selection

from ..app import audit as au
from ..core.errors import KitError
from ..core.subject import DATASET, PIPELINE
from ..views.quoting import markup
from .errors import guarded
from .pane import Pane
from .plan_lab import LAB_NOTE, LabChoice, lab_rows, lab_summary


def _numbers(text: str, parse=None) -> tuple:
    """A plan field's numbers, parsed as the CLI parses its flags (empty: the default)."""
    from ..runs.planning.options import parse_seeds

    text = text.strip()
    return (parse or parse_seeds)(text) if text else ()


def _field(label: str, value: str, id: str, placeholder: str = "", classes: str = ""):
    with Horizontal(classes=f"field {classes}"):
        yield Label(label)
        yield Input(value, placeholder=placeholder, id=id)


class Ticks(SelectionList):
    """A SelectionList whose unticked boxes are empty (`▐ ▌`, ticked `▐X▌`): Textual draws an X
    in both and tells them apart by colour only, which a monochrome or copied screen loses."""

    def render_line(self, y: int) -> Strip:
        line = super().render_line(y)
        try:  # one line per factor: the list's own render_line counts the same way
            selection = self.get_option_at_index(self.scroll_offset.y + y)
        except OptionDoesNotExist:
            return line
        segments = list(line)
        if (selection.value not in self.selected and len(segments) > 1
                and segments[1].text == Checkbox.BUTTON_INNER):
            segments[1] = Segment(" " * len(segments[1].text), segments[1].style)
            return Strip(segments, line.cell_length)
        return line


class PlanPane(Pane):
    """Choose factors and settings; see how many runs the plan needs and how long."""

    MAIN = "#factors"

    class PlanChosen(Message):
        """To the app: the dataset the fields name (every tab shows it) and, when ``r`` was
        pressed, the plan to run (else None)."""

        def __init__(self, dataset: str, n: int | None, audit: au.Audit | None = None):
            super().__init__()
            self.dataset, self.n, self.audit = dataset, n, audit

    def compose(self) -> ComposeResult:
        from ..runs.planning.availability import availability, devices
        from ..envs.kinds import listing

        app = self.app
        self._lab = (None, None)  # (hash, file) of the pipeline the list shows; None: kit's own
        with Horizontal():
            with Vertical(id="factor-column"):
                yield Ticks(*self._selections(availability(app.platform)), id="factors")
                yield Static(id="factor-help")
            with VerticalScroll(id="settings", can_focus=False):  # its fields take focus
                # kit's own pipeline's settings (class kit-only) give way to LAB_NOTE for a file
                yield from _field("dataset", app.dataset_name, "dataset", "synthetic", "kit-only")
                yield from _field("proteins", str(app.n or ""), "n", "all", "kit-only")
                yield from _field("threads", app.initial["threads"], "threads", "1..cores")
                yield from _field("seeds", app.initial["seeds"], "seeds", "factor default")
                yield from _field("iterations", "5,10,20,50", "iters", classes="kit-only")
                yield Static(LAB_NOTE, id="lab-note")
                yield Label("PyTorch device", classes="heading kit-only")
                devs = devices(app.platform)
                with RadioSet(id="device", classes="kit-only"):
                    for d in ("cpu", "mps", "cuda"):
                        yield RadioButton(d.upper() + ("" if devs[d] is None else " (not here)"),
                                          value=d == "cpu", disabled=devs[d] is not None,
                                          id=f"dev-{d}")
                # stacks added with `kit stacks add` that hold torch (a cluster's or GPU image's)
                self._torch_stacks = [r["name"] for r in listing(app.platform)
                                      if r["kind"] == "external" and "torch" in r["uses"]]
                if self._torch_stacks:
                    yield Label("PyTorch stack", classes="heading kit-only")
                    with RadioSet(id="torch-stack", classes="kit-only"):
                        yield RadioButton("the catalogue's", value=True, id="ts-0")
                        for i, name in enumerate(self._torch_stacks, 1):
                            yield RadioButton(f"{name} (external)", id=f"ts-{i}")
                yield Button("Run this plan (r)", id="run-plan", variant="primary")
        yield Static(id="plan-summary")

    def _selections(self, rows: list) -> list:
        self._about = {r["factor"]: r["description"] if r["available"]
                       else f"cannot run here: {r['reason']}" for r in rows}
        # unavailable factors stay in the list (a keyboard user reaches them and reads why under
        # it) but cannot be ticked
        self._unavailable = {r["factor"] for r in rows if not r["available"]}
        # a factor's name (a pipeline's seed:NAME) is text inside the prompt's markup
        return [Selection(markup(r["factor"]) if r["available"]
                          else f"[dim]{markup(r['factor'])} (not here)[/]",
                          r["factor"], r["factor"] in ("repeat", "seed")) for r in rows]

    def _follow_setup(self) -> None:
        """The factors of the pipeline the Setup tab chose (its file's, or kit's own again)."""
        from ..runs.planning.availability import availability

        app = self.app
        chosen = app.choice()[2:]  # the pipeline's hash and file (None, None: kit's own)
        if chosen == self._lab:
            return
        self._lab, own = chosen, app.kind() == DATASET
        factors = self.query_one("#factors", SelectionList)
        factors.clear_options()
        factors.add_options(self._selections(availability(app.platform) if own else lab_rows(app)))
        factors.highlighted = 0
        for w in self.query(".kit-only"):
            w.display = own
        self.query_one("#lab-note").display = not own

    def on_mount(self) -> None:
        self.query_one("#lab-note").display = False
        self.show()

    def show(self) -> None:
        self._follow_setup()
        self.update_summary()

    def focus_main(self) -> None:
        factors = self.query_one("#factors", SelectionList)
        factors.focus()
        if factors.highlighted is None:  # space toggles the highlighted factor: start at the top
            factors.highlighted = 0

    @on(SelectionList.SelectionHighlighted)
    def describe(self, event: SelectionList.SelectionHighlighted) -> None:
        factor = event.selection.value
        self.query_one("#factor-help", Static).update(
            f"[b]{markup(factor)}[/]: {markup(self._about[factor])}")
        # a longer description shrinks the list beside it: once that is laid out, bring the
        # highlighted factor back into view (perturb's 5 lines hid it at 80x24)
        self.call_after_refresh(self.query_one("#factors", SelectionList).scroll_to_highlight)

    def selected_device(self) -> str | None:
        pressed = self.query_one("#device", RadioSet).pressed_button
        dev = pressed.id.removeprefix("dev-") if pressed else "cpu"
        return None if dev == "cpu" else dev

    def selected_torch_stack(self) -> str | None:
        if not self._torch_stacks:
            return None
        pressed = self.query_one("#torch-stack", RadioSet).pressed_button
        i = int(pressed.id.removeprefix("ts-")) if pressed else 0
        return self._torch_stacks[i - 1] if i else None

    def _dataset(self) -> tuple:
        """(dataset, proteins) as the fields name them (None: all the proteins)."""
        from ..runs.planning.options import parse_int

        n_text = self.query_one("#n", Input).value.strip()
        try:  # the CLI's --n, bound included
            n = parse_int(n_text, "--n") if n_text else None
        except ValueError as e:
            raise KitError(f"proteins: {e}") from None
        return self.query_one("#dataset", Input).value.strip() or "synthetic", n

    def audit(self) -> au.Audit | LabChoice:
        """The plan the fields describe (a KitError, shown in the summary, if they are wrong):
        kit's own, or the Setup tab's pipeline's, by what the app has chosen."""
        self._follow_setup()
        factors = tuple(self.query_one("#factors", SelectionList).selected)
        return self._KINDS[self.app.kind()][0](self, factors)

    def _options(self, **kit_only):
        """The fields every pipeline takes, as the CLI parses its flags, and ``kit_only``'s."""
        from ..runs.planning.options import PlanOptions, parse_threads

        try:  # the CLI's messages are the ones a user needs here
            return PlanOptions(threads=_numbers(self.query_one("#threads", Input).value,
                                                parse_threads),
                               seeds=_numbers(self.query_one("#seeds", Input).value),
                               **{k: v() for k, v in kit_only.items()})
        except ValueError as e:
            raise KitError(str(e)) from None

    def _lab_audit(self, factors: tuple) -> LabChoice:
        return LabChoice(self.app.pipeline_info(), self.app.pipeline_path, factors,
                         self._options())

    def _kit_audit(self, factors: tuple) -> au.Audit:
        from ..runs.planning.options import SVD_ITERS, parse_iters

        dataset, n = self._dataset()
        opts = self._options(
            svd_iters=lambda: _numbers(self.query_one("#iters", Input).value,
                                       parse_iters) or SVD_ITERS,
            device=self.selected_device, torch_stack=self.selected_torch_stack)
        if (dataset, n) != (self.app.dataset_name, self.app.n):
            self.app.post_message(self.PlanChosen(dataset, n))
        return au.prepare(list(factors), dataset, n, opts, plat=self.app.platform)

    @on(SelectionList.SelectedChanged)
    def _refuse_unavailable(self) -> None:
        factors = self.query_one("#factors", SelectionList)
        for f in set(factors.selected) & self._unavailable:
            factors.deselect(f)
            self.app.notify(markup(f"{f}: {self._about[f]}"), severity="warning", timeout=6)

    @on(SelectionList.SelectedChanged)
    @on(Input.Changed)
    @on(RadioSet.Changed)
    def update_summary(self) -> None:
        out = self.query_one("#plan-summary", Static)
        try:
            plan = self.audit()
            out.update(self._KINDS[self.app.kind()][1](self, plan))
        except KitError as e:
            out.update(f"[red]{markup(e)}[/]")

    def _summary(self, a: au.Audit) -> str:
        build = au.stacks_to_build(a)
        if build:
            mb = sum(b or 0 for _, b in build) / 2 ** 20
            return (f"[b]{len(a.factors)} factor(s)[/]; running builds "
                    + markup(", ".join(n for n, _ in build)) + f" first (about {mb:,.0f} MB to download)")
        au.plan_runs(a)
        todo = au.todo(a, self.app.store)
        est = au.estimate_seconds(a, self.app.store)
        return (f"[b]{len(a.pairs)} pairs, {len(a.specs)} runs[/]: {len(a.specs) - len(todo)} "
                f"stored, {len(todo)} to run"
                + (f", about {est / 60:.1f} min from past timings" if est is not None else
                   ", no past timings for an estimate"))

    @on(Button.Pressed, "#run-plan")
    @guarded
    def run_plan(self) -> None:
        try:
            a = self.audit()
        except KitError as e:
            self.app.notify(markup(e), severity="error", timeout=8)
            return
        self.app.post_message(self.PlanChosen(*self._KINDS[self.app.kind()][2](self), a))

    # what a plan is of, by the kind of what is chosen: (the plan, its summary, the dataset the
    # tabs show once it runs: a pipeline reads its own data, the dataset stays as it was)
    _KINDS = {DATASET: (_kit_audit, _summary, _dataset),
              PIPELINE: (_lab_audit, lambda self, c: lab_summary(self.app, c),
                         lambda self: (self.app.dataset_name, self.app.n))}
