"""kit tui: the whole flow with Textual's pilot on a tiny real plan, and a snapshot per screen."""

import os
from pathlib import Path

import pytest
from places import SUPPORT
from stored import every_kind_store
from textual.widgets import DataTable, Input, Markdown, SelectionList

from kit.data import load_dataset
from kit.envs.platforms import Platform
from kit.runs.store import Store
from kit.tui.app import KitApp

N = 120
# fixed platform facts so every screen is the same on any machine of this kind
LINUX = Platform("linux", "x86_64", cpu_flags=frozenset({"avx", "avx2", "sse4_2"}), downloads=True)


def app(**prefill):
    return KitApp("synthetic", N, platform=LINUX, store=Store(), **prefill)


@pytest.fixture
def stored_home(kit_home, tmp_path):
    every_kind_store(tmp_path, dataset=load_dataset("synthetic", N), home=kit_home)
    return kit_home


async def wait_for_run(pilot, timeout=600):
    await idle(pilot)


async def idle(pilot):
    """Until no worker runs and what they read is drawn (a draw may start the next read: the
    Plan's list, then its summary). A read replaced by a newer one is cancelled: not waited."""
    from textual.worker import WorkerCancelled

    while True:
        await pilot.pause()
        running = [w for w in pilot.app.workers if w.is_running and not w.is_cancelled]
        if not running:
            return
        for w in running:
            try:
                await w.wait()
            except WorkerCancelled:
                pass


async def until(pilot, done, seconds=60.0):
    """Pause until ``done()`` holds: a worker's last message (its result drawn) may still be on
    its way when no worker runs any more, on a loaded machine. Fails past ``seconds``."""
    import time

    end = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < end, f"not done within {seconds} s"
        await pilot.pause(0.05)


async def settled(pilot, *keys):
    """Press ``keys``, each once what the last one read (in a pane's worker) is drawn."""
    for key in keys:
        await pilot.press(key)
        await idle(pilot)
    if not keys:
        await idle(pilot)


def text(widget) -> str:
    return str(widget.render())


def screen_text(pilot) -> str:
    """The screen as characters, as `tmux capture-pane` shows it (no colours)."""
    return "\n".join(s.text for s in pilot.app.screen._compositor.render_strips())


# -- the whole flow, by keys only ------------------------------------------------------------
@pytest.mark.slow
async def test_walk_from_plan_to_advice_by_keys():
    async with app(threads="1", seeds="0-1").run_test(size=(80, 24)) as pilot:
        await settled(pilot, "2")
        factors = pilot.app.query_one("#factors", SelectionList)
        assert set(factors.selected) == {"repeat", "seed"} and pilot.app.focused is factors
        summary = text(pilot.app.query_one("#plan-summary"))
        assert "2 pairs (repeat 1, seed 1), 3 runs: 0 stored, 3 to run" in summary
        await pilot.press("r")
        assert pilot.app.query_one("TabbedContent").active == "run"
        await wait_for_run(pilot)
        assert "finished: 3 run(s)" in text(pilot.app.query_one("#run-status"))
        await settled(pilot, "4")
        table = pilot.app.query_one("#budget-table", DataTable)
        assert pilot.app.focused is table  # Down and Enter work at once
        assert [table.get_row_at(i)[0] for i in range(table.row_count)] == ["repeat", "seed"]
        await settled(pilot, "down", "enter")
        pairs = pilot.app.query_one("#pairs", DataTable)
        assert pairs.display and pairs.row_count == 1 and "seed 0 vs 1" in pairs.get_row_at(0)[0]
        await settled(pilot, "5")
        assert pilot.app.query_one("#verdicts-table", DataTable).row_count == 12
        await settled(pilot, "6")
        assert "null experiment held" in pilot.app.query_one("#advice-md", Markdown).source
        await settled(pilot, "2")  # everything is stored now
        assert "3 stored, 0 to run" in text(pilot.app.query_one("#plan-summary"))


@pytest.mark.slow
async def test_cancel_keeps_finished_runs_and_resumes_by_keys():
    async with app(threads="1", seeds="0-3").run_test(size=(80, 24)) as pilot:
        await settled(pilot, "2")
        await pilot.press("space")  # the cursor is on `repeat`: untick it
        assert pilot.app.query_one("#factors", SelectionList).selected == ["seed"]
        await pilot.press("r")
        store = Store()
        while not store.runs():  # the first run is done
            await pilot.pause(0.2)
        await pilot.press("c")
        status = pilot.app.query_one("#run-status")
        for _ in range(600):  # the run in progress finishes, then the worker stops
            if "cancelled after" in text(status):
                break
            await pilot.pause(0.2)
        done = len(store.runs())
        assert 1 <= done < 4 and "cancelled after" in text(status)
        await settled(pilot, "2")
        assert f"{done} stored, {4 - done} to run" in text(pilot.app.query_one("#plan-summary"))


@pytest.mark.slow
async def test_q_during_a_run_asks_first():
    from kit.tui.dialogs import ConfirmScreen

    async with app(threads="1", seeds="0-3").run_test(size=(80, 24)) as pilot:
        await settled(pilot, "2")
        await pilot.press("r")
        await pilot.pause(0.2)
        assert pilot.app.pane("run").running
        await pilot.press("q")
        assert isinstance(pilot.app.screen, ConfirmScreen)
        await pilot.press("n")  # no: the app goes on, the plan still runs
        assert pilot.app.is_running and not isinstance(pilot.app.screen, ConfirmScreen)
        await pilot.press("c")
        await wait_for_run(pilot)
        await pilot.press("q")  # nothing runs now: quits at once
        await pilot.pause()
        assert not pilot.app.is_running


