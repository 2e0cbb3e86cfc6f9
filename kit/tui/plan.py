"""2. Plan: the factors and their settings; how many runs, which stacks, how long."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from rich.console import Console
from rich.segment import Segment
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.strip import Strip
from textual.widgets import (
    Button,
    Checkbox,
    Input,
    Label,
    RadioButton,
    RadioSet,
    SelectionList,
    Static,
)
from textual.widgets.option_list import OptionDoesNotExist
from textual.widgets.selection_list import Selection

from ..app.facade import pairs_before_building
from ..core.errors import KitError
from ..core.numbers import span
from ..runs.planning.options import (
    SVD_ITERS,
    PlanOptions,
    parse_int,
    parse_iters,
    parse_seeds,
    parse_threads,
)
from ..views.quoting import markup
from .errors import guarded
from .pane import Pane

TICKED = ("repeat", "seed")  # ticked when the list is made: the null experiment and the yardstick
# the settings of kit's own pipeline a file does not take, said in one line where they were
LAB_NOTE = (
    "dataset, proteins, iterations, PyTorch device: kit's own pipeline's, not a "
    "file's (it reads its own data, on the device its code chooses)"
)


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
        if (
            selection.value not in self.selected
            and len(segments) > 1
            and segments[1].text == Checkbox.BUTTON_INNER
        ):
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
        app = self.app
        # (hash, file) of the pipeline the list shows; None: no list yet (it is read in a worker
        # once the screen is up: what this machine runs takes interpreters started to know)
        self._lab: tuple | None = None
        self._about: dict[str, str] = {}  # each factor's line under the list
        self._unavailable: set[str] = set()
        with Horizontal():
            with Vertical(id="factor-column"):
                yield Ticks(id="factors")
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
                with RadioSet(id="device", classes="kit-only"):
                    for d in ("cpu", "mps", "cuda"):  # as availability.devices says them
                        why = app.platform.device_reason(d)  # (its module: after the paint)
                        yield RadioButton(
                            d.upper() + ("" if why is None else " (not here)"),
                            value=d == "cpu",
                            disabled=why is not None,
                            id=f"dev-{d}",
                        )
                # stacks added with `kit stacks add` that hold torch (a cluster's or GPU image's)
                self._torch_stacks = _torch_stacks()
                if self._torch_stacks:
                    yield Label("PyTorch stack", classes="heading kit-only")
                    with RadioSet(id="torch-stack", classes="kit-only"):
                        yield RadioButton("the catalogue's", value=True, id="ts-0")
                        for i, name in enumerate(self._torch_stacks, 1):
                            yield RadioButton(f"{name} (external)", id=f"ts-{i}")
                yield Button("Run this plan (r)", id="run-plan", variant="primary")
        yield Static("reading what this machine can run ...", id="plan-summary")

    def _selections(self, rows: list) -> list:
        self._about = {
            r["factor"]: r["description"] if r["available"] else f"cannot run here: {r['reason']}"
            for r in rows
        }
        # unavailable factors stay in the list (a keyboard user reaches them and reads why under
        # it) but cannot be ticked
        self._unavailable = {r["factor"] for r in rows if not r["available"]}
        # the ticked ones first (repeat and seed): at 80x24 seed was below the fold, ticked
        # out of sight; the others in the registry's order
        ticked = [r for r in rows if r["factor"] in TICKED]
        # a factor's name (a pipeline's seed:NAME) is text inside the prompt's markup
        return [
            Selection(
                markup(r["factor"])
                if r["available"]
                else f"[dim]{markup(r['factor'])} (not here)[/]",
                r["factor"],
                r["factor"] in TICKED,
            )
            for r in ticked + [r for r in rows if r not in ticked]
        ]

    def _offers(self) -> tuple:
        """(the pipeline's hash and file the list is for, the factors the subject chosen offers
        as the registry offers them, kit.runs.planning.offers): read in a worker (it starts
        interpreters to see which stacks run here), or on the app's thread when `r` cannot wait."""
        from ..runs.planning.availability import availability
        from ..runs.planning.offers import offered

        app = self.app
        chosen, subject = app.choice()[2:], app.subject()
        # no subject readable yet (an empty store): what this machine runs, the registry's
        # rows for kit's own pipeline, which are its factors with or without a dataset
        rows = (
            [o.to_json() for o in offered(subject, app.platform)]
            if subject is not None
            else availability(app.platform)
        )
        return chosen, subject is None or not subject.reads_own_data, rows

    def _draw_offers(self, offers: tuple) -> None:
        chosen, own, rows = offers
        if chosen == self._lab:
            return  # drawn already (by `r`, which could not wait): the ticks stay as they are
        self._lab = chosen
        factors = self.query_one("#factors", SelectionList)
        factors.clear_options()
        factors.add_options(self._selections(rows))
        factors.highlighted = 0
        # a file reads its own data, on the device its code chooses: kit's settings are not its
        for w in self.query(".kit-only"):
            w.display = own
        self.query_one("#lab-note").display = not own
        self.update_summary()

    def _follow_setup(self) -> None:
        """The list for the subject chosen now, read here if it is not yet (`r` pressed before
        the worker's list came)."""
        if self.app.choice()[2:] != self._lab:
            self._draw_offers(self._offers())

    def on_mount(self) -> None:
        self.query_one("#lab-note").display = False
        self.show()

    _reading: tuple | None = None  # the choice whose list a worker is reading now

    def show(self) -> None:
        chosen = self.app.choice()[2:]
        if chosen == self._lab:
            self.update_summary()
        elif chosen != self._reading:  # read for the subject chosen; drawn, the summary
            self._reading = chosen  # (read once: the tab opened as it reads waits for it)
            self.load(self._offers, self._draw_offers, "offers")

    def settled(self, slot: str) -> None:
        if slot == "offers":
            self._reading = None

    def focus_main(self) -> None:
        factors = self.query_one("#factors", SelectionList)
        factors.focus()
        if factors.highlighted is None:  # space toggles the highlighted factor: start at the top
            factors.highlighted = 0

    @on(SelectionList.SelectionHighlighted)
    def describe(self, event: SelectionList.SelectionHighlighted) -> None:
        factor = event.selection.value
        self.query_one("#factor-help", Static).update(
            f"[b]{markup(factor)}[/]: {markup(self._about[factor])}"
        )
        # a longer description shrinks the list beside it: once that is laid out, bring the
        # highlighted factor back into view (perturb's 5 lines hid it at 80x24)
        self.call_after_refresh(self.query_one("#factors", SelectionList).scroll_to_highlight)

    def selected_device(self) -> str | None:
        pressed = self.query_one("#device", RadioSet).pressed_button
        dev = pressed.id.removeprefix("dev-") if pressed is not None and pressed.id else "cpu"
        return None if dev == "cpu" else dev

    def selected_torch_stack(self) -> str | None:
        if not self._torch_stacks:
            return None
        pressed = self.query_one("#torch-stack", RadioSet).pressed_button
        i = int(pressed.id.removeprefix("ts-")) if pressed is not None and pressed.id else 0
        return self._torch_stacks[i - 1] if i else None

    def _dataset(self) -> tuple:
        """(dataset, proteins) as the fields name them (None: all the proteins)."""
        n_text = self.query_one("#n", Input).value.strip()
        try:  # the CLI's --n, bound included
            n = parse_int(n_text, "--n") if n_text else None
        except ValueError as e:
            raise KitError(f"proteins: {e}") from None
        return self.query_one("#dataset", Input).value.strip() or "synthetic", n

    def asked(self) -> Asked:
        """What the fields ask (a KitError, shown in the summary, if they are wrong)."""
        self._follow_setup()
        ticks = self.query_one("#factors", SelectionList)
        ticked = set(ticks.selected)  # in the list's order (the summary names them so)
        factors = tuple(
            value
            for value in (ticks.get_option_at_index(i).value for i in range(ticks.option_count))
            if value in ticked
        )
        try:  # the CLI's messages are the ones a user needs here
            opts = PlanOptions(
                threads=_numbers(self.query_one("#threads", Input).value, parse_threads),
                seeds=_numbers(self.query_one("#seeds", Input).value),
                svd_iters=_numbers(self.query_one("#iters", Input).value, parse_iters) or SVD_ITERS,
                device=self.selected_device(),
                torch_stack=self.selected_torch_stack(),
            )
        except ValueError as e:
            raise KitError(str(e)) from None
        return Asked(factors, opts, *self._dataset())

    def plan(self, asked: Asked):
        """The plan ``asked`` describes, by the plan verb for whichever subject is chosen
        (kit.app.verbs.plan, its subject found by to_run as `kit run` finds it). It reads the
        store and asks which stacks are built: on a worker."""
        app = self.app
        target = app.to_run(asked.factors, asked.dataset, asked.n)
        return app.kit.plan(target, asked.options, plat=app.platform)

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
        """The summary of the plan the fields ask: a wrong field said at once, the plan read
        on a worker (the app keeps taking keys while it reads)."""
        app, out = self.app, self.query_one("#plan-summary", Static)
        if self._lab != app.choice()[2:]:
            return  # the list is read first; drawn, it asks for the summary
        try:
            asked = self.asked()
        except KitError as e:
            self.drop("summary")  # a plan still being read for the fields as they were
            out.update(f"[red]{markup(e)}[/]")
            return
        if (asked.dataset, asked.n) != (app.dataset_name, app.n):
            # the app shows that dataset on every tab, then asks for the summary again
            app.post_message(self.PlanChosen(asked.dataset, asked.n))
            return
        width = self.text_width()
        self.load(lambda: self._read_summary(asked, width), out.update, "summary")

    def _read_summary(self, asked: Asked, width: int) -> str:
        try:
            return _summary(self.plan(asked), width)
        except KitError as e:  # a setting the plan refuses (too many threads, a stack's torch)
            return f"[red]{markup(e)}[/]"

    @on(Button.Pressed, "#run-plan")
    @guarded
    def run_plan(self) -> None:
        try:  # planned again on the Run tab's worker, as `kit run` plans: a file is read there
            asked = self.asked()
        except KitError as e:
            self.app.notify(markup(e), severity="error", timeout=8)
            return
        self.app.post_message(self.PlanChosen(asked.dataset, asked.n, asked))


