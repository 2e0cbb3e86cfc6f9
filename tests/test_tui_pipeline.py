"""kit tui on a lab's pipeline file (Plan and Run run it) and the keyboard's focus traps a
stranger's drive found, by Textual's pilot on a real store, a real worker and real files."""

from pathlib import Path

from textual.widgets import Input

from kit.runs.store import Store
from kit.tui.app import KitApp
from test_tui import LINUX, N, text

PIPELINES = Path(__file__).with_name("pipelines")
TWO = PIPELINES / "two_models.py"


def app():
    return KitApp("synthetic", N, platform=LINUX, store=Store())


# -- focus: a key does what the footer says ----------------------------------------------------
async def test_the_first_tab_on_setup_reaches_the_pipeline_field_then_each_field_in_order():
    """The first Tab from the stacks went to the tab bar above the fields, not the pipeline's."""
    async with app().run_test(size=(80, 24)) as pilot:
        assert pilot.app.focused.id == "stacks"
        seen = []
        for _ in range(5):
            await pilot.press("tab")
            seen.append(pilot.app.focused.id)
        assert seen == ["pipeline-file", "fetch", "verify", "build", "stacks"]


async def test_digits_on_the_compare_tab_switch_tabs_and_the_footer_is_true_in_a_field():
    """The Compare tab opened in its empty path field: a digit pressed to go on was typed there
    (and q and ?, which the footer still showed as Quit and Help)."""
    from textual.widgets._footer import FooterKey

    async with app().run_test(size=(80, 24)) as pilot:
        field = pilot.app.query_one("#bundle-path", Input)
        await pilot.press("7")
        await pilot.pause()
        keys = {k.key for k in pilot.app.query(FooterKey)}
        assert {"p", "q", "question_mark"} <= keys and "escape" not in keys
        await pilot.press("4")
        assert pilot.app.query_one("TabbedContent").active == "budget" and field.value == ""
        await pilot.press("7", "enter")  # Enter on an empty path enters the field
        assert pilot.app.focused is field
        await pilot.pause()
        keys = {k.key for k in pilot.app.query(FooterKey)}
        assert "escape" in keys and not {"q", "question_mark"} & keys  # typed here, not shown
        await pilot.press("1", "q")
        assert field.value == "1q" and pilot.app.is_running