# -- the keyboard at 80x24 -------------------------------------------------------------------
@pytest.mark.slow
async def test_digits_are_typed_into_fields_and_escape_leaves_them(stored_home):
    async with app().run_test(size=(80, 24)) as pilot:
        await settled(pilot, "2")
        await pilot.press("tab", "tab", "tab")  # factors -> dataset -> proteins -> threads
        threads = pilot.app.query_one("#threads", Input)
        assert pilot.app.focused is threads
        await pilot.press("1", "2", "4")
        assert threads.value == "124" and pilot.app.query_one("TabbedContent").active == "plan"
        assert "124 threads" in text(pilot.app.query_one("#plan-summary"))  # shown, not a crash
        await pilot.press("escape")
        assert pilot.app.focused is pilot.app.query_one("#factors")
        await pilot.press("4")
        assert pilot.app.query_one("TabbedContent").active == "budget"


async def test_each_tab_opens_with_its_main_widget_focused(stored_home):
    main = {
        "1": "stacks",
        "2": "factors",
        "3": "run-log",
        "4": "budget-table",
        "5": "verdicts-table",
        "6": "advice-scroll",
        "7": "compare",
    }
    async with app().run_test(size=(80, 24)) as pilot:
        for key, widget in main.items():
            await pilot.press("escape", key)
            assert pilot.app.focused.id == widget, key


async def test_escape_leaves_the_compare_path_field_and_the_next_keys_are_commands(stored_home):
    async with app().run_test(size=(80, 24)) as pilot:
        await pilot.press("7", "p", "a", "b")
        assert pilot.app.query_one("#bundle-path", Input).value == "ab"
        await pilot.press("escape")
        assert pilot.app.focused.id == "compare"
        await pilot.press("4")
        assert pilot.app.query_one("TabbedContent").active == "budget"
        assert pilot.app.query_one("#bundle-path", Input).value == "ab"


async def test_the_compare_tab_keeps_its_path_and_digits_still_switch_tabs(stored_home):
    """Back on tab 7 the typed path was gone and the field held the focus, so the next digit
    was typed into it instead of switching tabs."""
    async with app().run_test(size=(80, 24)) as pilot:
        field = pilot.app.query_one("#bundle-path", Input)
        await pilot.press("7", "p")
        assert pilot.app.focused is field  # p enters the field, to type the path
        await pilot.press(*"lab.kit", "escape", "4", "7")
        await pilot.pause()
        assert field.value == "lab.kit"
        assert pilot.app.focused.id == "compare"  # a path is there: the button, not the field
        await pilot.press("5")
        assert pilot.app.query_one("TabbedContent").active == "verdicts"
        assert field.value == "lab.kit"
        await pilot.press("7")
        await pilot.pause()
        assert field.value == "lab.kit" and pilot.app.focused.id == "compare"


async def test_the_footer_shows_every_key_it_has_within_80_columns(stored_home):
    from textual.widgets._footer import FooterKey

    async with app().run_test(size=(80, 24)) as pilot:
        for tab in "1234567":
            await pilot.press("escape", tab, "escape")  # out of a text field: q and ? are keys
            await pilot.pause()
            keys = list(pilot.app.query(FooterKey))
            assert {k.key for k in keys} >= {"question_mark", "q"}, tab
            assert all(k.region.right <= 80 for k in keys), (tab, [(k.key, k.region) for k in keys])


async def test_budget_keys_keep_working_after_the_curves_and_an_empty_view_says_why(stored_home):
    async with app().run_test(size=(80, 24)) as pilot:

        def shown():
            return [
                v
                for v in ("budget-table", "bars-scroll", "amplify-plot")
                if pilot.app.query_one(f"#{v}").display
            ]

        await settled(pilot, "4", "a")
        assert shown() == ["amplify-plot"] and pilot.app.focused.id == "amplify-plot"
        await pilot.press("a")
        assert shown() == ["budget-table"]
        await pilot.press("a", "p")
        assert shown() == ["bars-scroll"]
        units = pilot.app.query_one("#budget-pane").seed_units
        await pilot.press("u")
        assert pilot.app.query_one("#budget-pane").seed_units is not units


async def test_the_curves_view_without_perturb_runs_says_why_at_80x24(kit_home, tmp_path):
    from stored import budget_store

    budget_store(tmp_path, load_dataset("synthetic", N), kit_home)  # no perturb runs
    async with app().run_test(size=(80, 24)) as pilot:
        await settled(pilot, "4", "a")
        shown = " ".join(screen_text(pilot).split())
        assert "no perturbation runs yet: `kit run --factor perturb` or the plan tab" in shown
        assert pilot.app.focused.id == "amplify-plot"  # a, p, u still reach the pane
        await pilot.press("a")
        assert pilot.app.query_one("#budget-table").display


async def test_e_writes_the_report_in_kits_own_folder_and_names_its_whole_path(
    stored_home, tmp_path, monkeypatch
):
    """`e` wrote kit-report/ into the current folder (a clone) and its toast split the path
    mid-word (`repor` / `t.html`)."""
    cwd = tmp_path / "clone"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    folder = stored_home / "reports" / "synthetic-120"
    async with app().run_test(size=(80, 24)) as pilot:
        await settled(pilot, "6")
        field = pilot.app.query_one("#report-dir", Input)
        assert field.value == str(folder)  # a full path, seen before it writes
        await settled(pilot, "e")
        assert (folder / "report.html").exists() and list(cwd.iterdir()) == []
        said = text(pilot.app.query_one("#report-said"))
        path = str(folder / "report.html")
        assert said.replace("\n", "").endswith(path), said
        lines = said.splitlines()[1:]
        assert all(ln.endswith("/") for ln in lines[:-1]) and max(map(len, lines)) <= 78, lines
        # the field is still the user's to change: the next report goes where it says
        field.value = str(tmp_path / "elsewhere")
        await pilot.press("4", "6")  # a tab switch keeps what was typed
        assert field.value == str(tmp_path / "elsewhere")
        await pilot.click("#export")
        await settled(pilot)
        assert (tmp_path / "elsewhere" / "report.html").exists()


