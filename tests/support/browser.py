"""A real browser for the tests: Debian's headless chromium opens a page, bounded by a timeout,
and says which of its images did not load and what sticks out past the window's right edge."""

from __future__ import annotations

import html
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from places import ROOT

INSTALL = "apt-get install -y --no-install-recommends chromium"
# where a test keeps what a reviewer looks at (a screenshot): outside tmp, so that it is there
# after the run; build/ is gitignored
ARTIFACTS = Path(os.environ.get("KIT_TEST_ARTIFACTS") or ROOT / "build" / "test-artifacts")

# Run in the page once it has loaded: every <img> and every CSS background image is checked (a
# background image is loaded anew here: the page's own load event does not wait for it), then
# the elements that stick out past the window are named, the outermost of each, and the verdict
# is written into the page as JSON, where --dump-dom hands it back.
_PROBE = """<script>
addEventListener("load", async () => {
  const name = (e) => {
    const text = (e.textContent || "").replace(/\\s+/g, " ").trim().slice(0, 60);
    return e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") +
      (e.className && typeof e.className === "string" ? "." + e.className.split(" ").join(".") : "") +
      (e.alt ? " alt=" + JSON.stringify(e.alt) : "") + (text ? " " + JSON.stringify(text) : "");
  };
  const source = (s) => s.length > 60 ? s.slice(0, 60) + "..." : s;
  const images = [...document.images].map((img) => ({
    what: name(img), src: source(img.getAttribute("src") || ""),
    loaded: img.complete && img.naturalWidth > 0}));
  const urls = new Set();
  for (const e of document.querySelectorAll("*")) {
    for (const m of getComputedStyle(e).backgroundImage.matchAll(/url\\("?([^")]*)"?\\)/g)) {
      urls.add(m[1]);
    }
  }
  for (const url of urls) {
    const loaded = await new Promise((done) => {
      const img = new Image();
      img.onload = () => done(img.naturalWidth > 0);
      img.onerror = () => done(false);
      img.src = url;
    });
    images.push({what: "a CSS background image", src: source(url), loaded});
  }
  const root = document.documentElement, width = root.clientWidth;
  const sticks = (e) => e.getBoundingClientRect().right > width + 0.5;
  const wide = [];
  if (root.scrollWidth > width) {
    for (const e of document.body.querySelectorAll("*")) {
      if (sticks(e) && !sticks(e.parentElement)) {
        wide.push({what: name(e), right: Math.round(e.getBoundingClientRect().right)});
      }
    }
    // a word too long for its line sticks out of a box that does not: its text is named
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    for (let t = walk.nextNode(); t; t = walk.nextNode()) {
      range.selectNodeContents(t);
      const right = range.getBoundingClientRect().right, e = t.parentElement;
      if (right > width + 0.5 && !sticks(e)) {
        wide.push({what: "text in " + name(e), right: Math.round(right)});
      }
    }
  }
  const out = document.createElement("pre");
  out.id = "kit-browser-verdict";
  out.textContent = JSON.stringify({images, wide, width, scroll_width: root.scrollWidth,
                                    height: root.scrollHeight});
  document.body.appendChild(out);
});
</script>"""
_VERDICT = '<pre id="kit-browser-verdict">'


class BrowserTimeout(Exception):
    """chromium ran past its timeout; ``group`` is its process group, killed."""

    def __init__(self, seconds: float, group: int):
        super().__init__(f"chromium ran past {seconds} s and was killed (process group {group})")
        self.group = group


def chromium() -> str:
    """The browser's path. A test that needs it fails without it, never skips: CI installs it
    (.ci/run), and a skipped browser test would say nothing about the report."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail(
        f"no chromium on PATH: the browser tests need it ({INSTALL}; .ci/run installs it)",
        pytrace=False,
    )


def _members(group: int) -> list:
    """The live processes of ``group``: a zombie is dead, though where no init reaps it (a
    container's) it stays listed and kill(0) still finds it."""
    proc = Path("/proc")
    if not proc.is_dir():  # no /proc (macOS): whether kill finds any
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return []
        return [group]
    live = []
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after "pid (command)"
        except (OSError, IndexError):
            continue  # it ended while being read
        if fields[0] != "Z" and int(fields[2]) == group:
            live.append(int(stat.parent.name))
    return live


def gone(group: int, within: float = 10) -> bool:
    """Whether no live process is left in ``group`` (a killed one takes a moment to die)."""
    end = time.monotonic() + within
    while _members(group):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def run_chromium(args: list, timeout: float = 60) -> str:
    """Headless chromium with ``args`` after its own flags, in a profile of its own that is
    removed afterwards; what it printed. chromium starts renderer, GPU and zygote processes:
    past ``timeout`` seconds its whole process group is killed (BrowserTimeout), and after a
    normal exit any of them left behind is killed too."""
    browser = chromium()
    profile = tempfile.mkdtemp(prefix="kit-chromium-")
    argv = [
        browser,
        "--headless",
        "--no-sandbox",  # as root (CI) chromium refuses its sandbox
        "--disable-gpu",
        "--hide-scrollbars",  # the page's width is the window's: a scrollbar takes none
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        *args,
    ]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, _err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise BrowserTimeout(timeout, proc.pid) from None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        gone(proc.pid)
        shutil.rmtree(profile, ignore_errors=True)
    return out


def probed(page: Path, width: int = 1280, height: int = 900, timeout: float = 60) -> dict:
    """What chromium finds in ``page`` at a window ``width`` wide: {"images": [{"what", "src",
    "loaded"}], "wide": [{"what", "right"}] (the outermost elements past the right edge, when the
    page scrolls sideways), "width", "scroll_width", "height"}. The page is read from a copy of
    its folder with the probe added, so a relative image source still finds its file."""
    with tempfile.TemporaryDirectory(prefix="kit-probe-") as tmp:
        folder = Path(tmp) / "page"
        shutil.copytree(page.parent, folder)
        text = page.read_text()
        at = text.rfind("</body>")
        at = len(text) if at < 0 else at
        copy = folder / page.name
        copy.write_text(text[:at] + _PROBE + text[at:])
        dom = run_chromium(
            [
                f"--window-size={width},{height}",
                "--virtual-time-budget=10000",  # the load event and the probe's own loads
                "--dump-dom",
                copy.as_uri(),
            ],
            timeout,
        )
    start = dom.find(_VERDICT)
    if start < 0:
        raise AssertionError(
            f"the probe wrote no verdict into {page}: chromium printed\n{dom[-2000:]}"
        )
    start += len(_VERDICT)
    return json.loads(html.unescape(dom[start : dom.index("</pre>", start)]))


def screenshot(page: Path, png: Path, width: int, height: int, timeout: float = 60) -> Path:
    """A PNG of ``page`` at a window ``width`` x ``height`` (the page's whole height, from probed,
    shows all of it) written to ``png``."""
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)  # a PNG left by an earlier run would pass for this one's
    run_chromium(
        [
            f"--window-size={width},{height}",
            "--virtual-time-budget=10000",
            f"--screenshot={png}",
            page.resolve().as_uri(),
        ],
        timeout,
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"chromium wrote no PNG at {png}"
    return png
