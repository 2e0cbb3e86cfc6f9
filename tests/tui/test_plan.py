"""kit tui on a lab's pipeline file (Plan and Run run it) and the keyboard's focus traps a
stranger's drive found, by Textual's pilot on a real store, a real worker and real files."""

from pathlib import Path

import pytest
from places import PIPELINES
from textual.widgets import Input, SelectionList

from kit.runs.store import Store
from kit.tui.app import KitApp
from tests.data.test_homology import needs_mmseqs
from tests.tui.test_app import LINUX, N, settled, text

TWO = PIPELINES / "two_models.py"


def app(store=None, **small):
    """The app on a real store; ``small`` (threads="1", seeds="0,1") keeps a plan small."""
    store = Store() if store is None else store
    return KitApp("synthetic", N, platform=LINUX, store=store, **small)


SMALL = {"threads": "1", "seeds": "0,1"}


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


# -- a pipeline file planned and run from the Plan and Run tabs -------------------------------
def factor_values(pilot) -> list:
    factors = pilot.app.query_one("#factors", SelectionList)
    return [factors.get_option_at_index(i).value for i in range(factors.option_count)]


async def choose(pilot, value: str) -> None:
    """Type ``value`` into Setup's pipeline field, reached by the first Tab, and press Enter."""
    await pilot.press("escape", "1")
    field = pilot.app.query_one("#pipeline-file", Input)
    await pilot.press("tab")
    assert pilot.app.focused is field
    field.value = ""
    await pilot.press(*value, "enter", "escape")


async def run_status(pilot) -> str:
    """Plan, then Run (2, r) to the end: the Run tab's status, which is one line."""
    await settled(pilot, "2")
    await pilot.press("r")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    status = text(pilot.app.query_one("#run-status"))
    assert "\n" not in status.strip(), status
    return status


@pytest.mark.slow
async def test_a_pipeline_file_chosen_on_setup_is_planned_run_and_read_by_keys():
    """Setup chooses tests/support/pipelines/two_models.py; Plan lists its factors (seed:split and
    seed:forest) and counts its pairs; Run runs repeat and seed:forest in kit's own interpreter
    with the progress bar; the store then holds those pipeline runs and pairs, and the Budget
    shows the pipeline's budget. Emptying the field gives kit's own pipeline back."""
    from textual.widgets import ProgressBar

    from kit.app.selection import pipeline_runs

    async with app(**SMALL).run_test(size=(80, 24)) as pilot:
        await choose(pilot, str(TWO))
        sha = pilot.app.pipeline.sha256
        await settled(pilot, "2")
        values = factor_values(pilot)
        # the ticked ones first, then the registry's order for a pipeline file
        # (kit.core.factors.for_kind), stacks last
        assert values[:8] == [
            "repeat",
            "seed",
            "process",
            "host",
            "threads",
            "precision",
            "seed:split",
            "seed:forest",
        ]
        assert "svd-iters" not in values and "seed:svd" not in values
        assert "precision" in pilot.app.pane("plan")._unavailable  # run takes no dtype
        assert pilot.app.query_one("#lab-note").display
        assert not pilot.app.query_one("#device").display  # kit's torch device: not a file's
        summary = pilot.app.query_one("#plan-summary")
        assert "pipeline two_models.py" in text(
            summary
        ) and "2 pairs (repeat 1, seed 1), 3 runs" in text(summary)
        await pilot.press("down", "space", *["down"] * 6, "space")  # seed off,
        await settled(pilot)
        factors = pilot.app.query_one("#factors", SelectionList)  # seed:forest on
        assert factors.selected == ["repeat", "seed:forest"]
        assert "2 pairs (repeat 1, seed:forest 1), 3 runs: 0 stored, 3 to run" in text(summary)
        await pilot.press("r")
        assert pilot.app.query_one("TabbedContent").active == "run"
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert "finished: 3 run(s)" in text(pilot.app.query_one("#run-status"))
        bar = pilot.app.query_one("#run-progress", ProgressBar)
        assert (bar.total, bar.progress) == (3, 3)
        store = Store()
        runs = pipeline_runs(store, sha)
        assert len(runs) == 3 and {r.spec.stack for r in runs} == {"host"}
        assert sorted(p.factor for p in store.pairs(sha)) == ["repeat", "seed:forest"]
        await settled(pilot, "4")
        body = " ".join(str(pilot.app.query_one("#explain-text").render()).split())
        assert "pipeline two_models.py" in body and "seed:forest" in body
        await settled(pilot, "2")
        assert "3 stored, 0 to run" in text(summary)
        await choose(pilot, "")  # the field emptied: kit's own pipeline again
        await settled(pilot, "2")
        assert "svd-iters" in factor_values(pilot) and pilot.app.query_one("#device").display
        assert "pipeline" not in text(summary)