async def test_the_run_tab_shows_its_progress_bar_and_ticks_differ_by_more_than_colour(stored_home):
    async with app().run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        bar = pilot.app.query_one("#run-progress")
        assert bar.content_region.height >= 1 and bar.content_region.width >= 20
        await settled(pilot, "2")
        await pilot.pause()
        factors = pilot.app.query_one("#factors", SelectionList)
        off = factors.get_component_rich_style("selection-list--button")
        on = factors.get_component_rich_style("selection-list--button-selected")
        assert off.color == off.bgcolor  # an empty box
        assert on.color != on.bgcolor and on.bold  # a bold mark


async def test_ticked_and_unticked_factors_differ_as_characters(stored_home):
    """tmux capture-pane showed `▐X▌` for every factor: ticked or not told by colour only."""
    async with app().run_test(size=(80, 24)) as pilot:
        await settled(pilot, "2")
        await pilot.pause()

        def box(factor):  # the factor's line in the list (the settings beside it name some too)
            r = pilot.app.query_one("#factors").content_region
            line = next(
                ln[r.x : r.right]
                for ln in screen_text(pilot).splitlines()[r.y : r.bottom]
                if f" {factor} " in ln[r.x : r.right] + " "
            )
            return line[line.index("▐") : line.index("▐") + 3]

        assert box("repeat") == "▐X▌" and box("threads") == "▐ ▌"  # ticked by default, or not
        factors = pilot.app.query_one("#factors", SelectionList)
        factors.highlighted = [s.value for s in factors._options].index("threads")
        await pilot.press("space")
        await pilot.pause()
        assert "threads" in factors.selected and box("threads") == "▐X▌"


async def test_the_highlighted_factor_stays_in_sight_when_its_description_grows(stored_home):
    """At 80x24 a 5-line description shrinks the list, and the highlighted factor (perturb) was
    scrolled off it while its description showed."""
    async with app().run_test(size=(80, 24)) as pilot:
        await settled(pilot, "2")
        factors = pilot.app.query_one("#factors", SelectionList)
        values = [s.value for s in factors._options]
        for key in ("down", "up"):  # to the last factor, then back to the first
            for _ in values:
                await pilot.press(key)
                await pilot.pause()
                box = factors.content_region
                shown = [
                    ln[box.x : box.right]
                    for ln in screen_text(pilot).splitlines()[box.y : box.bottom]
                ]
                name = values[factors.highlighted]
                assert any(f" {name}" in ln for ln in shown), (name, shown)


async def test_the_setup_line_calls_only_the_reference_stack_the_reference(stored_home):
    from kit.envs.catalogue import reference as reference_stack

    async with app().run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = pilot.app.query_one("#stacks", DataTable)
        said = {}
        for row in range(table.row_count):
            table.move_cursor(row=row)
            await pilot.pause()
            name = table.coordinate_to_cell_key((row, 0)).row_key.value
            said[name] = text(pilot.app.query_one("#stack-help"))
        ref = reference_stack()
        assert "* the reference stack" in said[ref] and "marks" not in said[ref]
        others = [t for n, t in said.items() if n != ref]
        assert others and all(f"marks the reference stack, {ref}" in t for t in others)


async def test_the_stacks_table_fits_80_columns_with_every_header_whole():
    """At 80x24 the last header read "sklearn/tor" and the table scrolled sideways: now its
    wide cells wrap (at spaces, each word whole), the columns sharing the width by need as
    kit's CLI tables do."""
    async with app().run_test(size=(80, 24)) as pilot:
        await settled(pilot)  # the stacks are read in a worker: slower where more are built
        table = pilot.app.query_one("#stacks", DataTable)
        header = screen_text(pilot).splitlines()[table.region.y]
        assert header.split() == ["stack", "status", "python", "numpy", "sklearn/torch"], header
        assert table.max_scroll_x == 0
        for i, col in enumerate(table.ordered_columns):
            words = [
                w for r in range(table.row_count) for w in str(table.get_cell_at((r, i))).split()
            ]
            assert max(map(len, words)) <= col.width, (str(col.label), col.width)


async def test_every_factors_description_is_shown_whole_at_80x24(stored_home):
    from rich.text import Text

    async with app().run_test(size=(80, 24)) as pilot:
        await settled(pilot, "2")
        factors = pilot.app.query_one("#factors", SelectionList)
        for i in range(factors.option_count):
            factors.highlighted = i
            await pilot.pause()
            help_ = pilot.app.query_one("#factor-help")
            box = help_.content_region
            lines = Text(text(help_)).wrap(pilot.app.console, box.width)
            assert len(lines) <= box.height, (i, text(help_), box)


