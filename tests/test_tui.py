"""kit tui: the whole flow with Textual's pilot on a tiny real plan, and a snapshot per screen."""

import pytest
from textual.widgets import DataTable, Input, Markdown, SelectionList

from kit.data import load_dataset
from kit.platforms import Platform
from kit.store import Store
from kit.tui.app import KitApp
from stored import budget_store

N = 120
# fixed platform facts so every screen is the same on any machine of this kind
LINUX = Platform("linux", "x86_64", cpu_flags=frozenset({"avx", "avx2", "sse4_2"}), downloads=True)


def app():
    return KitApp("synthetic", N, platform=LINUX)


@pytest.fixture
def stored_home(kit_home, tmp_path):
    budget_store(tmp_path, dataset=load_dataset("synthetic", N).sha256, home=kit_home)
    return kit_home


async def set_input(pilot, selector, text):
    widget = pilot.app.query_one(selector, Input)
    widget.value = text
    await pilot.pause()


async def wait_for_run(pilot, timeout=600):
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


@pytest.mark.slow
async def test_walk_from_plan_to_advice():
    async with app().run_test(size=(100, 32)) as pilot:
        await pilot.press("2")
        factors = pilot.app.query_one("#factors", SelectionList)
        assert set(factors.selected) == {"repeat", "seed"}
        await set_input(pilot, "#threads", "1")
        await set_input(pilot, "#seeds", "0-1")
        pilot.app.query_one("#plan-pane").update_summary()
        summary = str(pilot.app.query_one("#plan-summary").render())
        assert "2 pairs, 3 runs" in summary and "0 stored, 3 to run" in summary
        await pilot.press("ctrl+r")
        assert pilot.app.query_one("TabbedContent").active == "run"
        await wait_for_run(pilot)
        assert "finished: 3 run(s)" in str(pilot.app.query_one("#run-status").render())
        await pilot.press("4")
        table = pilot.app.query_one("#budget-table", DataTable)
        assert table.row_count == 2
        assert [table.get_row_at(i)[0] for i in range(2)] == ["repeat", "seed"]
        table.focus()
        await pilot.press("enter")
        pairs = pilot.app.query_one("#pairs", DataTable)
        assert pairs.display and pairs.row_count == 1
        await pilot.press("5")
        assert pilot.app.query_one("#verdicts-table", DataTable).row_count == 12
        await pilot.press("6")
        md = pilot.app.query_one("#advice-md", Markdown)
        assert "null experiment held" in md.source
        # the plan again: everything is stored now
        await pilot.press("2")
        pilot.app.query_one("#plan-pane").update_summary()
        assert "3 stored, 0 to run" in str(pilot.app.query_one("#plan-summary").render())


@pytest.mark.slow
async def test_cancel_keeps_finished_runs_and_resumes():
    async with app().run_test(size=(100, 32)) as pilot:
        await pilot.press("2")
        await set_input(pilot, "#threads", "1")
        await set_input(pilot, "#seeds", "0-3")
        pilot.app.query_one("#factors", SelectionList).deselect("repeat")
        await pilot.press("ctrl+r")
        store = Store()
        while not store.runs():  # the first run is done
            await pilot.pause(0.2)
        await pilot.click("#cancel")
        status = pilot.app.query_one("#run-status")
        for _ in range(600):  # the run in progress finishes, then the worker stops
            if "cancelled after" in str(status.render()):
                break
            await pilot.pause(0.2)
        done = len(store.runs())
        assert 1 <= done < 4
        assert "cancelled after" in str(pilot.app.query_one("#run-status").render())
        await pilot.press("2")
        pilot.app.query_one("#plan-pane").update_summary()
        assert f"{done} stored, {4 - done} to run" in str(pilot.app.query_one("#plan-summary").render())


async def test_unavailable_choices_are_disabled_with_reasons():
    async with app().run_test(size=(100, 32)) as pilot:
        await pilot.press("2")
        factors = pilot.app.query_one("#factors", SelectionList)
        device = next(factors.get_option_at_index(i) for i in range(factors.option_count)
                      if factors.get_option_at_index(i).value == "torch-device")
        assert device.disabled and "no CUDA device" in str(device.prompt)
        assert pilot.app.query_one("#dev-mps").disabled and pilot.app.query_one("#dev-cuda").disabled
        assert not pilot.app.query_one("#dev-cpu").disabled