@pytest.mark.slow
async def test_a_pipeline_plan_estimates_its_time_from_its_own_stored_runs(tmp_path):
    """The pipeline's Plan showed no time while kit's own Plan shows one: before any run of the
    pipeline it says there are no past timings, then each run to do costs its stored runs'
    median wall time (the one Plan line of the plan verb's record, as kit's own says it)."""
    from kit.app.audit import file_estimate
    from kit.app.selection import pipeline_info_of
    from kit.core.numbers import span

    tiny = tmp_path / "tiny.py"
    tiny.write_text(
        "import numpy as np\n\nSEEDS = ('a',)\n\ndef run(seeds):\n"
        "    return {'x': np.zeros(2) + seeds['a']}\n"
    )
    async with app(**SMALL).run_test(size=(80, 24)) as pilot:
        await choose(pilot, str(tiny))
        await settled(pilot, "2")
        summary = pilot.app.query_one("#plan-summary")
        said = " ".join(text(summary).split())
        assert "3 to run, no past timings for an estimate" in said, said
        assert "finished: 3 run(s)" in await run_status(pilot)
        await settled(pilot, "2")
        pilot.app.query_one("#seeds", Input).value = "0,1,2"
        await pilot.pause()
        est = file_estimate(pipeline_info_of(pilot.app.pipeline), ["the run of seed 2"], Store())
        assert est["runs"] == 2 and est["warm"]  # the worker's first run imported the file
        said = " ".join(text(summary).split())
        assert f"1 to run, about {span(est['seconds'])} from past timings" in said, said
        assert "0.0 min" not in said  # #56: a second's run was "about 0.0 min"


@pytest.mark.slow
async def test_a_chosen_hash_whose_file_is_not_here_says_running_needs_it(tmp_path):
    """Runs of a pipeline imported from elsewhere: the hash chooses them for reading; Plan and
    Run say in one line that running needs the file."""
    from kit.app.audit import run_pairs
    from kit.core.paths import subdir
    from kit.data.pipelines import add_pipeline
    from kit.runs.planning.options import PlanOptions
    from kit.runs.planning.plan import plan_file

    info = add_pipeline(TWO)
    run_pairs(plan_file("repeat", info, PlanOptions(threads=(1,))), info, Store())
    for f in (subdir("pipelines") / "by-hash").iterdir():  # as if made on another machine
        f.unlink()
    async with app().run_test(size=(80, 24)) as pilot:
        await choose(pilot, info["sha256"][:12])
        assert pilot.app.pipeline.sha256 == info["sha256"]
        await settled(pilot, "2")
        said = text(pilot.app.query_one("#plan-summary"))
        assert "needs its file" in said and "\n" not in said.strip()
        await pilot.press("r")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        status = text(pilot.app.query_one("#run-status"))
        assert "needs its file" in status and pilot.app.is_running