async def test_the_plan_fits_80x24_and_help_scrolls(stored_home):
    async with app().run_test(size=(80, 24)) as pilot:
        await settled(pilot, "2")
        screen = pilot.app.screen.region
        for widget in ("#iters", "#dev-cpu", "#run-plan", "#plan-summary"):
            assert screen.contains_region(pilot.app.query_one(widget).region), widget
        await pilot.press("question_mark")
        help_ = pilot.app.screen.query_one("#help")
        assert help_.max_scroll_y > 0  # more than fits at 80x24 ...
        await pilot.press("pagedown")
        assert help_.scroll_y > 0  # ... and the keyboard scrolls it
        await pilot.press("escape")
        assert pilot.app.query_one("TabbedContent").active == "plan"


async def test_the_budget_bars_sit_beside_their_own_factor(stored_home):
    """At 120x40 the plotext bars were drawn against other rows' names (torch-deterministic
    showed 2.0 seed units with 0 flips). Each bar is now on its factor's line, with its value."""
    async with app().run_test(size=(120, 40)) as pilot:
        await settled(pilot, "4")  # the tab opens, then its table takes the keys
        await pilot.press("p")
        lines = {
            ln.split()[0]: ln
            for ln in text(pilot.app.query_one("#budget-bars")).splitlines()
            if ln.strip() and not ln.startswith("median")
        }
        assert (
            lines["torch-deterministic"].rstrip().endswith(" 0")
            and "█" not in lines["torch-deterministic"]
        )
        assert lines["threads"].rstrip().endswith(" 0.4") and "█" in lines["threads"]
        assert "seed" not in lines and "torch-seed" not in lines  # 1 by definition
        await pilot.press("p")  # back to the table
        assert pilot.app.query_one("#budget-table").display


async def test_returning_to_the_budget_keeps_its_columns(stored_home):
    async with app().run_test(size=(120, 40)) as pilot:
        await settled(pilot, "4")
        table = pilot.app.query_one("#budget-table", DataTable)
        first = [c.get_render_width(table) for c in table.columns.values()]
        await settled(pilot, "5", "1", "4")
        assert [c.get_render_width(table) for c in table.columns.values()] == first


def cut_cells(table) -> list:
    """(column, width, longest cell) for every column of a DataTable narrower than its longest
    cell, and every row whose first cell is not drawn whole on its rendered line."""
    from rich.text import Text

    def width(cell):
        return (Text.from_markup(cell) if isinstance(cell, str) else Text(str(cell))).cell_len

    cut = []
    for i, col in enumerate(table.ordered_columns):
        longest = max(
            [col.label.cell_len]
            + [width(table.get_cell_at((r, i))) for r in range(table.row_count)]
        )
        if col.get_render_width(table) - 2 * table.cell_padding < longest:
            cut.append((str(col.label), col.get_render_width(table), longest))
    for r in range(min(table.row_count, table.size.height - 1)):
        first = str(table.get_cell_at((r, 0)))
        if first not in table.render_line(r + 1).text:  # line 0: the header
            cut.append((r, table.render_line(r + 1).text))
    return cut


async def test_budget_cells_are_never_cut_after_another_tab_nor_before_they_are_measured(
    stored_home,
):
    """After 6 then 4 at 80x24 a real terminal showed `thread`, `0.4` for 0.438: the tab was
    painted before the table measured its new rows (Textual does that when idle, and keeps
    what it drew). Cells are now measured as they are added."""
    async with app().run_test(size=(80, 24)) as pilot:
        await settled(pilot, "4", "6", "4")
        table = pilot.app.query_one("#budget-table", DataTable)
        assert table.row_count and cut_cells(table) == []
        for _ in range(2):  # raw flips, then seed units
            await pilot.press("u")
            pilot.app.pane("budget").redraw()  # filled again and drawn at once, before any idle
            assert cut_cells(table) == []
        await settled(pilot, "enter")  # a factor's pairs: the same for its table
        assert cut_cells(pilot.app.query_one("#pairs", DataTable)) == []
        await settled(pilot, "5", "s")  # the verdicts are filled the same way
        assert cut_cells(pilot.app.query_one("#verdicts-table", DataTable)) == []


async def test_unavailable_choices_are_disabled_with_reasons():
    async with app().run_test(size=(100, 32)) as pilot:
        await settled(pilot, "2")
        factors = pilot.app.query_one("#factors", SelectionList)
        values = [factors.get_option_at_index(i).value for i in range(factors.option_count)]
        device = factors.get_option_at_index(values.index("torch-device"))
        assert "not here" in str(device.prompt)
        await pilot.press(*["down"] * values.index("torch-device"))  # reached by keys ...
        assert "no CUDA device" in text(pilot.app.query_one("#factor-help"))  # ... and says why
        await pilot.press("space")  # it cannot be ticked
        assert "torch-device" not in factors.selected
        assert (
            pilot.app.query_one("#dev-mps").disabled and pilot.app.query_one("#dev-cuda").disabled
        )
        assert not pilot.app.query_one("#dev-cpu").disabled


@pytest.mark.slow
async def test_an_external_torch_stack_is_offered_and_probed_live():
    """The Plan pane offers torch stacks added with `kit stacks add`; choosing one plans with it,
    and its torch is probed then: here the interpreter (kit's own) no longer has torch."""
    import json
    import sys

    from kit.envs import external

    facts = {
        "python": "3.12.1",
        "implementation": "CPython",
        "machine": "x86_64",
        "os": "linux",
        "executable": sys.executable,
        "packages": {"numpy": "2", "torch": "2"},
        "blas": [],
        "torch": {"version": "2", "cuda": None, "cudnn": None},
        "devices": ["cpu"],
    }
    external.registry_path().write_text(
        json.dumps({"lab-torch": {"python": sys.executable, "added": "2026-01-01", "facts": facts}})
    )
    async with app().run_test(size=(100, 40)) as pilot:
        await settled(pilot)  # the stacks are read in a worker
        row = pilot.app.query_one("#stacks", DataTable).get_row("lab-torch")
        assert row[1] == "built (external)"
        await settled(pilot, "2")
        factors = pilot.app.query_one("#factors", SelectionList)
        factors.deselect_all()
        factors.select("torch-seed")
        await pilot.pause()
        assert "lab-torch" in str(pilot.app.query_one("#ts-1").label)
        pilot.app.query_one("#ts-1").value = True
        await settled(pilot)  # the plan is read in a worker
        assert "stack lab-torch has no torch" in text(pilot.app.query_one("#plan-summary"))