async def test_an_external_torch_stack_is_offered_and_probed_live():
    """The Plan pane offers torch stacks added with `kit stacks add`; choosing one plans with it,
    and its torch is probed then: here the interpreter (kit's own) no longer has torch."""
    import json
    import sys

    from kit import external

    facts = {"python": "3.12.1", "implementation": "CPython", "machine": "x86_64", "os": "linux",
             "executable": sys.executable, "packages": {"numpy": "2", "torch": "2"}, "blas": [],
             "torch": {"version": "2", "cuda": None, "cudnn": None}, "devices": ["cpu"]}
    external.registry_path().write_text(json.dumps({"lab-torch": {
        "python": sys.executable, "added": "2026-01-01", "facts": facts}}))
    async with app().run_test(size=(100, 40)) as pilot:
        row = pilot.app.query_one("#stacks", DataTable).get_row("lab-torch")
        assert row[1] == "built (external)" and row[5] == sys.executable
        await pilot.press("2")
        factors = pilot.app.query_one("#factors", SelectionList)
        factors.deselect_all()
        factors.select("torch-seed")
        await pilot.pause()
        assert "lab-torch" in str(pilot.app.query_one("#ts-1").label)
        pilot.app.query_one("#ts-1").value = True
        await pilot.pause()
        summary = str(pilot.app.query_one("#plan-summary").render())
        assert "stack lab-torch has no torch" in summary


# -- snapshots: one per screen, on a hand-made store (deterministic on every machine) --------
@pytest.mark.parametrize("keys", [[], ["2"], ["3"], ["4"], ["4", "u", "p"], ["5"], ["6"], ["7"],
                                  ["question_mark"], ["d"]],
                         ids=["setup", "plan", "run", "budget", "budget-units-plot", "verdicts",
                              "advice", "compare", "help", "light"])
def test_screens(snap_compare, stored_home, keys):
    async def settle(pilot):  # a slow first start must not photograph a half-drawn screen
        await pilot.app.workers.wait_for_complete()
        await pilot.pause(0.3)

    assert snap_compare(app(), press=keys, terminal_size=(80, 24), run_before=settle)


@pytest.mark.slow
def test_tmux_smoke(tmp_path):
    """tests/tui_smoke.sh drives `kit tui` in a real terminal (tmux send-keys / capture-pane)."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    if not shutil.which("tmux"):
        pytest.skip("tmux is not installed (.ci/run installs it)")
    script = Path(__file__).with_name("tui_smoke.sh")
    kit = str(Path(sys.executable).with_name("kit"))
    proc = subprocess.run(["bash", str(script), kit], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, KIT_HOME=str(tmp_path / "home")))
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

    async with KitApp("synthetic", 120, platform=LINUX).run_test(size=(120, 40)) as pilot:
        for tab in "1234567":
            await pilot.press(tab)
            await pilot.pause()
        await pilot.press("4")
        table = pilot.app.query_one("#budget-table", DataTable)
        names = [table.get_row_at(i)[0] for i in range(table.row_count)]
        assert {"seed", "perturb=1e-03", "svd-solver", "host"} <= set(names)
        assert ("torch-seed" in names) == on_every_kind["torch"]
        for key in ("u", "p", "a", "u", "p", "a"):
            await pilot.press(key)
            await pilot.pause()
        for i in range(table.row_count):  # every row's pairs
            table.focus()
            table.move_cursor(row=i)
            await pilot.press("enter")
            await pilot.pause()
            assert pilot.app.query_one("#pairs", DataTable).row_count >= 1
        await pilot.press("5")
        head = pilot.app.query_one("#verdicts-head")
        seen = set()
        for _ in range(30):  # around every set at least once
            await pilot.press("s")
            await pilot.pause()
            seen.add(pilot.app.verdict_set)
        assert "seeds" in seen and not any(s.startswith("torch") for s in seen)
        assert "run set" in str(head.render())
        await pilot.press("6")
        await pilot.pause()
        assert "What to pin first" in pilot.app.query_one("#advice-md", Markdown).source
        await pilot.press("question_mark", "escape", "d", "d")
        await pilot.pause()
        await pilot.press("7")
        box = pilot.app.query_one("#bundle-path", Input)
        box.value = str(on_every_kind["bundle"])
        box.focus()
        await pilot.press("enter")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert "reproduced" in str(pilot.app.query_one("#compare-answer").render())


async def test_bad_plan_settings_are_shown_in_the_app(tmp_path):
    """Typing 0 (or 99) threads ended the app with a traceback and exit status 0."""
    async with app().run_test(size=(100, 32)) as pilot:
        await pilot.press("2")
        for text, says in (("0", "0 is not allowed here"), ("99", "would measure oversubscription")):
            await set_input(pilot, "#threads", text)
            pilot.app.query_one("#plan-pane").update_summary()
            assert says in str(pilot.app.query_one("#plan-summary").render())
        await pilot.press("ctrl+r")  # running it says so too, and the app goes on
        await pilot.pause()
        assert pilot.app.is_running and pilot.app.return_code in (None, 0)


async def test_a_bug_ends_the_app_with_status_1_and_one_line(tmp_path, monkeypatch):
    import kit.tui.panes as panes

    def broken(self):
        raise RuntimeError("a bug")

    monkeypatch.setattr(panes.AdvicePane, "show", broken)
    tui = app()
    with pytest.raises(RuntimeError):  # the pilot re-raises what ended the app
        async with tui.run_test(size=(100, 32)) as pilot:
            await pilot.press("6")
            await pilot.pause()
    assert tui.return_code == 1
