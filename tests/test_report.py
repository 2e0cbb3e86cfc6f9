"""kit.report and the verdicts/advise/report commands on a real store."""

import json

from kit.cli import main
from kit.report import write
from stored import budget_store


def test_report_files(tmp_path):
    st = budget_store(tmp_path)
    out = write(st, "d" * 64, tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "## What to pin first" in md and "## The budget" in md and "## Verdict stability" in md
    assert "![Flips per factor](flips_seed_units.png)" in md
    assert "## Measured environments" in md and "test cpu" in md
    assert page.count("data:image/png;base64,") == len(out["plots"]) == 2
    assert "src=\"http" not in page and "<link" not in page  # self-contained
    for p in out["plots"]:
        assert open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_cli_verdicts_advise_report(tmp_path, capsys, monkeypatch):
    budget_store(tmp_path)
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "home"))
    assert main(["verdicts", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert set(rep) >= {"seeds", "seed", "threads", "repeat"} and len(rep["seeds"]) == 12
    assert main(["verdicts", "--set", "nope"]) == 1
    capsys.readouterr()
    assert main(["advise", "--json"]) == 0
    a = json.loads(capsys.readouterr().out)
    assert a["ranking"] and a["recommendations"]
    assert main(["advise"]) == 0 and "What to pin first" in capsys.readouterr().out
    assert main(["report", "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "report.html").exists()