# -- snapshots: every tab at 80x24 and 120x40, by keys only, on a hand-made store -------------
SCREENS = {
    "setup": [],
    "plan": ["2"],
    "run": ["3"],
    "budget": ["4"],
    "budget-pairs": ["4", "enter"],
    "budget-units-bars": ["4", "u", "p"],
    "budget-curves": ["4", "a"],
    "verdicts": ["5"],
    "verdicts-next": ["5", "s"],
    "advice": ["6"],
    "compare": ["7"],
    "help": ["question_mark"],
    "help-scrolled": ["question_mark", "pagedown"],
    "light": ["d"],
}


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@pytest.mark.parametrize("keys", SCREENS.values(), ids=SCREENS.keys())
def test_screens(snap_compare, stored_home, keys, size):
    async def settle(pilot):  # a slow first start must not photograph a half-drawn screen
        await settled(pilot)
        # here, not by snap_compare: the fields below are filled by them; each once the last
        # one's reading is drawn (a table read in a worker takes Enter only once it is there)
        await settled(pilot, *keys)
        # the Advice tab shows where `e` writes, under this test's own KIT_HOME: shown as one
        # name, so the screen is the same on every machine
        for field in pilot.app.query("#report-dir"):
            field.value = field.value.replace(str(stored_home), "/kit-home")
        # A focused Input's cursor blinks every 0.5 s, so a slow machine would photograph it
        # hidden; without the blink it shows steadily once focused.
        for field in pilot.app.query(Input):
            field.cursor_blink = False
        await pilot.pause(0.3)

    assert snap_compare(app(), terminal_size=size, run_before=settle)