@pytest.mark.slow
async def test_a_broken_pipeline_is_one_line_and_the_app_goes_on(tmp_path):
    """A file that does not parse is refused on Setup; one whose run raises fails its runs
    on the Run tab: one line each, never a traceback, and the app stays usable."""
    bad = tmp_path / "bad.py"
    bad.write_text("SEEDS = (\n")
    boom = tmp_path / "boom.py"
    boom.write_text(
        "SEEDS = ('a',)\n\ndef run(seeds):\n    x = seeds['a']\n"
        "    raise ValueError('no data here')\n"
    )
    async with app(**SMALL).run_test(size=(80, 24)) as pilot:
        await choose(pilot, str(bad))
        assert pilot.app.pipeline is None  # said in a notification; nothing chosen
        notes = [n.message for n in pilot.app._notifications]
        assert any("does not parse" in m and "\n" not in m for m in notes), notes
        await choose(pilot, str(boom))
        assert pilot.app.pipeline.name == "boom.py"
        status = await run_status(pilot)
        assert "ValueError: no data here" in status and "Traceback" not in status
        await pilot.press("4")  # still usable: the tabs read
        assert pilot.app.query_one("TabbedContent").active == "budget" and pilot.app.is_running


async def asked(pilot) -> str:
    """Run (r) a large plan: the question the Run tab asks first."""
    from kit.tui.dialogs import ConfirmScreen

    await pilot.press("r")
    for _ in range(100):
        if isinstance(pilot.app.screen, ConfirmScreen):
            break
        await pilot.pause(0.1)
    assert isinstance(pilot.app.screen, ConfirmScreen)
    return pilot.app.screen.question


async def test_a_large_pipeline_plan_asks_first_and_no_runs_nothing():
    async with app(threads="1", seeds="0-250").run_test(size=(80, 24)) as pilot:
        await choose(pilot, str(TWO))
        await settled(pilot, "2")
        assert "251 pairs (repeat 1, seed 250), 252 runs" in text(
            pilot.app.query_one("#plan-summary")
        )
        assert await asked(pilot) == "252 runs to do. Start them?"  # no stored run to time
        await pilot.press("n")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert "not started" in text(pilot.app.query_one("#run-status")) and not Store().runs()


@pytest.mark.slow
async def test_a_large_pipeline_plan_asks_with_the_time_its_stored_runs_give():
    """The CLI's question says how long from the pipeline's own stored runs; the TUI's said only
    "N runs to do": now it says what `kit run --pipeline` says."""
    from kit.app.audit import file_estimate, file_pairs, runs_of
    from kit.core.numbers import span
    from kit.runs.planning.options import PlanOptions

    info = stored_seed_pair()
    async with app(threads="1", seeds="0-250").run_test(size=(80, 24)) as pilot:
        await choose(pilot, str(TWO))
        await settled(pilot, "2")
        question = await asked(pilot)
        await pilot.press("n")
        await pilot.app.workers.wait_for_complete()
    pairs = file_pairs(info, ("repeat", "seed"), PlanOptions(threads=(1,), seeds=tuple(range(251))))
    todo = runs_of(pairs, Store())[1]
    est = file_estimate(info, todo, Store())
    assert (
        question == f"{len(todo)} runs to do (about {span(est['seconds'])} from past timings). "
        "Start them?"
    ), question


async def test_a_chosen_file_deleted_before_run_is_one_line_and_the_app_goes_on(tmp_path):
    """The file chosen on Setup, then deleted: Run says in one red line it cannot read it (an
    OSError on the way is the CLI's one line too), never a traceback, and the app goes on."""
    gone = tmp_path / "gone.py"
    gone.write_text(TWO.read_text())
    async with app(threads="1", seeds="0").run_test(size=(80, 24)) as pilot:
        await choose(pilot, str(gone))
        assert pilot.app.pipeline.name == "gone.py"
        gone.unlink()
        status = await run_status(pilot)
        assert "gone.py" in status and "Traceback" not in status, status
        await pilot.press("4")
        assert pilot.app.query_one("TabbedContent").active == "budget" and pilot.app.is_running


