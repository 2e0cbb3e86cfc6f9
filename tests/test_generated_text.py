"""A name never becomes code (#37 item 4): hostile names put straight into what kit generates
(the tolerances' Python and YAML, the reports' Markdown and HTML, the TUI's markup) come out as
the same names, quoted for that text, and nothing of them runs, parses as structure or renders
as a tag."""

import json
import subprocess
import sys

import yaml
from markdown_it import MarkdownIt
from rich.text import Text

from kit.analysis.tolerances import from_rows
from kit.views.tolerances import render
from stored import arrays, budget_store, env, put, spec

# run by the module once imported, or by check() once called, were the names code
RUN_AT_IMPORT = "evil\nimport os; os.system('touch PWNED')  #"
RUN_IN_CHECK = "x\n    import os; os.system('touch PWNED_IN_CHECK')  #"
HOSTILE = [RUN_AT_IMPORT, RUN_IN_CHECK, "a: b\n- c", "<script>alert(1)</script>",
           "[bold]x[/]", "`|`", "tab\there\x1b[2J"]


def _tolerances(name: str) -> dict:
    """kit.analysis.tolerances of a threads pair that moved every hostile output a little
    (one of them an exact one), for a dataset named ``name``."""
    moved = {"kind": "array", "changed": True, "most": {"max_abs": 1e-9, "max_rel": 1e-8}}
    outputs = {n: dict(moved) for n in HOSTILE}
    outputs["a: b\n- c"] = {"kind": "array", "changed": False}
    return from_rows({"threads": {"pairs": 1, "outputs": outputs}},
                     {"dataset": "d" * 64, "name": name})


def test_the_numpy_file_imports_without_running_a_name_and_keeps_each_as_a_key(tmp_path):
    (tmp_path / "generated_tolerances.py").write_text(render(_tolerances(RUN_AT_IMPORT), "numpy"))
    probe = ("import json, numpy as np, generated_tolerances as g\n"
             "got = {n: np.ones(3) for n in g.OUTPUTS}\n"
             "g.check(got, {n: a.copy() for n, a in got.items()})\n"
             "print(json.dumps([list(g.OUTPUTS), g.SOURCE]))\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
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
    put(st, tmp_path, spec(replicate=7), arrays(0),
        env(cpu="<script>alert(1)</script>", host="h|x | injected | row |", os="`|`"))
    write(report(st, of_dataset("d" * 64, {})), tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    page = (tmp_path / "rep" / "report.html").read_text()
    shown = _md(md)
    assert "<script>" not in shown and "<script>" not in page and "<script>" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown and "&lt;script&gt;" in page
    # the host's | broke no row: the environments' table has its two rows and hers (a newline
    # never gets this far: the store refuses a manifest with a control character, tests/test_documents.py)
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
    md = outputs_report_md(dict(head, factors={}), dict(head, why="no pairs"),
                       dict(head, steps=[]))
    shown = _md(md)
    assert "<script>" not in shown and "injected</h1>" not in shown
    assert shown.count("<h1>") == 1 and shown.count("<h2>") == 3
    # rendered as kit's own report is (paragraphs and tables, no code blocks): the name is text
    assert "<pre>" not in shown and shown.count("<p>") >= 4


async def test_tui_markup_shows_a_name_as_written(kit_home):
    """The Compare tab's answer and table hold a bundle's host names and run labels: text."""
    from kit.envs.platforms import Platform
    from kit.runs.store import Store
    from kit.tui.app import KitApp
    from kit.tui.compare import ComparePane
    from textual.widgets import DataTable

    linux = Platform("linux", "x86_64", cpu_flags=frozenset({"avx", "avx2"}), downloads=True)
    rep = {"bundle_host": {"name": "[bold]theirs[/]"}, "this_host": {"name": "[@click=app.quit]"},
           "answer": "[red]forged[/] answer",
           "per_run": [{"label": "[b]run[/] `|`", "identical_stages": 1, "stages": 2,
                        "emb_rel": 0.0, "flips": {}}],
           "environment_differences": {}, "not_compared": []}
    async with KitApp("synthetic", 120, platform=linux, store=Store()).run_test(
            size=(120, 30)) as pilot:
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

    moved = {"kind": "array", "changed": True, "worst": {"rel": 0.1},
             "most": {"max_abs": 0.1, "max_rel": 0.1}}
    b = {"name": "a$\\frac{$b.py", "factors": {"threads": {"pairs": 1, "outputs": {"x": moved}}}}
    assert plot_travel(b, {"factors": {}}, {}).startswith(b"\x89PNG")
