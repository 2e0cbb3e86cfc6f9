"""Output without a terminal: tables fit COLUMNS or 80 columns, `--wide` prints them whole,
`--help` fits too, and `kit budget --csv` holds one value a cell (issue 26, item 6)."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from places import PIPELINES, ROOT
from stored import every_kind_store

from kit.cli import main
from kit.views.fit import HINT

KIT = str(Path(sys.executable).with_name("kit"))


def kit(home, *args, columns=None):
    """`kit ARGS` in a real process, its stdout a pipe (no terminal), COLUMNS as given."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env.update(KIT_HOME=str(home), PYTHONPATH=str(ROOT))
    if columns:
        env["COLUMNS"] = str(columns)
    proc = subprocess.run(
        [KIT, *args], capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def widest(text):
    return max(len(line) for line in text.splitlines())


@pytest.fixture
def store(tmp_path, kit_home):
    every_kind_store(tmp_path, home=kit_home)
    return kit_home


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [["budget"], ["advise"], ["verdicts"], ["runs"], ["budget", "--factor", "seed"]],
    ids=" ".join,
)
def test_piped_tables_fit_80_columns_or_COLUMNS_and_wide_unwraps(store, argv):
    piped = kit(store, *argv)
    assert widest(piped) <= 80, [ln for ln in piped.splitlines() if len(ln) > 80][:2]
    # budget's titles were printed whole (68 columns at COLUMNS=60, #43): fitted as paragraphs
    narrow = kit(store, *argv, columns=60)
    assert widest(narrow) <= 60, [ln for ln in narrow.splitlines() if len(ln) > 60][:2]
    whole = kit(store, *argv, "--wide")
    # unwrapped: no table is split or wrapped, so every row of it is on one line
    assert widest(whole) > 80 and len(whole.splitlines()) < len(piped.splitlines())


@pytest.mark.slow
def test_a_header_wraps_only_when_its_table_has_no_room_for_it(store):
    """Piped, kit runs was 75 wide at 80 columns yet wrapped "wall s" onto two lines (#43): the
    room its wrapped columns leave goes to a header wrapped at its longest word."""
    head = kit(store, "runs").splitlines()[0]
    assert head.split() == ["run", "dataset", "stack", "setting", "wall", "s"]
    assert head.endswith("wall s") and len(head) <= 80


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv", [["run", "--help"], ["budget", "--help"], ["data", "import", "--help"]], ids=" ".join
)
def test_help_fits_80_columns_piped_and_100_at_most(tmp_path, argv):
    assert widest(kit(tmp_path, *argv)) <= 80
    assert 80 < widest(kit(tmp_path, *argv, columns=200)) <= 100 or argv != ["run", "--help"]


@pytest.mark.slow
def test_budget_csv_holds_one_value_a_cell(store):
    """A list field is one cell, its items joined by '; ' (#56: spread over a column each, a
    budget was 271 columns wide); every other cell one value."""
    import re

    df = pd.read_csv(io.StringIO(kit(store, "budget", "--csv")), index_col="row")
    assert "components_median" in df.columns
    assert not [c for c in df.columns if re.search(r"_\d+$", c)]
    cells = df["components_median"].dropna().astype(str)
    assert len(cells) and all(len(c.split("; ")) > 1 for c in cells)
    assert all(float(x) == float(x) for c in cells for x in c.split("; "))


# --- every reading command on the every-kind store, piped: 80 columns, no word broken -------

SEPARATORS = ",;:=/_-+|&"  # where kit.views.fit may end a line inside a word


def _boundaries(word: str) -> set:
    """Where ``word`` may be broken: its ends, and after a separator a letter, a digit or an
    opening bracket follows (kit.views.fit's rule, written again here to test it)."""
    return {0, len(word)} | {
        i
        for i in range(1, len(word))
        if word[i - 1] in SEPARATORS and (word[i].isalnum() or word[i] in "([~.")
    }