@pytest.mark.slow
async def test_another_pipeline_chosen_during_a_run_stays_chosen_and_the_next_run_runs_it(tmp_path):
    """A run ending put its pipeline back over the one Setup chose meanwhile (the tabs read the
    old one, the next Run ran the new file): now the new choice stays, a line says whose the
    finished runs are, and the next Run runs what the tabs show."""
    from kit.app.selection import pipeline_runs

    gate = tmp_path / "gate"
    slow, fast = tmp_path / "slow.py", tmp_path / "fast.py"
    slow.write_text(
        f"import time\nfrom pathlib import Path\nimport numpy as np\n\n"
        f"SEEDS = ('a',)\n\ndef run(seeds):\n    a = seeds['a']\n"
        f"    while not Path({str(gate)!r}).exists():\n        time.sleep(0.05)\n"
        f"    return {{'x': np.arange(3.0) + a}}\n"
    )
    fast.write_text(
        "import numpy as np\n\nSEEDS = ('a',)\n\ndef run(seeds):\n"
        "    return {'x': np.zeros(2) + seeds['a']}\n"
    )
    async with app(**SMALL).run_test(size=(80, 24)) as pilot:
        await choose(pilot, str(slow))
        await settled(pilot, "2")
        await pilot.press("r")
        for _ in range(200):
            if "running" in text(pilot.app.query_one("#run-status")):
                break
            await pilot.pause(0.1)
        assert pilot.app.pane("run").running, text(pilot.app.query_one("#run-status"))
        await choose(pilot, str(fast))
        gate.touch()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert "finished" in text(pilot.app.query_one("#run-status"))
        assert pilot.app.pipeline.name == "fast.py"
        notes = [n.message for n in pilot.app._notifications]
        assert any("finished runs are of pipeline slow.py" in m for m in notes), notes
        await settled(pilot, "2")
        assert "pipeline fast.py" in text(pilot.app.query_one("#plan-summary"))
        await pilot.press("r")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        sha = pilot.app.pipeline.sha256
        assert pipeline_runs(Store(), sha)  # the file the tabs show was run


@pytest.mark.slow
async def test_an_error_kit_did_not_expect_in_a_pipeline_run_is_one_line_as_the_cli_says_it(
    tmp_path,
):
    """A store whose index lost its pairs table (an sqlite3 error kit leaves to its caller as a
    bug) killed the Run tab's worker with a traceback screen: now the CLI's internal-error line,
    the traceback in a file, and the app goes on."""
    import sqlite3

    ok = tmp_path / "ok.py"
    ok.write_text(
        "import numpy as np\n\nSEEDS = ('a',)\n\ndef run(seeds):\n"
        "    return {'x': np.zeros(2) + seeds['a']}\n"
    )
    store = Store()
    async with app(store, **SMALL).run_test(size=(80, 24)) as pilot:
        await choose(pilot, str(ok))
        with sqlite3.connect(store.root / "store.sqlite") as db:
            db.execute("DROP TABLE pairs")
        status = await run_status(pilot)
        assert "internal error: OperationalError" in status and "Traceback" not in status
        log = status.split("the traceback is in ")[1].rstrip(")")
        assert "Traceback" in Path(log).read_text()
        await pilot.press("1")
        assert pilot.app.query_one("TabbedContent").active == "setup" and pilot.app.is_running