def _torch_stacks() -> list:
    """The stacks added with `kit stacks add` that hold torch, as registered (no interpreter is
    started: the Plan composes them before its first paint)."""
    from ..envs.external import registry, uses

    return [name for name, entry in registry().items() if "torch" in uses(entry["facts"])]


SUMMARY_LINES = 3  # at 80x24: what the settings beside the list leave


def _summary(p, width: int) -> str:
    """A Plan record (kit.app.verbs.plan) in at most SUMMARY_LINES lines of ``width``: its
    subject, its pairs by ticked factor, its runs, how many are stored, and the time from past
    timings; or the ticked factors and the stacks to build first. Factors that do not fit are
    counted ("+3 more")."""
    # a stack to build (blas ticked) still has its pairs counted: the count stays in its place
    planned = pairs_before_building(p) if p.stacks else p.pairs
    pairs = Counter(pair.factor for pair in planned or ())
    names = list(p.factors) + [f for f in pairs if f not in p.factors]
    if p.stacks:
        mb = sum(b or 0 for _, b in p.stacks) / 2**20
        items = [markup(f) + (f" {pairs[f]}" if planned is not None else "") for f in names]
        stacks = markup(", ".join(n for n, _ in p.stacks))
        head = (
            f"{markup(p.subject.label())}: [b]{len(planned)} pairs[/] ("
            if planned is not None
            else "[b]"
        )

        def building(shown: str, stacks: str = stacks) -> str:  # the stacks named, or counted
            return (
                f"{head}{shown}{')' if planned is not None else '[/]'}: running builds {stacks} "
                f"first (about {mb:,.0f} MB to download)"
            )

        text = _fitted(building, items, width)
        if _lines(text, width) <= SUMMARY_LINES:
            return text
        # too many stacks to name beside the factors: counted (the Setup tab lists them)
        return _fitted(
            lambda shown: building(shown, f"{len(p.stacks)} stacks (Setup lists them)"),
            items,
            width,
        )
    else:
        est = p.estimate()
        items = [f"{markup(f)} {pairs[f]}" for f in names]
        line = lambda shown: (  # noqa: E731
            f"{markup(p.subject.label())}: [b]{len(p.pairs)} pairs[/] ({shown}), "
            f"[b]{len(p.specs)} runs[/]: {len(p.specs) - len(p.todo)} stored, "
            f"{len(p.todo)} to run"
            # span: "2 s", "12 min" as the CLI and the Run tab say it (a tiny run was "0.0 min")
            + (
                f", about {span(est)} from past timings"
                if est is not None
                else ", no past timings for an estimate"
            )
        )
    return _fitted(line, items, width)


def _fitted(line, items: list, width: int) -> str:
    """``line(text of items)`` with as many of ``items`` as fit SUMMARY_LINES lines of
    ``width`` (the rest counted: "+3 more")."""

    for keep in range(len(items), -1, -1):
        rest = len(items) - keep
        text = line(", ".join(items[:keep] + ([f"+{rest} more"] if rest else [])) or "none")
        if _lines(text, width) <= SUMMARY_LINES:
            return text
    return text


def _lines(text: str, width: int) -> int:
    """How many lines ``text`` (markup) takes at ``width``."""
    console = Console(width=max(width, 20))
    return len(Text.from_markup(text).wrap(console, console.width))
