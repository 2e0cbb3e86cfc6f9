"""The store trusts none of its own rows and files (issue 37 item 6): every damaged kind is one line
in every reader, named by `kit store check`, dropped by `--repair` with what depended on it,
and a second check is clean; an index written by an earlier kit opens, migrated, and reads the
same; one written by a later kit is refused untouched.

Stores are real (tests/support/stored.py: every kind of run, stored by put_run), damaged as a disk
or a hand would damage them: rows changed with sqlite3, files replaced. Commands run as processes,
as a user runs them, each under a timeout (a FIFO read blocked every reader before).
"""

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from places import FIXTURES, ROOT
from stored import every_kind_store, spec

FIXTURE = FIXTURES / "store_v0"
READERS = (("runs",), ("budget",), ("verdicts",), ("advise",))


def kit(home, *args, timeout=180):
    # the width the fixture's outputs were printed at (to a file, no COLUMNS)
    env = dict(os.environ, KIT_HOME=str(home), PYTHONPATH=str(ROOT), COLUMNS="80")
    try:
        return subprocess.run(
            [sys.executable, "-m", "kit", *args],
            env=env,
            text=True,
            capture_output=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`kit {' '.join(args)}` did not end within {timeout} s (a blocked read?)")


def one_line(r) -> str:
    """The one error line of a failed command: exit 1, no traceback, no internal error."""
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("kit: ")]
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    assert r.returncode == 1 and len(errors) == 1, (r.returncode, r.stdout, r.stderr)
    return errors[0]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A store of every kind of run (seed, threads, repeat, perturbed and torch runs, whose
    input is the seed-0 run), closed so that its index is whole on disk."""
    root = tmp_path_factory.mktemp("trust")
    st = every_kind_store(root, home=root / "home")
    st.close()
    return root / "home"


@pytest.fixture
def home(made, tmp_path):
    return Path(shutil.copytree(made, tmp_path / "home"))


S0 = spec().run_id  # the seed-0 run: in every seed pair, the input of the perturbed and torch runs


def _row(home, run=S0):
    con = sqlite3.connect(home / "store.sqlite")
    con.text_factory = bytes
    try:
        return con.execute("SELECT spec, manifest FROM runs WHERE id=?", (run,)).fetchone()
    finally:
        con.close()


def _set(home, column, raw: bytes, run=S0):
    """Write ``raw`` into a run's row as its text, byte for byte (invalid UTF-8 included)."""
    con = sqlite3.connect(home / "store.sqlite")
    try:
        with con:
            n = con.execute(
                f"UPDATE runs SET {column}=CAST(? AS TEXT) WHERE id=?", (raw, run)
            ).rowcount
        assert n == 1
    finally:
        con.close()


def _runs(home) -> set:
    con = sqlite3.connect(home / "store.sqlite")
    try:
        return {i for (i,) in con.execute("SELECT id FROM runs")}
    finally:
        con.close()


def _repaired(home, named: str):
    """`store check` names the damage (exit 1); `--repair` says what it dropped (exit 0); a
    second check is clean; every reader then works. The check's output, repair's output."""
    check = kit(home, "store", "check")
    assert check.returncode == 1 and named in check.stdout, check.stdout + check.stderr
    assert "Traceback" not in check.stderr, check.stderr
    fix = kit(home, "store", "check", "--repair")
    assert fix.returncode == 0 and "repaired" in fix.stdout, fix.stdout + fix.stderr
    again = kit(home, "store", "check")
    assert again.returncode == 0 and "every array" in again.stdout, again.stdout + again.stderr
    for args in READERS:
        r = kit(home, *args)
        assert r.returncode == 0, (args, r.stderr)
    return check.stdout, fix.stdout


# -- a run's rows ------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    "old,new", [(b'"threads":1', b'"threads":3'), (b'["kmeans",0]', b'["kmeans",7]')]
)
def test_one_changed_byte_of_a_spec_is_a_damaged_run_not_another_run(home, old, new):
    """Before, the run was relabelled (3 threads, seed 7) in every reader, and the check was
    clean, although a run's id is the sha256 of its spec."""
    spec_text = _row(home)[0]
    assert old in spec_text
    _set(home, "spec", spec_text.replace(old, new, 1))
    for args in READERS:
        line = one_line(kit(home, *args))
        assert f"run {S0[:12]}" in line and "does not hash to its id" in line, (args, line)
        assert "kit store check --repair" in line, line
    trained = {
        i for i in _runs(home) if i != S0 and json.loads(_row(home, i)[0]).get("input") == S0
    }
    assert len(trained) == 4  # the perturbed run and three torch runs
    check, fix = _repaired(home, f"damaged run {S0[:12]}")
    assert "does not hash to its id" in check
    # what depended on it: the runs trained on its embedding, its pairs and theirs (every seed,
    # threads, repeat and perturb pair has it; the torch pairs are of runs trained on it)
    assert f"{1 + len(trained)} run(s)" in check and "7 pair(s)" in check, check
    assert _runs(home).isdisjoint(trained | {S0})
    assert len(_runs(home)) == 4  # seeds 1 and 2, threads 2, the repeat: kept