def broken_words(fitted: str, whole: str) -> list:
    """The tokens of ``fitted`` that are neither a whole token of ``whole`` nor a piece of one
    between two of its boundaries (a word cut mid-word: "Sandybri" / "dge"); a piece shortened
    with an ellipsis must start at a boundary."""
    words = set(whole.split())
    bad = []
    for token in sorted(set(fitted.split()) - words):
        if set(token) <= {"-"}:  # a table's rule, as wide as its column
            continue
        cut = token.endswith("…")
        stem = token[:-1] if cut else token
        if not any(
            s in _boundaries(w) and (cut or s + len(stem) in _boundaries(w))
            for w in words
            for s in _starts(w, stem)
        ):
            bad.append(token)
    return bad


def _starts(word: str, part: str) -> list:
    return [i for i in range(len(word) - len(part) + 1) if word.startswith(part, i)] if part else []


def test_the_word_check_finds_a_word_cut_in_two():
    whole = "1t seed 0 OPENBLAS_CORETYPE=Sandybridge"
    assert broken_words("1t seed 0 OPENBLAS_\nCORETYPE=\nSandybridge", whole) == []
    assert broken_words("1t seed 0 OPENBLAS_\nCORETYPE=Sandybri\ndge", whole) == [
        "CORETYPE=Sandybri",
        "dge",
    ]
    assert broken_words("OPENBLAS_CORETYPE=Sandyb…", whole) == []
    assert broken_words("ENBLAS_CORETYPE", whole) == ["ENBLAS_CORETYPE"]
    assert broken_words("----  ----\n1t", "------  ------\n1t seed") == []


def _other_readers(held: dict) -> list:
    """The reading commands tests/support/outputs.py leaves out of its saved copies, which print
    tables too: a pipeline's budget and tolerances, the stacks and cluster settings, a
    dataset's facts and homology, the store check, and an explained factor."""
    sha = held["pipeline"][:12]
    return [
        ("budget", "--pipeline", sha),
        ("tolerances",),
        ("tolerances", "--pipeline", sha),
        ("budget", "--pipeline", held["every_output"][:12]),
        ("stacks", "doctor"),
        ("cluster", "show"),
        ("data", "info"),
        ("data", "homology"),
        ("store", "check"),
        ("explain", "precision"),
    ]


@pytest.fixture(scope="module")
def piped_outputs(every_kind):
    """{command: (what it prints piped, what it prints with --wide)} of every reading command
    on the every-kind store, run in this process (its output is no terminal: 80 columns); the
    doctor's text from one measurement, at 80 columns and whole."""
    from outputs import call, readers

    from kit.views.fit import fitted, unwrapped
    from kit.views.health import doctor_text

    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_HOME", str(every_kind["home"]))
        mp.setenv("KIT_STACKS_DIR", str(every_kind["catalogue"]))
        mp.delenv("COLUMNS", raising=False)
        for argv in [a for a in readers() if not {"--json", "--csv"} & set(a)] + _other_readers(
            every_kind
        ):
            (code, fitted_text, err), (wcode, whole, _) = call(*argv), call(*argv, "--wide")
            # a refusal (homology of a pipeline without protein ids) is said on stderr
            assert code == wcode and (code == 0 or not fitted_text), (argv, err)
            out[" ".join(argv)] = (fitted_text, whole)
        code, rep, err = call("doctor", "--json")
        assert code == 0, err
        rep = json.loads(rep)
        with fitted(80):
            at_80 = doctor_text(rep)
        unwrapped()
        try:
            out["doctor"] = (at_80, doctor_text(rep))
        finally:
            unwrapped(False)
    return out


@pytest.mark.slow
def test_every_piped_reader_fits_80_columns(piped_outputs):
    """The newcomer's `kit data homology` printed 82 columns, `kit verdicts --pipeline` 81."""
    wide = {
        cmd: [ln for ln in text.splitlines() if len(ln) > 80]
        for cmd, (text, _) in piped_outputs.items()
    }
    wide = {cmd: lines for cmd, lines in wide.items() if lines}
    assert not wide, wide
    assert len(piped_outputs) > 60  # every reader, each factor's and each pipeline's


