"""report.html read where it is read: in a real browser (headless chromium,
tests/support/browser.py). Every image loads and nothing is wider than the window, for kit's own
report and a pipeline file's, on the store of every kind of run; a screenshot is kept for a
reviewer."""

import base64
import re
import tempfile
from pathlib import Path

import pytest
from browser import ARTIFACTS, BrowserTimeout, gone, probed, run_chromium, screenshot
from stored import budget_store

from kit.app.verbs import report
from kit.cli import main
from kit.core.subject import of_dataset
from kit.views.report import write

# a browser start is seconds, like a worker's: the slow tier (tests/support/tiers.py)
pytestmark = pytest.mark.slow

# a desktop window, and a narrow one (half a laptop's screen): the report is meant to fit both
WIDTHS = (1280, 800)


def _not_loaded(verdict: dict) -> list:
    return [f"{i['what']} (src {i['src']})" for i in verdict["images"] if not i["loaded"]]


def _read_in_the_browser(page: Path, shot: str) -> dict:
    """Open ``page`` at each of WIDTHS; every image loads and nothing sticks out past the
    window's right edge (the offenders named); the screenshot of its whole height at each width
    is kept in ARTIFACTS as ``shot``-WIDTH.png. The verdict at the first width."""
    pngs = sorted(p.name for p in page.parent.glob("*.png"))
    first = None
    for width in WIDTHS:
        v = probed(page, width)
        # every plot written beside the report is in the page, and the page shows each one
        assert len(v["images"]) == len(pngs) > 0, (v["images"], pngs)
        assert not _not_loaded(v), f"at {width} px these images did not load: {_not_loaded(v)}"
        assert v["width"] == width, v  # the window the page was laid out in
        assert v["scroll_width"] <= width and not v["wide"], (
            f"at {width} px the page is {v['scroll_width']} px wide; sticking out: {v['wide']}"
        )
        screenshot(page, ARTIFACTS / f"{shot}-{width}.png", width, v["height"])
        first = first or v
    return first


def test_kits_own_report_loads_every_image_and_fits_the_window(on_every_kind, tmp_path):
    assert main(["report", "--out", str(tmp_path / "rep")]) == 0
    v = _read_in_the_browser(tmp_path / "rep" / "report.html", "report")
    # the store holds what draws each of kit's seven plots (homology, svd-iters, perturb too)
    assert len(v["images"]) == 7, v["images"]


def test_a_pipeline_files_report_loads_every_image_and_fits_the_window(on_every_kind, tmp_path):
    sha = on_every_kind["proteins"][:12]
    assert main(["report", "--pipeline", sha, "--out", str(tmp_path / "rep")]) == 0
    v = _read_in_the_browser(tmp_path / "rep" / "report.html", "pipeline-report")
    assert len(v["images"]) == 2, v["images"]  # how far differences travel; the verdicts


def test_the_browser_names_an_image_that_did_not_load_and_an_element_too_wide(tmp_path):
    """The check can fail: a copy of a real report with one image's file missing, one image's
    bytes no PNG, and an element wider than the window."""
    out = write(report(budget_store(tmp_path), of_dataset("d" * 64, {})), tmp_path / "rep")
    page = Path(out["html"])
    text = page.read_text()
    sources = list(re.finditer(r'src="(data:image/png;base64,[^"]*)"', text))
    assert len(sources) == len(out["plots"]) >= 3
    first, second = sources[0], sources[1]
    broken = (
        text[: first.start(1)]
        + "no-such-plot.png"  # a file beside the page that is not there
        + text[first.end(1) : second.start(1)]
        # bytes that are no PNG (a PNG cut short still shows its top rows: the browser calls
        # it loaded, and so does this check)
        + "data:image/png;base64,"
        + base64.b64encode(b"no PNG").decode()
        + text[second.end(1) :]
    ).replace("</body>", '<div id="too-wide" style="width:3000px">a wide element</div></body>')
    page.write_text(broken)
    v = probed(page, 1280)
    missed = _not_loaded(v)
    assert len(missed) == 2 and len(v["images"]) == len(sources), v["images"]
    assert "no-such-plot.png" in missed[0] and "Flips per factor" in missed[0], missed
    assert "data:image/png;base64,bm8gUE5H" in missed[1], missed
    assert v["scroll_width"] > 3000
    assert [w["what"] for w in v["wide"]] == ['div#too-wide "a wide element"'], v["wide"]


def test_a_browser_past_its_timeout_is_killed_whole_and_leaves_no_profile(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where its profile is made
    page = tmp_path / "busy.html"
    page.write_text("<html><body><script>for(;;){}</script></body></html>")  # never loads
    with pytest.raises(BrowserTimeout) as e:
        run_chromium(["--dump-dom", page.as_uri()], timeout=3)
    assert gone(e.value.group, within=1), "a chromium process outlived the timeout"
    assert not list(tmp_path.glob("kit-chromium-*")), "its profile was left behind"