def _garbled(text: bytes) -> bytes:
    """A byte that is not UTF-8 in the middle of a text, as a damaged page leaves it."""
    i = len(text) // 2
    return text[:i] + b"\xff\xfe" + text[i + 2 :]


@pytest.mark.slow
@pytest.mark.parametrize(
    "column,damage,why",
    [
        ("spec", lambda t: t[: len(t) - 7], "spec: not JSON"),
        ("manifest", lambda t: t[: len(t) // 2], "manifest: not JSON"),
        ("manifest", lambda t: b"{}", "manifest: Object missing required field"),
        ("spec", _garbled, "not valid UTF-8"),
        ("manifest", _garbled, "not valid UTF-8"),
    ],
    ids=["truncated spec", "truncated manifest", "emptied manifest", "utf8 spec", "utf8 manifest"],
)
def test_a_damaged_row_is_one_line_and_repaired(home, column, damage, why):
    """Before: an internal error in every reader and in the repair (JSONDecodeError, "Could not
    decode to UTF-8", KeyError: 'env' in `kit budget`)."""
    raw = _row(home)[0 if column == "spec" else 1]
    _set(home, column, damage(raw))
    for args in (("runs",), ("budget",)):
        line = one_line(kit(home, *args))
        assert f"run {S0[:12]}" in line and why in line and "--repair" in line, (args, line)
    check, _ = _repaired(home, f"damaged run {S0[:12]}")
    assert why in check
    assert S0 not in _runs(home)


# -- array files -------------------------------------------------------------------------------
def _blob(home, run=S0, stage="svd_rand") -> Path:
    con = sqlite3.connect(home / "store.sqlite")
    try:
        (b,) = con.execute(
            "SELECT blob FROM stages WHERE run=? AND stage=?", (run, stage)
        ).fetchone()
    finally:
        con.close()
    return home / "arrays" / b[:2] / f"{b}.npy"


@pytest.mark.slow
def test_a_folder_in_place_of_an_array_is_moved_aside_not_a_crash(home):
    """Before: readers said damaged, and the repair crashed (IsADirectoryError from unlink)."""
    f = _blob(home)
    f.unlink()
    f.mkdir()
    (f / "notes.txt").write_text("kept")
    line = one_line(kit(home, "budget"))
    assert "not a regular file but a folder" in line and "--repair" in line, line
    check, fix = _repaired(home, "not a regular file but a folder")
    assert not f.exists()
    kept = list((home / "damaged").glob(f"??/{f.name}/notes.txt"))
    assert [p.read_text() for p in kept] == ["kept"]  # a folder may hold anything: never deleted


@pytest.mark.slow
def test_a_fifo_in_place_of_an_array_is_never_opened(home):
    """Before: `kit budget` and `kit store check` blocked forever opening it for reading."""
    f = _blob(home)
    f.unlink()
    os.mkfifo(f)
    line = one_line(kit(home, "budget", timeout=120))
    assert "not a regular file but a FIFO" in line, line
    _repaired(home, "not a regular file but a FIFO")
    assert not os.path.lexists(f)


@pytest.mark.slow
def test_a_file_where_the_arrays_folder_should_be(home):
    """Before: FileExistsError, an internal error in every reader and in the repair."""
    shutil.rmtree(home / "arrays")
    (home / "arrays").write_text("not a folder")
    for args in (("runs",), ("store", "check")):
        line = one_line(kit(home, *args))
        assert "arrays is not a folder" in line and "--repair" in line, (args, line)
    fix = kit(home, "store", "check", "--repair")
    assert fix.returncode == 0 and "moved to" in fix.stdout, fix.stdout + fix.stderr
    aside = list(home.glob("arrays.damaged-*"))
    assert [p.read_text() for p in aside] == ["not a folder"]  # kept
    assert (home / "arrays").is_dir()
    again = kit(home, "store", "check")
    assert again.returncode == 0, again.stdout + again.stderr
    assert kit(home, "runs").returncode == 0


@pytest.mark.slow
def test_an_emptied_index_beside_arrays_is_not_a_clean_store(home):
    """Before: SQLite took the empty file for a new index, and `kit store check` said every
    array was what its runs recorded (there were none) while the arrays lay beside it."""
    arrays = sorted(p.name for p in (home / "arrays").glob("??/*.npy"))
    old = time.time() - 7200  # written before the index was emptied
    for p in (home / "arrays").glob("??/*.npy"):
        os.utime(p, (old, old))
    (home / "store.sqlite").write_bytes(b"")
    for args in (("runs",), ("budget",), ("store", "check")):
        line = one_line(kit(home, *args))
        assert "store.sqlite is empty (0 bytes)" in line and f"{len(arrays)} array file" in line
    fix = kit(home, "store", "check", "--repair")
    assert fix.returncode == 0 and "moved to" in fix.stdout, fix.stdout + fix.stderr
    # the index is rebuilt from the runs' records (#54): every run is back and its arrays are
    # where they were, none set aside or deleted
    assert not list((home / "unindexed").glob("??/*.npy"))
    assert sorted(p.name for p in (home / "arrays").glob("??/*.npy")) == arrays
    again = kit(home, "store", "check")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "no runs stored" not in kit(home, "runs").stdout


# -- the schema version ------------------------------------------------------------------------
def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_an_index_written_by_a_newer_kit_is_refused_untouched(home):
    con = sqlite3.connect(home / "store.sqlite")
    con.execute("PRAGMA user_version = 99")
    con.close()
    before = _sha(home / "store.sqlite")
    for args in (("runs",), ("store", "check", "--repair"), ("run", "--factor", "repeat")):
        line = one_line(kit(home, *args))
        assert "written by a newer kit (schema version 99" in line, (args, line)
    assert _sha(home / "store.sqlite") == before


@pytest.mark.slow
def test_a_store_written_by_59b4f73_opens_migrated_and_reads_the_same(tmp_path):
    """The fixture is a store `kit run --factor repeat --n 120` made with the code of 59b4f73,
    and what that code's `kit runs`, `runs --json` and `budget` printed
    (tests/support/fixtures/store_v0; the budget in today's layout, its tokens the same: HOW.md)."""
    from kit.runs.store.schema import CURRENT

    home = tmp_path / "home"
    home.mkdir()
    with tarfile.open(FIXTURE / "store.tgz") as t:
        t.extractall(home, filter="data")
    con = sqlite3.connect(home / "store.sqlite")
    assert con.execute("PRAGMA user_version").fetchone()[0] == 0
    con.close()
    for args, saved in (
        (("runs",), "runs.txt"),
        (("runs", "--json"), "runs.json"),
        (("budget",), "budget.txt"),
    ):
        r = kit(home, *args)
        assert r.returncode == 0, r.stderr
        assert r.stdout == (FIXTURE / saved).read_text(), args
    con = sqlite3.connect(home / "store.sqlite")
    try:
        assert con.execute("PRAGMA user_version").fetchone()[0] == CURRENT
        indexes = {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert {"runs_by_dataset", "pairs_by_a", "pairs_by_b"} <= indexes
    finally:
        con.close()
    check = kit(home, "store", "check")
    assert check.returncode == 0 and "every array" in check.stdout, check.stdout + check.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "summary",
    [b'{"sha256": "d', b"[]", b'{"name": "swissprot"}', b'{"sha256": "DS", "name": "x\\u001b[2J"}'],
)
def test_a_damaged_record_of_a_dataset_is_one_line_and_repaired(home, summary):
    """A reviewer's: a truncated or non-object summary gave an internal error in `kit runs` and
    `kit budget`, and `store check` called the store clean."""
    con = sqlite3.connect(home / "store.sqlite")
    sha = spec().dataset
    with con:  # the runs' dataset, recorded as a run records it, then damaged
        con.execute(
            "INSERT OR REPLACE INTO datasets (sha256, name, summary) VALUES (?, ?, ?)",
            (sha, "tiny", summary.decode().replace("DS", sha)),
        )
    con.close()
    for args in (("runs",), ("budget",)):
        assert "record of dataset" in one_line(kit(home, *args))
    _repaired(home, "damaged record of dataset")