@pytest.mark.slow
def test_no_piped_reader_breaks_a_word(piped_outputs):
    """`kit runs | cat` broke "OPENBLAS_" / "CORETYPE=Sandybri" / "dge": a line may end only
    between words or after a separator inside one, and every token printed piped is a whole
    token of the --wide output or such a piece of one."""
    broken = {
        cmd: broken_words(text.replace(HINT, ""), whole)
        for cmd, (text, whole) in piped_outputs.items()
    }
    broken = {cmd: words for cmd, words in broken.items() if words}
    assert not broken, broken
    runs = piped_outputs["runs"][0]
    assert "CORETYPE=Sandybridge" in runs or "Sandybridge" in runs.split()


@pytest.mark.slow
def test_wide_prints_every_cell_whole(piped_outputs):
    for cmd, (text, whole) in piped_outputs.items():
        assert "…" not in whole and HINT not in whole, cmd
        # a table whose cells wrapped piped holds each row on one line with --wide
        assert len(whole.splitlines()) <= len(text.splitlines()), cmd


def test_a_cell_too_wide_is_shortened_said_once_and_whole_with_wide(kit_home, monkeypatch, capsys):
    """A piece of a word wider than its column (a sha256 at 40 columns) is shortened with an
    ellipsis, the command says once how to see it whole, and --wide prints it whole."""
    monkeypatch.setenv("COLUMNS", "40")
    assert main(["data", "info", "synthetic", "--n", "120"]) == 0
    text = capsys.readouterr().out
    assert max(len(ln) for ln in text.splitlines()) <= 40
    said = " ".join(text.split())
    assert said.count(HINT) == 1 and said.endswith(HINT)
    sha = next(ln.split()[1] for ln in text.splitlines() if ln.startswith("sha256"))
    assert sha.endswith("…") and len(sha) < 64
    assert main(["data", "info", "synthetic", "--n", "120", "--wide"]) == 0
    whole = capsys.readouterr().out
    assert HINT not in whole and "…" not in whole
    full = next(ln.split()[1] for ln in whole.splitlines() if ln.startswith("sha256"))
    assert len(full) == 64 and full.startswith(sha[:-1])
    monkeypatch.setenv("COLUMNS", "80")  # room for it: nothing shortened, nothing said
    assert main(["data", "info", "synthetic", "--n", "120"]) == 0
    assert HINT not in capsys.readouterr().out


LONG = "supercalifragilisticexpialidocious_protein_embedding_pipeline_version_two.py"


@pytest.mark.slow
def test_prose_naming_a_long_pipeline_wraps_at_80_between_words(tmp_path, kit_home):
    """A pipeline file of a long name: the "pipeline NAME (hash)" headings of runs, budget,
    advise and the run's summary (100 to 119 columns), the one-model line of budget and
    verdicts (131) and tolerances' "no tolerances" line (144 with base.py) were printed whole,
    piped (#43); every prose line goes through kit.views.fit.para."""
    src = (PIPELINES / "long_names.py").read_text()
    path = tmp_path / LONG
    path.write_text(src)
    p = str(path)
    made = {f: kit(kit_home, "run", "--pipeline", p, "--factor", f) for f in ("repeat", "seed")}
    argvs = [
        ("runs",),
        ("budget",),
        ("advise",),
        ("verdicts",),
        ("tolerances",),
        ("budget", "--factor", "seed"),
    ]
    got = {
        " ".join(a): (
            kit(kit_home, *a, "--pipeline", p),
            kit(kit_home, *a, "--pipeline", p, "--wide"),
        )
        for a in argvs
    }
    got.update({f"run {f}": (text, text) for f, text in made.items()})
    wide = {cmd: [ln for ln in text.splitlines() if len(ln) > 80] for cmd, (text, _) in got.items()}
    assert not any(wide.values()), wide
    broken = {
        cmd: broken_words(text, whole)
        for cmd, (text, whole) in got.items()
        if not cmd.startswith("run ")
    }
    assert not any(broken.values()), broken
    assert any(
        f"pipeline {LONG}" in " ".join(t.split()) or LONG in t.split() for t, _ in got.values()
    )
