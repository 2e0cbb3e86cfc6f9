"""The TUI's leftovers of issue 56 (item 7), by Textual's pilot on a real store: the Budget
tab's keys with a pipeline chosen, Cancel only while a plan runs, and the Plan's pair count
kept when a ticked factor needs stacks built first."""

import pytest
from textual.widgets import Button, SelectionList

from kit.runs.planning.stack_pairs import stack_pairs
from kit.runs.store import Store
from tests.tui.test_app import LINUX, app, screen_text, settled, text
from tests.tui.test_plan import TWO, choose, footer_keys, stored_seed_pair
from tests.tui.test_plan import app as pipeline_app


def tick_only(pilot, *names) -> None:
    factors = pilot.app.query_one("#factors", SelectionList)
    factors.deselect_all()
    for name in names:
        factors.select(name)


async def test_ticking_a_factor_whose_stacks_are_not_built_keeps_the_pair_count():
    """Ticking blas replaced "N pairs (repeat 1)" by the stacks to build alone."""
    async with app(threads="1").run_test(size=(80, 24)) as pilot:
        await settled(pilot, "2")
        tick_only(pilot, "repeat")
        await settled(pilot)
        summary = pilot.app.query_one("#plan-summary")
        assert "1 pairs" in text(summary) and "running builds" not in text(summary)
        tick_only(pilot, "repeat", "blas")
        await settled(pilot)
        said = " ".join(text(summary).split())
        blas = len(stack_pairs("blas", LINUX))  # the catalogue's pairs on this platform
        assert "running builds" in said, said
        assert f"{1 + blas} pairs" in said and f"blas {blas}" in said and "repeat 1" in said, said


@pytest.mark.slow
async def test_cancel_is_on_screen_only_while_a_plan_runs():
    """After a plan finished, `Cancel (c)` stayed on screen and did nothing."""
    async with app(threads="1").run_test(size=(80, 24)) as pilot:
        cancel = pilot.app.query_one("#cancel", Button)
        await settled(pilot, "3")
        assert not cancel.display and "c" not in footer_keys(pilot)
        await settled(pilot, "2")
        tick_only(pilot, "repeat")
        await settled(pilot)
        await pilot.press("r")
        run = pilot.app.pane("run")
        for _ in range(100):  # the worker starts: Cancel comes with it
            await pilot.pause(0.05)
            if run.running:
                break
        await pilot.pause()
        assert run.running and cancel.display and "c" in footer_keys(pilot)
        await settled(pilot)  # to the plan's end
        status = text(pilot.app.query_one("#run-status"))
        assert "finished" in status, status
        assert not cancel.display and "c" not in footer_keys(pilot)


@pytest.mark.slow
async def test_bars_and_curves_keys_leave_a_pipelines_budget_on_screen():
    """With a pipeline chosen, p (Bars) and a (Curves) on the Budget tab showed an empty pane
    over its budget text. They are not offered for a pipeline (it has no bars or curves) and
    pressing them leaves the text where it is; kit's own budget offers them again."""
    store = Store()
    stored_seed_pair()
    async with pipeline_app(store).run_test(size=(80, 24)) as pilot:
        await settled(pilot, "4")
        assert {"p", "a", "u"} <= footer_keys(pilot)
        await choose(pilot, str(TWO))
        await settled(pilot, "4")
        budget = text(pilot.app.query_one("#explain-text"))
        assert "two_models.py" in budget
        assert not {"p", "a", "u"} & footer_keys(pilot)
        for key in ("p", "a", "u"):
            await settled(pilot, key)
            assert pilot.app.query_one("#explain-scroll").display
            assert not any(
                pilot.app.query_one(w).display
                for w in ("#bars-scroll", "#amplify-plot", "#budget-table")
            )
            assert text(pilot.app.query_one("#explain-text")) == budget
            assert "two_models.py" in screen_text(pilot)
