"""2. Plan: the factors and their settings; how many runs, which stacks, how long."""

from __future__ import annotations

from dataclasses import dataclass

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

from ..core.errors import KitError
from ..runs.planning.options import PlanOptions
from ..views.quoting import markup
from .errors import guarded
from .pane import Pane

# the settings of kit's own pipeline a file does not take, said in one line where they were
LAB_NOTE = ("dataset, proteins, iterations, PyTorch device: kit's own pipeline's, not a "
            "file's (it reads its own data, on the device its code chooses)")


@dataclass(frozen=True)
class Asked:
    """What the Plan's fields ask, in `kit run`'s words: the factors ticked, the options, and
    the dataset of kit's own pipeline (a pipeline chosen on Setup reads its own data: the
    app's to_run leaves the dataset out then). The Run tab plans and runs it as `kit run`
    does (kit.app.verbs.run)."""
    factors: tuple
    options: PlanOptions
    dataset: str
    n: int | None


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
        pressed, what to run (an Asked; else None)."""

        def __init__(self, dataset: str, n: int | None, asked: Asked | None = None):
            super().__init__()
            self.dataset, self.n, self.asked = dataset, n, asked

    def compose(self) -> ComposeResult:
        from ..runs.planning.availability import availability, devices
        from ..envs.kinds import listing

        app = self.app
        # (hash, file) of the pipeline the list shows; (None, None): kit's own, as composed
        # (the app starts on it, before any subject is read)
        self._lab = (None, None)
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
        """The factors the subject chosen offers (the Setup tab's pipeline, or kit's own on the
        dataset), as the registry offers them (kit.runs.planning.offers)."""
        from ..runs.planning.availability import availability
        from ..runs.planning.offers import offered

        app = self.app
        chosen = app.choice()[2:]  # the pipeline's hash and file (None, None: kit's own)
        if chosen == self._lab:
            return
        self._lab, subject = chosen, app.subject()
        # no subject readable yet (an empty store): what this machine runs, the registry's
        # rows for kit's own pipeline, which are its factors with or without a dataset
        rows = ([o.to_json() for o in offered(subject, app.platform)] if subject is not None
                else availability(app.platform))
        factors = self.query_one("#factors", SelectionList)
        factors.clear_options()
        factors.add_options(self._selections(rows))
        factors.highlighted = 0
        # a file reads its own data, on the device its code chooses: kit's settings are not its
        own = subject is None or not subject.reads_own_data
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

    def asked(self) -> Asked:
        """What the fields ask (a KitError, shown in the summary, if they are wrong)."""
        from ..runs.planning.options import SVD_ITERS, parse_iters, parse_threads

        self._follow_setup()
        factors = tuple(self.query_one("#factors", SelectionList).selected)
        try:  # the CLI's messages are the ones a user needs here
            opts = PlanOptions(
                threads=_numbers(self.query_one("#threads", Input).value, parse_threads),
                seeds=_numbers(self.query_one("#seeds", Input).value),
                svd_iters=_numbers(self.query_one("#iters", Input).value, parse_iters) or SVD_ITERS,
                device=self.selected_device(), torch_stack=self.selected_torch_stack())
        except ValueError as e:
            raise KitError(str(e)) from None
        return Asked(factors, opts, *self._dataset())

    def plan(self):
        """The plan the fields describe, by the plan verb for whichever subject is chosen
        (kit.app.verbs.plan, its subject found by to_run as `kit run` finds it)."""
        from ..app.verbs import plan

        app, asked = self.app, self.asked()
        if (asked.dataset, asked.n) != (app.dataset_name, app.n):
            app.post_message(self.PlanChosen(asked.dataset, asked.n))
        target = app.to_run(asked.factors, asked.dataset, asked.n)
        return plan(app.store, target, target.factors, asked.options, plat=app.platform)

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
            out.update(_summary(self.plan()))
        except KitError as e:
            out.update(f"[red]{markup(e)}[/]")

    @on(Button.Pressed, "#run-plan")
    @guarded
    def run_plan(self) -> None:
        try:  # planned again on the Run tab's worker, as `kit run` plans: a file is read there
            asked = self.asked()
        except KitError as e:
            self.app.notify(markup(e), severity="error", timeout=8)
            return
        self.app.post_message(self.PlanChosen(asked.dataset, asked.n, asked))


def _summary(p) -> str:
    """A Plan record (kit.app.verbs.plan) in a line or two: its subject, its pairs and runs,
    how many are stored, and the time from past timings; or the stacks to build first."""
    if p.stacks:
        mb = sum(b or 0 for _, b in p.stacks) / 2 ** 20
        return (f"[b]{len(p.factors)} factor(s)[/]; running builds "
                + markup(", ".join(n for n, _ in p.stacks))
                + f" first (about {mb:,.0f} MB to download)")
    est = p.estimate()
    return (f"{markup(p.subject.label())}: [b]{len(p.pairs)} pairs, {len(p.specs)} runs[/]: "
            f"{len(p.specs) - len(p.todo)} stored, {len(p.todo)} to run"
            + (f", about {est / 60:.1f} min from past timings" if est is not None else
               ", no past timings for an estimate"))
