"""What every reading command prints on a store, as {name: text}: the outputs a refactor keeps.

``dump()`` runs each reader (text, --json, --csv, one budget per factor, each verdict set,
the report's markdown) against the current KIT_HOME and returns what it printed.
``dump(stable=True)`` also masks what differs between two builds of the same store (wall and
CPU times, dates, the order of runs stored in the same second):
tests/scenarios/test_reading_every_output.py compares that with the copy saved under
tests/support/saved_outputs/. ``python tests/support/outputs.py FOLDER [--raw]`` writes a dump into
FOLDER, to compare two trees on one store byte for byte.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import tempfile
from pathlib import Path

from places import ROOT

from kit.cli import main

COLUMNS = "100"  # one fixed width, so the tables wrap the same wherever the test runs


def call(*argv) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# what two builds of one store measure differently: times, when they were taken, and how many
# runs a warm worker had made before (which worker takes which run is the scheduler's choice)
_TIME_KEYS = {
    "created",
    "started",
    "finished",
    "wall_s",
    "cpu_s",
    "svd_seconds",
    "runs_before",
    "svd_seconds_by_level",
}
_TIME_TEXT = (
    (re.compile(r"[\d.]+x the SVD time \([\d.]+ s -> [\d.]+ s\)"), "<x> the SVD time (<s> -> <s>)"),
    (re.compile(r"took [\d.]+ s against [\d.]+ s"), "took <s> against <s>"),
    (re.compile(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d UTC"), "Generated <date> UTC"),
)


# what a container image's id moves with: Debian publishes a point release or a security fix,
# and the base, the image and so every run made in it get new ids (the same image in every
# build of one day): ids, sizes and Debian's package revisions are masked, and the ids of runs
# made in an image are named for what they are (``_image_runs``)
_IMAGE_TEXT = (
    (re.compile(r"sha256:[0-9a-f]{12,64}"), "sha256:<image>"),
    (re.compile(r"\b(\d+\.\d+)-[0-9][\w.]*\+deb\d+u\d+\b"), r"\1-<debian revision>"),
    (re.compile(r"\d[\d,]* MB on Debian"), "<size> MB on Debian"),
    (re.compile(r'"size": \d{6,}'), '"size": "<size>"'),
)
_IMAGE_RUNS: dict = {}  # {run id: its name in the dump}, for the runs made in an image


def _image_runs() -> dict:
    """{run id: "<image run N>"} of the store's runs made in container stacks, numbered by
    what each run is (its spec without the image's id), the same in every build."""
    runs = json.loads(call("runs", "--json")[1])
    made = [r for r in runs if "@" in r["spec"]["stack"]]

    def key(r):
        return json.dumps({k: v for k, v in r["spec"].items() if k != "stack_id"}, sort_keys=True)

    return {r["id"]: f"<image run {i}>" for i, r in enumerate(sorted(made, key=key))}


def _unimaged(text: str) -> str:
    """``text`` with what moves with Debian's mirror masked (_IMAGE_TEXT, _IMAGE_RUNS)."""
    for ident, name in _IMAGE_RUNS.items():
        text = text.replace(ident, name).replace(ident[:12], name)
    for pattern, mask in _IMAGE_TEXT:
        text = pattern.sub(mask, text)
    return text


# the store's lab pipeline's deliberately unseeded output (tests/support/pipelines/lab.py): its bits
# are a fresh draw in every build of the store
_UNSEEDED = ("jitter",)


# what the host says of itself that changes under the same CPU and BLAS: the kernel's build
# (platform.platform(): a VM's kernel moved from fc-v1252 to fc-v1300 between two days)
_HOST_KEYS = {"platform"}


def _masked(value):
    if isinstance(value, dict):
        out = {
            k: "<t>" if k in _TIME_KEYS else "<host>" if k in _HOST_KEYS else _masked(v)
            for k, v in value.items()
        }
        for name in _UNSEEDED:  # a run's stage records: {"stages": {name: {"sha256", ...}}}
            if isinstance(out.get(name), dict) and "sha256" in out[name]:
                out[name] = dict(out[name], sha256="<unseeded draw>")
        return out
    if isinstance(value, list):
        items = [_masked(v) for v in value]
        if items and all(isinstance(v, dict) and "id" in v for v in items):
            items.sort(key=lambda v: v["id"])  # runs stored in one second: any order
        return items
    if isinstance(value, str):
        for pattern, mask in _TIME_TEXT:
            value = pattern.sub(mask, value)
    return value


def _sorted_rows(text: str, after: str, column_masked: bool) -> str:
    """The rows of the table whose header follows ``after``, sorted (and last column masked)."""
    lines = text.split("\n")
    try:
        start = next(i for i, ln in enumerate(lines) if ln.startswith(after)) + 2
    except StopIteration:
        return text
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    body = [re.sub(r"\S+\s*$", "<s>", ln) if column_masked else ln for ln in lines[start:end]]
    out = lines[:start] + sorted(body) + lines[end:]
    if column_masked:  # the masked times' width moved the columns (6 to 7 for 100 s): not kept
        out = [re.sub(r"-{2,}", "--", re.sub(r" {2,}", "  ", ln)) for ln in out]
    return "\n".join(out)


def _stable(name: str, out: str) -> str:
    if name.endswith("--json") and out.strip():  # a refusal prints its line to stderr
        return json.dumps(_masked(json.loads(out)), indent=1) + "\n"
    if name.startswith("runs"):
        return _sorted_rows(out, "run ", column_masked=True)
    if name == "report.md":
        out = _sorted_rows(out, "| stack ", column_masked=False)
    return _masked(out)


def _run(*argv, stable=False) -> str:
    if stable and argv[0] == "runs":
        # its rows wrap where the times' width puts its columns, so in a build of other
        # times rows wrapped elsewhere: whole rows (test_piped checks `kit runs` at 80)
        os.environ["COLUMNS"], width = "1000", os.environ.get("COLUMNS")
        try:
            code, out, err = call(*argv)
        finally:
            os.environ["COLUMNS"] = width or COLUMNS
    else:
        code, out, err = call(*argv)
    if stable:
        out = _stable(" ".join(argv), _unimaged(out))
    return f"$ kit {' '.join(argv)}\n[exit {code}]\n{out}--- stderr\n{err}"


def _factors() -> list:
    return [r["factor"] for r in json.loads(call("budget", "--json")[1])["rows"]]


def _pipelines() -> list:
    """The lab pipelines whose runs the store holds (kit run --pipeline)."""
    runs = json.loads(call("runs", "--json")[1])
    return sorted({r["spec"]["pipeline"] for r in runs if r["spec"].get("pipeline")})


def _sets() -> list:
    return sorted(json.loads(call("verdicts", "--json")[1]))


def readers() -> list:
    """The argv of every reading command on the store KIT_HOME names: text, --json, --csv,
    one budget per factor, each verdict set, and a lab pipeline's readers (its budget is left
    out: its unseeded output's difference is a fresh draw in every build)."""
    out = [
        ("runs",),
        ("runs", "--json"),
        ("budget",),
        ("budget", "--json"),
        ("budget", "--csv"),
        ("verdicts",),
        ("verdicts", "--json"),
        ("amplify",),
        ("amplify", "--json"),
        ("advise",),
        ("advise", "--json"),
        ("stacks",),
        ("data", "list"),
        ("homology",),
        ("homology", "--json"),
    ]
    for f in _factors():
        out += [
            ("budget", "--factor", f),
            ("budget", "--factor", f, "--json"),
            ("runs", "--factor", f),
        ]
    out += [("verdicts", "--set", s) for s in _sets()]
    for sha in _pipelines():
        for argv in (
            ("verdicts",),
            ("verdicts", "--json"),
            ("advise",),
            ("advise", "--json"),
            ("runs",),
            ("runs", "--json"),
            ("homology",),
            ("homology", "--json"),
        ):
            out.append((argv[0], "--pipeline", sha[:12]) + argv[1:])
    return out


def dump(stable: bool = False) -> dict:
    """{name: output} of every reading command on the store KIT_HOME names."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = COLUMNS
    try:
        _IMAGE_RUNS.clear()
        if stable:
            _IMAGE_RUNS.update(_image_runs())
        out = {" ".join(argv): _run(*argv, stable=stable) for argv in readers()}
        with tempfile.TemporaryDirectory() as tmp:
            _run("report", "--out", tmp)
            md = (Path(tmp) / "report.md").read_text()
            out["report.md"] = _stable("report.md", _unimaged(md)) if stable else md
            out["report figures"] = "\n".join(sorted(p.name for p in Path(tmp).iterdir()))
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    # the folders of this process: its store, its interpreter's environment, the checkout
    places = [
        (os.environ.get("KIT_HOME", ""), "<KIT_HOME>"),
        # the every-kind store's other homes beside it (the lab's stacks, in its runs' manifests)
        (str(Path(os.environ["KIT_HOME"]).parent) if os.environ.get("KIT_HOME") else "", "<HOMES>"),
        (sys.prefix, "<PREFIX>"),
        (str(ROOT), "<CHECKOUT>"),
    ]
    for path, mask in places:
        if path:
            out = {k: v.replace(path, mask) for k, v in out.items()}
    return out


def file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + ".txt"


def write(folder: Path, outputs: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in outputs.items():
        (folder / file_name(name)).write_text(text)


if __name__ == "__main__":
    write(Path(sys.argv[1]), dump(stable="--raw" not in sys.argv[2:]))