# -- a pipeline's name is text, never markup -------------------------------------------------
@pytest.mark.slow
async def test_a_pipeline_named_like_markup_is_shown_as_its_name(tmp_path, monkeypatch):
    """A name can come from a bundle (`[bold]x.py` imports fine): Setup's toast, the Run tab's
    status and the toast about whose runs finished read it as markup ("x.py" in bold; a
    `[@click=app.quit]` name would quit on a click)."""
    from textual.content import Content

    from kit.tui.run import RunPane

    said = []
    shown = RunPane.on_run_pane_progress
    monkeypatch.setattr(
        RunPane, "on_run_pane_progress", lambda self, m: (said.append(m.status), shown(self, m))[1]
    )
    odd = tmp_path / "[bold]x.py"
    odd.write_text(
        "import numpy as np\n\nSEEDS = ('a',)\n\ndef run(seeds):\n"
        "    return {'x': np.zeros(2) + seeds['a']}\n"
    )
    async with app(**SMALL).run_test(size=(80, 24)) as pilot:
        await choose(pilot, str(odd))
        chosen = pilot.app.pipeline
        assert chosen.name == "[bold]x.py"
        notes = [Content.from_markup(n.message).plain for n in pilot.app._notifications]
        assert any("tabs read pipeline [bold]x.py (" in m for m in notes), notes
        assert "finished" in await run_status(pilot)
        statuses = [Content.from_markup(s).plain for s in said if s]
        assert f"running pipeline [bold]x.py ({chosen.short}): 0 of 3 done" in statuses, statuses
        pilot.app.ran(("another choice",), chosen)
        await pilot.pause()
        notes = [Content.from_markup(n.message).plain for n in pilot.app._notifications]
        assert any("finished runs are of pipeline [bold]x.py (" in m for m in notes), notes


# -- the read tabs on a pipeline, at 80x24 -----------------------------------------------------
def stored_seed_pair():
    """two_models.py's runs of a seed pair (no repeat: its advice starts with the null
    experiment, a long paragraph); its info."""
    from kit.app.audit import run_pairs
    from kit.data.pipelines import add_pipeline
    from kit.runs.planning.options import PlanOptions
    from kit.runs.planning.plan import plan_file

    info = add_pipeline(TWO)
    run_pairs(plan_file("seed", info, PlanOptions(threads=(1,), seeds=(0, 1))), info, Store())
    return info


@pytest.mark.slow
async def test_the_advice_of_a_pipeline_wraps_to_the_pane_at_80_columns():
    """The Advice tab showed `kit advise --pipeline`'s text, wrapped at the CLI's 80 columns,
    in a Markdown code block: its padding cut the lines' ends off at the right edge
    ("comparin", "n"). Now every word of it is on the screen, in its order."""
    import re

    from kit.analysis.advice import output_advice
    from kit.analysis.budget import output_budget
    from kit.analysis.verdicts import output_verdicts
    from kit.core.subject import of_pipeline
    from kit.views.fit import unwrapped
    from kit.views.tables import output_advice_text
    from tests.tui.test_app import screen_text

    info, store = stored_seed_pair(), Store()
    unwrapped()
    try:
        said = output_advice_text(
            output_advice(
                output_budget(store, of_pipeline(info)), output_verdicts(store, of_pipeline(info))
            )
        )
    finally:
        unwrapped(False)
    assert "null experiment first" in said and "only every seed at once" in said
    async with app(store).run_test(size=(80, 24)) as pilot:
        await choose(pilot, str(TWO))
        await settled(pilot, "6")
        shown = screen_text(pilot)
        assert " ".join(said.split()) in " ".join(re.findall(r"\S+", shown)), shown


PROTEINS = PIPELINES / "proteins.py"


def protein_runs(tmp_path, monkeypatch, n=150, cluster=True):
    """proteins.py's seed:split runs on ``n`` of kit's synthetic proteins, imported as "prot"
    and (``cluster``) clustered by MMseqs2, as `kit homology --pipeline` reads them."""
    from kit.cli import main
    from kit.data.synthetic import generate

    ids, seqs, labels, _ = generate(n)
    tsv = tmp_path / "prot.tsv"
    tsv.write_text(
        "accession\tsequence\tlabel\n"
        + "".join(f"{a}\t{s}\t{int(y)}\n" for a, s, y in zip(ids, seqs, labels, strict=True))
    )
    monkeypatch.setenv("KIT_TEST_PROTEINS", str(tsv))
    argv = [("data", "import", tsv, "--name", "prot")] + [("data", "homology", "prot")] * cluster
    argv.append(
        (
            "run",
            "--pipeline",
            PROTEINS,
            "--factor",
            "seed:split",
            "--threads",
            "1",
            "--seeds",
            "0,1",
        )
    )
    for a in argv:
        assert main([str(x) for x in a]) == 0, a