@pytest.mark.slow
def test_tmux_smoke(tmp_path):
    """tests/support/tui_smoke.sh drives `kit tui` in a real terminal (tmux send-keys /
    capture-pane)."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    if not shutil.which("tmux"):
        pytest.skip("tmux is not installed (.ci/run installs it)")
    script = SUPPORT / "tui_smoke.sh"
    kit = str(Path(sys.executable).with_name("kit"))
    proc = subprocess.run(
        ["bash", str(script), kit],
        capture_output=True,
        text=True,
        timeout=600,
        env={
            **{k: v for k, v in os.environ.items() if k != "COLUMNS"},
            "KIT_HOME": str(tmp_path / "home"),
        },
    )  # tmux's own width
    assert proc.returncode == 0, proc.stderr
    assert "tui_smoke: ok" in proc.stdout


@pytest.mark.slow
async def test_compare_tab_answers_like_the_cli(tmp_path, monkeypatch, kit_home):
    """A bundle made in another KIT_HOME (another host id) compared from the Compare tab."""
    from kit.cli import main

    monkeypatch.setenv("KIT_HOME", str(tmp_path / "lab"))
    assert main(["run", "--factor", "repeat", "--n", str(N), "--threads", "1"]) == 0
    assert main(["export", "--out", str(tmp_path / "lab.kit"), "--arrays"]) == 0
    monkeypatch.setenv("KIT_HOME", str(kit_home))
    async with app().run_test(size=(100, 32)) as pilot:
        await pilot.press("7")
        box = pilot.app.query_one("#bundle-path", Input)
        box.value = str(tmp_path / "lab.kit")
        box.focus()
        await pilot.press("enter")
        answer = pilot.app.query_one("#compare-answer")
        for _ in range(600):
            if "reproduced" in str(answer.render()) or "differs" in str(answer.render()):
                break
            await pilot.pause(0.2)
        assert "reproduced: all 2 runs are bitwise identical" in str(answer.render())
        assert pilot.app.query_one("#compare-table", DataTable).row_count == 2


@pytest.mark.slow
async def test_every_tab_and_key_on_a_store_of_every_kind(on_every_kind, tmp_path):
    """Each tab and each of its keys on the store holding every kind of run, by keys only."""
    from kit.data.dataset import load_dataset  # noqa: F401  (the store's dataset is synthetic-120)

    async with KitApp("synthetic", 120, platform=LINUX, store=Store()).run_test(
        size=(120, 40)
    ) as pilot:
        for tab in "1234567":
            await settled(pilot, tab)
        await settled(pilot, "4")
        table = pilot.app.query_one("#budget-table", DataTable)
        names = [table.get_row_at(i)[0] for i in range(table.row_count)]
        assert {"seed", "perturb=1e-03", "svd-solver", "host"} <= set(names)
        assert ("torch-seed" in names) == on_every_kind["torch"]
        for key in ("u", "p", "a", "u", "p", "a", "a"):
            await settled(pilot, key)
        for i in range(table.row_count):  # every row's pairs
            table.focus()
            table.move_cursor(row=i)
            await settled(pilot, "enter")
            assert pilot.app.query_one("#pairs", DataTable).row_count >= 1
        await settled(pilot, "5")
        head = pilot.app.query_one("#verdicts-head")
        seen = set()
        for _ in range(30):  # around every set at least once
            await settled(pilot, "s")
            seen.add(pilot.app.pane("verdicts").current)
        assert "seeds" in seen and not any(s.startswith("torch") for s in seen)
        assert "run set" in str(head.render())
        await settled(pilot, "h")  # the verdicts under the cluster bootstrap (the set is clustered)
        assert "Homology (MMseqs2" in str(head.render()) and "h: back" in str(head.render())
        rows = pilot.app.query_one("#verdicts-table", DataTable)
        assert rows.row_count == 12 and "width ratio" in [
            str(c.label) for c in rows.columns.values()
        ]
        await settled(pilot, "h")
        assert "run set" in str(head.render())
        await settled(pilot, "6")
        assert "What to pin first" in pilot.app.query_one("#advice-md", Markdown).source
        await pilot.press("question_mark", "escape", "d", "d")
        await pilot.pause()
        await pilot.press("7")
        box = pilot.app.query_one("#bundle-path", Input)
        box.value = str(on_every_kind["bundle"])
        box.focus()
        await pilot.press("enter")
        await idle(pilot)
        assert "reproduced" in str(pilot.app.query_one("#compare-answer").render())


async def test_bad_plan_settings_are_shown_in_the_app(tmp_path):
    """Typing 0 (or 99) threads ended the app with a traceback and exit status 0."""
    async with app().run_test(size=(100, 32)) as pilot:
        await settled(pilot, "2")
        await pilot.press("tab", "tab", "tab")  # the threads field
        for typed, says in (
            ("0", "0 is not allowed here"),
            ("99", "would measure oversubscription"),
        ):
            pilot.app.query_one("#threads", Input).value = ""
            await pilot.press(*typed)
            assert says in text(pilot.app.query_one("#plan-summary"))
        await pilot.press("ctrl+r")  # running it says so too, and the app goes on
        await pilot.pause()
        assert pilot.app.is_running and pilot.app.return_code in (None, 0)


# where the bug is: in a handler on the app's thread, in a pane's reading worker, and in a
# method no handler of kit's guards (Textual's own ending of it, its traceback put in the log)
BUGS = {
    "handler": ("show", "a bug"),
    "worker": ("_read_advice", "a bug"),
    "unguarded": ("on_resize", None),
}


@pytest.mark.parametrize("where", BUGS)
def test_a_bug_ends_the_app_with_status_1_and_one_line(tmp_path, where):
    """A real `kit tui` process (headless) whose Advice tab has a bug: it ends with exit status
    1 and one line naming the log file; the traceback is in that file, not on the screen."""
    method, says = BUGS[where]
    import os
    import subprocess
    import sys

    script = tmp_path / "buggy.py"
    script.write_text(
        "import sys\n"
        "from kit.runs.store import Store\n"
        "from kit.tui import advice, app\n"
        "def broken(self, *args):\n    raise RuntimeError('a bug')\n"
        f"advice.AdvicePane.{method} = broken\n"
        "class Buggy(app.KitApp):\n"
        "    def on_mount(self):\n        self.set_timer(0.5, lambda: self.action_tab('advice'))\n"
        "sys.exit(app.run_app(Buggy('synthetic', 120, store=Store()), headless=True))\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **{k: v for k, v in os.environ.items() if k != "COLUMNS"},
            "KIT_HOME": str(tmp_path / "home"),
        },
    )  # tmux's own width
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    line = (
        "kit tui: internal error: RuntimeError: a bug"
        if says
        else "kit tui: internal error (a bug in kit; the traceback is in"
    )
    assert line in out and "Traceback" not in out and out.strip().count("\n") == 0, out
    log = out.split("the traceback is in ")[1].split(")")[0]
    logged = Path(log).read_text()
    assert "Traceback" in logged and "RuntimeError" in logged


# -- issue 43: what a newcomer found at 80x24 ----------------------------------------------------
async def test_scrolling_a_wide_table_right_keeps_each_rows_name_in_sight(stored_home):
    """At 80x24 the Verdicts table is wider than the screen: moving right to its last column
    scrolled the verdict names away (and the Budget's factor names the same): the name column
    stays fixed."""
    async with app().run_test(size=(80, 24)) as pilot:
        for tab, table_id, name in (
            ("5", "verdicts-table", "mlp-lr acc"),
            ("4", "budget-table", "repeat"),
        ):
            await settled(pilot, tab)
            table = pilot.app.query_one(f"#{table_id}", DataTable)
            assert table.max_scroll_x > 0  # wider than 80 columns: there is somewhere to go
            table.focus()
            if table.cursor_type == "cell":
                await pilot.press(*["right"] * len(table.columns))
            else:  # a row cursor: the table scrolls itself
                table.scroll_to(x=table.max_scroll_x, animate=False)
            await pilot.pause()
            assert table.scroll_x == table.max_scroll_x > 0, table_id
            box = table.content_region
            lines = screen_text(pilot).splitlines()[box.y : box.bottom]
            assert any(name in ln for ln in lines), (table_id, lines)
            last = str(table.ordered_columns[-1].label)
            assert last[:6] in lines[0], (table_id, lines[0])  # and the far end is in sight


def joined(pilot) -> str:
    """The screen's lines stripped and joined: a path broken after its `/`s reads whole."""
    return "".join(ln.strip() for ln in screen_text(pilot).splitlines())


async def test_the_advice_tab_shows_the_whole_report_folder_at_80x24(
    stored_home, tmp_path, monkeypatch
):
    """The field cut a long folder ("…/reports/pipeline-kme"): the whole folder `e` writes to is
    under it, a typed relative one as it resolves."""
    monkeypatch.chdir(tmp_path)
    folder = str(stored_home / "reports" / "synthetic-120")
    async with app().run_test(size=(80, 24)) as pilot:
        await settled(pilot, "6")
        field = pilot.app.query_one("#report-dir", Input)
        assert field.value == folder and len(folder) > field.content_region.width
        assert folder in joined(pilot)
        field.value = "lab-reports"
        await pilot.pause()
        assert str(tmp_path / "lab-reports") in joined(pilot)


async def test_e_names_each_part_of_the_report_as_it_goes_and_the_tab_stays_usable(
    stored_home, monkeypatch
):
    """`e` ran ~20 s with nothing moving: now a bar and the part begun (the budget, the
    verdicts, each plot, the files), from the worker, the app taking keys meanwhile; then the
    folder it wrote to."""
    from textual.widgets import ProgressBar

    from kit.tui.advice import AdvicePane

    shown = []  # what the step line and the bar say after each step the worker tells
    told = AdvicePane.on_advice_pane_step

    def keep(pane, m):
        told(pane, m)
        shown.append(
            (
                text(pane.query_one("#report-step")),
                pane.query_one("#report-bar", ProgressBar).progress,
            )
        )

    monkeypatch.setattr(AdvicePane, "on_advice_pane_step", keep)
    # the worker waits until the keys below were taken: a write is over within a frame once
    # matplotlib is imported, and the test is of a write still going
    import threading

    import kit.views.report

    go, real = threading.Event(), kit.views.report.write

    def held(*args, **kw):
        assert go.wait(60)
        return real(*args, **kw)

    monkeypatch.setattr(kit.views.report, "write", held)
    async with app().run_test(size=(80, 24)) as pilot:
        await settled(pilot, "6")
        await pilot.press("e")
        progress = pilot.app.query_one("#report-progress")
        assert progress.display
        await pilot.press("4")  # keys still work while it writes
        assert pilot.app.query_one("TabbedContent").active == "budget"
        await pilot.press("6")
        go.set()
        await settled(pilot)
        await until(pilot, lambda: not progress.display)
        bar = pilot.app.query_one("#report-bar", ProgressBar)
        assert not progress.display and bar.progress == bar.total == len(shown) == 14, shown
        assert [p for _, p in shown] == list(range(1, 15))
        assert [s.split()[0] for s, _ in shown] == [f"{i}/14" for i in range(1, 15)]
        assert shown[0][0] == "1/14 the budget" and "the plot" in shown[7][0]
        said = text(pilot.app.query_one("#report-said"))
        assert said.startswith("wrote the report") and said.replace("\n", "").endswith(
            str(stored_home / "reports" / "synthetic-120" / "report.html")
        )
        assert said.count("report.html") == 1  # #56: named in the path alone, not twice
        # the tab read again, and the terminal resized: the line still says where it is
        await settled(pilot, "4", "6")
        await pilot.resize_terminal(90, 24)
        await settled(pilot)
        assert text(pilot.app.query_one("#report-said")).startswith("wrote the report")


async def test_the_plan_names_its_ticked_factors_and_shows_them_at_80x24(stored_home):
    """At 80x24 the ticked `seed` sat below the fold while the summary said "11 pairs" without
    naming a factor: the ticked ones now head the list, and the summary counts each one's
    pairs; with more ticked than its lines hold, the rest are counted, never cut off."""
    import re

    from rich.text import Text

    async with app().run_test(size=(80, 24)) as pilot:
        await settled(pilot, "2")
        factors = pilot.app.query_one("#factors", SelectionList)
        box = factors.content_region
        shown = [
            ln[box.x : box.right] for ln in screen_text(pilot).splitlines()[box.y : box.bottom]
        ]
        assert set(factors.selected) == {"repeat", "seed"}
        for f in factors.selected:
            assert any(f"▐X▌ {f} " in ln + " " for ln in shown), (f, shown)
        summary = pilot.app.query_one("#plan-summary")
        said = " ".join(text(summary).split())
        got = re.search(r"(\d+) pairs \(repeat (\d+), seed (\d+)\), (\d+) runs", said)
        assert got and int(got[1]) == int(got[2]) + int(got[3]) > 0, said
        factors.select_all()  # those this machine cannot run are refused, said in a toast
        await settled(pilot)
        said = text(summary)
        lines = Text.from_markup(said).wrap(pilot.app.console, summary.content_region.width)
        assert len(lines) <= summary.content_region.height == 3, said  # whole: never cut
        # stacks to build keep the pair count, each ticked factor's beside its name (#56: ticking
        # blas replaced the count by the build message)
        assert re.search(r"\+\d+ more", said) and "running builds" in said, said
        got = re.search(r"(\d+) pairs \(repeat (\d+), seed (\d+), ", said)
        assert got and int(got[1]) > int(got[2]) + int(got[3]) > 0, said


async def test_the_first_screen_comes_before_the_stacks_and_factors_are_read(
    stored_home, monkeypatch
):
    """The first paint took 8 s on a loaded machine: the stacks' status and which factors run
    here (both start interpreters), the dataset and the plan were read on the app's thread
    before it. Now each tab reads in a worker: the screen is up while those reads wait, and
    their data follows."""
    import threading

    from kit.envs import kinds
    from kit.runs.planning import availability, offers

    gate, on_app_thread = threading.Event(), []

    def gated(real):
        def read(*args, **kwargs):
            if threading.current_thread() is threading.main_thread():
                on_app_thread.append(real.__name__)  # the old way: read before the first paint
            else:
                gate.wait(60)
            return real(*args, **kwargs)

        return read

    monkeypatch.setattr(kinds, "listing", gated(kinds.listing))
    for module in (availability, offers):
        monkeypatch.setattr(module, "availability", gated(availability.availability))
    async with app().run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        first = screen_text(pilot)
        assert "1 Setup" in first and "7 Compare" in first  # the whole window, drawn
        assert "reading the dataset and the stacks" in first and "np2-sk191" not in first
        gate.set()
        await settled(pilot)
        assert "Dataset synthetic-120" in screen_text(pilot) and "np2-sk191" in screen_text(pilot)
        await settled(pilot, "2")
        assert "repeat" in screen_text(pilot) and "pairs (repeat" in screen_text(pilot)
    assert on_app_thread == []


def test_what_kit_tui_imports_before_its_first_paint_leaves_the_heavy_modules_out():
    """Half of the first paint's time was imports it did not need yet: scipy (with numpy's
    f2py) for three names of kit.worker.pipeline, and the tabs' analyses, views, tabulate,
    plotext and Markdown. Each is imported where it is first used (bench/tui_paint.py times it)."""
    import subprocess
    import sys

    heavy = (
        "scipy",
        "numpy.f2py",
        "tabulate",
        "plotext",
        "markdown_it",
        "matplotlib",
        "kit.app.audit",
        "kit.views.tables",
        "kit.analysis.compare",
    )
    code = (
        "import sys, kit.cli, kit.app.selection, kit.runs.store, kit.tui.app\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def cut_tokens(table) -> list:
    """(line, token) for each token a rendered line of ``table`` shows that is no whole token
    of its row's cells (the header's: of its labels): a column drawn in part. The ellipsis
    that marks a column left blank (more to scroll to) is no cell's."""
    from rich.text import Text

    def tokens(cells):
        return {
            t
            for c in cells
            for t in (Text.from_markup(c) if isinstance(c, str) else Text(str(c))).plain.split()
        }

    heads = tokens([str(c.label) for c in table.ordered_columns])
    cut = [(0, t) for t in table.render_line(0).text.split() if t not in heads | {"…"}]
    for r in range(min(table.row_count, table.size.height - 1)):
        whole = tokens(table.get_row_at(r)) | {"…"}
        cut += [(r + 1, t) for t in table.render_line(r + 1).text.split() if t not in whole]
    return cut


async def test_a_table_scrolled_sideways_shows_each_column_whole_or_not_at_all(stored_home):
    """Scrolled right at 80x24 the Verdicts table showed the "n.s." column cut: its header as
    ".s.", its 10 as "0" (#43). At every step right, and back, every header and number shown
    is whole; the Budget's table the same."""
    async with app().run_test(size=(80, 24)) as pilot:
        await settled(pilot, "5")
        table = pilot.app.query_one("#verdicts-table", DataTable)
        table.focus()
        seen, marked = set(), set()
        for key in ["right"] * len(table.columns) + ["left"] * len(table.columns):
            await pilot.press(key)
            await pilot.pause()
            seen.add(table.scroll_x)
            assert cut_tokens(table) == [], (key, table.scroll_x, cut_tokens(table))
            if "…" in table.render_line(0).text:
                marked.add(table.scroll_x)
        assert len(seen) > 1  # it did scroll
        assert marked, "no column left blank was marked as more to scroll to"
        await settled(pilot, "4")
        table = pilot.app.query_one("#budget-table", DataTable)
        for x in range(0, int(table.max_scroll_x) + 1):
            table.scroll_to(x=x, animate=False)
            await pilot.pause()
            assert cut_tokens(table) == [], (x, cut_tokens(table))


def _full_disk(*args) -> None:
    """A real full disk: a write to /dev/full (ENOSPC, no file named, as a library's write)."""
    with open("/dev/full", "wb", buffering=0) as full:
        full.write(b"x")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
async def test_a_full_disk_or_a_file_for_a_folder_is_said_as_the_cli_says_it(
    kit_home, tmp_path, monkeypatch
):
    """A real OSError that is the machine's state, raised in a pane's read (a worker) or in a
    worker's own work (Compare's), is one line, the CLI's (kit.core.said.translate), and the
    app goes on; a bug ends the app with the line naming its traceback's file."""
    from kit.app import reproduce
    from kit.core.said import translate
    from kit.tui.budget import BudgetPane
    from kit.tui.errors import say

    a_file = tmp_path / "a-file"
    a_file.write_text("")

    def not_a_folder(*args, **kw):
        (a_file / "bundle.json").read_text()  # a real ENOTDIR

    monkeypatch.setattr(BudgetPane, "_read_budget", _full_disk)
    monkeypatch.setattr(reproduce, "compare_bundle", not_a_folder)
    try:
        _full_disk()
    except OSError as e:
        full = translate(e).text
    async with app().run_test(size=(120, 40)) as pilot:
        await settled(pilot, "4")
        said = [n.message for n in pilot.app._notifications]
        assert full in said and full.startswith("No space left on device; free space on "), said
        assert "a bug" not in " ".join(said)
        assert pilot.app.bug_line is None and pilot.app.is_running
        await pilot.press("7")
        box = pilot.app.query_one("#bundle-path", Input)
        box.value = str(a_file)
        box.focus()
        await pilot.press("enter")
        await idle(pilot)
        answer = str(pilot.app.query_one("#compare-answer").render())
        assert f"Not a directory: {a_file / 'bundle.json'} (a file is where" in answer, answer
        assert pilot.app.bug_line is None and pilot.app.is_running
        say(pilot.app, ValueError("a bug"))
        await pilot.pause()
        assert "internal error: ValueError: a bug (a bug in kit" in (pilot.app.bug_line or "")
