"""kit.app.audit.run_audit: the one entry point `kit run` and `kit tui` drive, and its questions."""

import pytest

from kit.app import audit as au
from kit.runs.planning.options import PlanOptions
from kit.runs.store import Store


def seed_plan(runs: int) -> au.Audit:
    """A seed plan of ``runs`` runs (seed 0 is every pair's reference)."""
    return au.prepare(
        ["seed"], "synthetic", 120, PlanOptions(threads=(1,), seeds=tuple(range(runs)))
    )


class Events(au.Progress):
    def __init__(self):
        self.seen = []

    def building(self, stacks):
        self.seen.append(("building", len(stacks)))
        return super().building(stacks)

    def planned(self, audit, todo):
        self.seen.append(("planned", len(todo)))

    def running(self, todo):
        self.seen.append(("running", len(todo)))
        return super().running(todo)

    def done(self, spec):
        self.seen.append(("done", spec.run_id))


@pytest.mark.slow
def test_it_runs_what_is_missing_and_reports_each_step_in_order(tmp_path):
    store, events = Store(tmp_path / "store"), Events()
    a = seed_plan(2)
    stored = au.run_audit(a, store, progress=events, jobs=1)
    ids = [s.run_id for s in a.specs]
    assert sorted(stored) == sorted(ids) and all(map(store.has_run, ids))
    assert events.seen[:3] == [("building", 0), ("planned", 2), ("running", 2)]
    assert sorted(e[1] for e in events.seen[3:]) == sorted(ids)
    again = Events()  # everything stored: planned, nothing to run
    assert sorted(au.run_audit(seed_plan(2), store, progress=again)) == sorted(ids)
    assert again.seen == [("building", 0), ("planned", 0), ("running", 0)]
    store.close()


@pytest.mark.parametrize("runs, asked", [(au.ASK_ABOVE, False), (au.ASK_ABOVE + 1, True)])
def test_confirm_is_asked_above_ask_above_and_not_below(tmp_path, monkeypatch, runs, asked):
    ran, questions = [], []
    monkeypatch.setattr(au, "execute", lambda a, store, **kw: ran.append(len(a.specs)) or [])

    def no(ask):
        questions.append(ask)
        return False

    result = au.run_audit(seed_plan(runs), Store(tmp_path / "store"), confirm=no)
    assert [q.runs for q in questions] == ([runs] if asked else [])
    assert (result, ran) == ((None, []) if asked else ([], [runs]))  # a no: nothing runs
    if asked:
        assert questions[0].stacks == [] and questions[0].estimate() is None  # no past timings


def test_confirm_is_asked_before_building_stacks(tmp_path, monkeypatch):
    built, questions = [], []
    monkeypatch.setattr(au, "stacks_to_build", lambda a: [("np1-sk152", 66 * 2**20)])
    monkeypatch.setattr(au, "build_stacks", lambda a, log, on_built: built.append(a))
    monkeypatch.setattr(au, "execute", lambda a, store, **kw: [])
    for answer in (False, True):
        questions.clear()
        au.run_audit(
            seed_plan(2),
            Store(tmp_path / "store"),
            confirm=lambda ask, answer=answer: questions.append(ask) or answer,
        )
        assert [q.stacks for q in questions] == [[("np1-sk152", 66 * 2**20)]]
        assert len(built) == answer  # a no builds nothing


@pytest.fixture
def entry(monkeypatch):
    """run_audit replaced: it records who called it and asks its caller about 201 runs."""
    calls = []

    def run_audit(audit, store, confirm, progress, **kw):
        calls.append((audit.factors, audit.dataset.name, kw["jobs"]))
        return [] if confirm(au.Ask(audit, store, runs=au.ASK_ABOVE + 1)) else None

    monkeypatch.setattr(au, "run_audit", run_audit)
    return calls


async def test_the_cli_and_the_tui_drive_the_same_entry_point(entry, capsys):
    from kit.cli import main
    from kit.tui.app import KitApp
    from kit.tui.dialogs import ConfirmScreen

    # the CLI: without a terminal a large plan is refused, as `kit run` refuses it
    assert main(["run", "--factor", "seed", "--n", "120", "--threads", "1", "--seeds", "0-1"]) == 1
    assert f"more than {au.ASK_ABOVE} runs needs --yes" in capsys.readouterr().err
    # the TUI: the same question on the screen, answered no
    async with KitApp("synthetic", 120, threads="1", seeds="0-1", store=Store()).run_test(
        size=(100, 32)
    ) as pilot:
        await pilot.press("2", "r")
        for _ in range(300):
            if isinstance(pilot.app.screen, ConfirmScreen):
                break
            await pilot.pause(0.1)
        assert f"{au.ASK_ABOVE + 1} runs to do. Start them?" in str(
            pilot.app.screen.query_one("#confirm").children[0].render()
        )
        await pilot.press("n")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert "not started" in str(pilot.app.query_one("#run-status").render())
    assert entry == [(("seed",), "synthetic-120", "auto"), (("repeat", "seed"), "synthetic-120", 1)]


def test_kit_s_own_estimate_counts_the_runs_at_once_and_leaves_forged_times_out():
    from types import SimpleNamespace as NS

    specs = [NS(run_id=i, dataset="d", kind="pipeline") for i in range(8)]
    walls = [10.0, 10.0, float("-inf"), float("nan")]  # a bundle's forged times say nothing
    store = NS(
        runs=lambda: [
            NS(spec=NS(dataset="d", kind="pipeline"), manifest={"wall_s": w}) for w in walls
        ],
        datasets=dict,
        has_run=lambda run_id: False,
    )
    a = NS(specs=specs, dataset=NS(n=100))
    assert au.estimate_seconds(a, store) == 80.0
    assert au.estimate_seconds(a, store, at_once=4) == 20.0
    assert au.estimate_seconds(a, store, at_once=100) == 10.0  # never below one run
    assert au.Ask(a, store, runs=8, at_once=4).estimate() == 20.0
    assert au.at_once_here(specs, 3, None) == 3 and au.at_once_here(specs, 30, None) == 8
    assert au.at_once_here(specs, 3, NS(name="dask")) == 1