def footer_keys(pilot) -> set:
    from textual.widgets._footer import FooterKey

    return {k.key for k in pilot.app.query(FooterKey)}


@pytest.mark.slow
async def test_verdicts_of_a_pipeline_offer_only_the_keys_that_do_something(tmp_path, monkeypatch):
    """With a pipeline chosen the footer offered `s Next run set` and `h Homology` and both did
    nothing. Now s is gone (a pipeline has no run sets); h is offered only for a pipeline with
    protein ids, a line points to it as the CLI's does, and where no clustering holds the runs'
    ids it says so in one line."""
    protein_runs(tmp_path, monkeypatch, cluster=False)
    async with app().run_test(size=(80, 24)) as pilot:
        await settled(pilot, "5")
        assert {"s", "h"} <= footer_keys(pilot)  # kit's own verdicts: both apply
        await choose(pilot, str(TWO))
        await settled(pilot, "5")
        assert not {"s", "h"} & footer_keys(pilot)
        await choose(pilot, str(PROTEINS))
        await settled(pilot, "5")
        assert "h" in footer_keys(pilot) and "s" not in footer_keys(pilot)
        head = pilot.app.query_one("#verdicts-lab")
        assert "Under homology: h" in " ".join(text(head).split())
        await settled(pilot, "h")
        said = text(head).strip()
        assert "\n" not in said and "h: back" in said and "Traceback" not in said, said
        await settled(pilot, "h")
        assert "Under homology: h" in " ".join(text(head).split())


@pytest.mark.slow
@needs_mmseqs
async def test_h_on_verdicts_reads_a_protein_pipeline_under_homology(tmp_path, monkeypatch):
    """h on the Verdicts tab of a protein pipeline: `kit homology --pipeline`'s reading (the
    clustering its ids were mapped into, the verdicts under the cluster bootstrap), fitted to
    the pane; h again: the verdicts."""
    protein_runs(tmp_path, monkeypatch)
    async with app().run_test(size=(80, 24)) as pilot:
        await choose(pilot, str(PROTEINS))
        await settled(pilot, "5", "h")
        said = text(pilot.app.query_one("#verdicts-lab"))
        assert "proteins.py" in said and "under homology" in said, said
        assert "MMseqs2" in said and "cluster bootstrap" in said and "h: back" in said, said
        assert max(len(line) for line in said.splitlines()) <= 76, said
        await settled(pilot, "h")
        assert "Under homology: h" in " ".join(text(pilot.app.query_one("#verdicts-lab")).split())


async def test_setup_says_a_chosen_pipeline_reads_its_own_data():
    """After a pipeline was chosen, Setup still read "Dataset synthetic-120 SYNTHETIC", as if
    the dataset were what runs (a toast said the choice took): now it names the pipeline and
    its hash, says it reads its own data, and the dataset line is dimmed with why."""
    async with app().run_test(size=(80, 24)) as pilot:
        info = pilot.app.query_one("#dataset-info")
        await settled(pilot)  # read in a worker, once the screen is up
        assert "SYNTHETIC" in text(info)
        await choose(pilot, str(TWO))
        await settled(pilot)
        sha = pilot.app.pipeline.sha256[:12]
        said = " ".join(text(info).split())
        assert f"Pipeline two_models.py ({sha})" in said and "it reads its own data" in said, said
        assert "kit's own pipeline's, not the file's" in said and "SYNTHETIC" not in said, said
        await choose(pilot, "")
        await settled(pilot)
        assert "SYNTHETIC" in text(info) and "Pipeline" not in text(info)
