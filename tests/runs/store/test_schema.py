"""What a run or dataset record is of is the store's ``subject`` column (schema version 2, issue 38):
every writer writes it, every reader checks it against the spec or summary, `kit store check`
names a row whose column disagrees; an index of version 1 opens migrated (in one transaction, or
not at all) and reads as that kit read it; one this user cannot write is read, never changed.

The version-1 index is tests/support/fixtures/store_v1 (written by 5ca8f7e; its HOW.md says how).
"""

import dataclasses
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import tempfile
from pathlib import Path

import pytest
from outputs import call
from places import FIXTURES
from stored import arrays, put, spec

from kit.core.errors import Damaged
from kit.core.spec import RunSpec, pipeline_seeds, seeds
from kit.core.subject import DATASET, PIPELINE
from kit.data.pipelines import LabData
from kit.runs.store import Store, schema
from kit.runs.store.check import check_store
from kit.runs.store.records import DatasetSummary

FIXTURE = FIXTURES / "store_v1"
READS = json.loads((FIXTURE / "reads.json").read_text())
D1, D2, P = "1" * 64, "2" * 64, "3" * 64


def _v1(tmp_path) -> Path:
    home = tmp_path / "v1"
    home.mkdir()
    shutil.copy(FIXTURE / "store.sqlite", home / "store.sqlite")
    return home


def _sql(home: Path, q: str, args=()):
    con = sqlite3.connect(home / "store.sqlite")
    try:
        with con:
            return con.execute(q, args).fetchall()
    finally:
        con.close()


def _dump(home: Path) -> tuple:
    """The index's version and every statement that makes it again: what a reader sees of it."""
    con = sqlite3.connect(home / "store.sqlite")
    try:
        return con.execute("PRAGMA user_version").fetchone()[0], list(con.iterdump())
    finally:
        con.close()


def _reads(st: Store) -> dict:
    """What the readers return, in reads.json's shape."""
    return {
        "user_version": schema.CURRENT,
        "latest_dataset": st.latest_dataset(),
        "datasets": st.datasets(),
        "runs": [r.id for r in st.runs()],
        "runs_of": {h: [r.id for r in st.runs(h)] for h in (D1, D2, P)},
        "specs": sorted(st.specs()),
        "pairs": [p.to_json() for p in st.pairs()],
        "damaged_runs": st.damaged_runs(),
        "damaged_datasets": st.damaged_datasets(),
        "latest": {k: st.latest(k) for k in (DATASET, PIPELINE)},
        "subjects": {k: [d.sha256 for d in st.subjects(k)] for k in (DATASET, PIPELINE)},
        "run_subjects": {r.id: k for k in (DATASET, PIPELINE) for r in st.runs(subject=k)},
    }


def _expected() -> dict:
    return dict(READS, user_version=schema.CURRENT)


# -- the migration of a version-1 index --------------------------------------------------------
def test_a_v1_store_opens_migrated_and_reads_as_that_kit_read_it(tmp_path):
    home = _v1(tmp_path)
    assert _dump(home)[0] == READS["user_version"] == 1
    st = Store(home)
    assert _reads(st) == _expected()
    st.close()
    assert _dump(home)[0] == schema.CURRENT == 2
    column = dict(_sql(home, "SELECT id, subject FROM runs"))
    assert column == READS["run_subjects"]
    assert dict(_sql(home, "SELECT sha256, subject FROM datasets")) == {
        D1: DATASET,
        D2: DATASET,
        P: PIPELINE,
        "4" * 64: DATASET,
    }
    indexes = {n for (n,) in _sql(home, "SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"runs_by_subject", "datasets_by_subject", "runs_by_dataset"} <= indexes
    st = Store(home)  # a second open finds nothing to do and reads the same
    assert _reads(st) == _expected()
    report = check_store(st)
    assert report["ok"] and not report["damaged_runs"] and not report["damaged_records"], report


def test_a_failing_step_leaves_the_old_store_untouched(tmp_path, monkeypatch):
    home = _v1(tmp_path)
    before = _dump(home)

    def half_done(db):  # the step's work is done in the transaction, then it fails
        schema._v2(db)
        raise RuntimeError("injected: the step failed half-way")

    monkeypatch.setattr(schema, "MIGRATIONS", [schema._v1, half_done])
    with pytest.raises(RuntimeError, match="injected"):
        Store(home)
    assert _dump(home) == before  # version 1, no subject column, every row as it was
    monkeypatch.undo()
    st = Store(home)  # the next open, with the step whole, migrates it
    assert _reads(st) == _expected()


def test_a_v1_row_whose_spec_does_not_verify_is_left_for_the_check(tmp_path):
    """The migration cannot say what a damaged run is of: it keeps NULL, every reader names the
    run (never leaves it out of latest()), the check names it and repair drops it."""
    home = _v1(tmp_path)
    last_dataset_run = READS["runs_of"][D2][0]
    text = _sql(home, "SELECT spec FROM runs WHERE id=?", (last_dataset_run,))[0][0]
    assert '"threads":1' in text
    _sql(
        home,
        "UPDATE runs SET spec=? WHERE id=?",
        (text.replace('"threads":1', '"threads":3'), last_dataset_run),
    )
    st = Store(home)
    assert _sql(home, "SELECT subject FROM runs WHERE id=?", (last_dataset_run,)) == [(None,)]
    for read in (st.latest, st.runs, lambda: st.runs(subject=PIPELINE), st.specs):
        with pytest.raises(Damaged, match=f"run {last_dataset_run[:12]} in the store is damaged"):
            read()
    assert "does not hash to its id" in st.damaged_runs()[last_dataset_run]
    check_store(st, repair=True)
    assert st.latest() == D1  # the dataset stored before it
    assert st.latest(PIPELINE) == P and not st.damaged_runs()


# -- a read-only store -------------------------------------------------------------------------
def test_a_v1_store_this_user_cannot_write_is_read_migrated_in_memory(tmp_path, monkeypatch):
    """As root file modes do not hold: the store is told it cannot write, as os.access would
    tell another user; the index file is not changed by one byte and stays at version 1."""
    import kit.runs.store.index as index

    home = _v1(tmp_path)
    sha = hashlib.sha256((home / "store.sqlite").read_bytes()).hexdigest()
    monkeypatch.setattr(index, "writable", lambda folder: False)
    st = Store(home)
    assert st.read_only
    assert _reads(st) == _expected()
    st.close()
    assert hashlib.sha256((home / "store.sqlite").read_bytes()).hexdigest() == sha
    assert _dump(home)[0] == 1


def test_a_v1_store_read_by_a_user_who_cannot_write_it(tmp_path):
    """The same, for real: the folder loses its write bits and `kit runs` runs as that user
    (tests/runs/store/test_locked.py); it prints what it prints on a writable, migrated copy."""
    from kit.cli import main
    from tests.runs.store.test_locked import as_reader

    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwuid(65534)
        except (ImportError, KeyError):
            pytest.skip("root without a `nobody` user: file modes cannot be made to hold")
    top = Path(tempfile.mkdtemp(prefix="kit-ro-"))
    try:
        os.chmod(top, 0o755)
        home, warm = top / "home", top / "warm"
        home.mkdir()
        shutil.copy(FIXTURE / "store.sqlite", home / "store.sqlite")
        (home / "arrays").mkdir()  # a store's own folder (its runs travel without arrays here)
        shutil.copytree(home, warm)
        for p in (home / "store.sqlite", home / "arrays", home):
            os.chmod(p, 0o555 if p.is_dir() else 0o444)
        before = sorted(p.name for p in home.iterdir())
        code, out = as_reader(home, ["runs"], warm)
        assert code == 0, out
        assert "not writable" not in out and "Traceback" not in out
        assert out.count("pipeline digits.py") == 2 and out.count("synthetic-120") == 2, out
        assert sorted(p.name for p in home.iterdir()) == before
        assert _dump(home)[0] == 1
        os.environ["KIT_HOME"] = str(warm)
        import contextlib
        import io

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(["runs"]) == 0
        assert out == buf.getvalue()
    finally:
        for p in (home, home / "arrays", home / "store.sqlite"):
            if p.exists():
                os.chmod(p, p.stat().st_mode | stat.S_IWUSR)
        shutil.rmtree(top)


# -- the readers on a new store -----------------------------------------------------------------
def _lab(s=0):
    return RunSpec(
        dataset=P, stack="host", stack_id="s" * 64, pipeline=P, seeds=pipeline_seeds(("init",), s)
    )


def _both(tmp_path) -> Store:
    """A dataset's two runs, then a lab pipeline's run stored last, with both summaries."""
    st = Store(tmp_path / "home")
    st.note_dataset({"sha256": D1, "name": "synthetic-120", "source": "synthetic", "rows": 120})
    st.note_dataset(LabData({"sha256": P, "name": "digits.py", "seeds": ["init"]}).summary())
    put(st, tmp_path, spec(dataset=D1), arrays(0))
    put(st, tmp_path, spec(dataset=D1, seeds=seeds(1)), arrays(1))
    put(st, tmp_path, _lab(), {"proba": arrays(0)["lr"]})
    return st


def test_latest_of_a_kind_is_never_the_other_kinds_run_stored_after_it(tmp_path):
    st = _both(tmp_path)
    assert st.latest() == st.latest(DATASET) == st.latest_dataset() == D1
    assert st.latest(PIPELINE) == P
    with pytest.raises(ValueError):
        st.latest("pipelines")
    empty = Store(tmp_path / "empty")
    assert empty.latest() is None and empty.latest(PIPELINE) is None and empty.subjects() == []


def test_subjects_are_frozen_records_of_the_datasets_table(tmp_path):
    st = _both(tmp_path)
    ds, lab = st.subjects()
    assert (ds.sha256, ds.kind, ds.name, ds.rows, ds.source, ds.verified, ds.is_pipeline) == (
        D1,
        DATASET,
        "synthetic-120",
        120,
        "synthetic",
        True,
        False,
    )
    assert (lab.kind, lab.name, lab.rows, lab.source, lab.is_pipeline) == (
        PIPELINE,
        "pipeline digits.py",
        None,
        "pipeline",
        True,
    )
    assert st.subjects(PIPELINE) == [lab] and st.subjects(DATASET) == [ds]
    assert {d.sha256: d.to_json() for d in st.subjects()} == st.datasets()
    with pytest.raises(dataclasses.FrozenInstanceError):
        ds.name = "other"
    with pytest.raises(TypeError):
        ds.summary["name"] = "other"
    ds.to_json()["name"] = "other"  # the JSON edge is a copy
    assert st.subjects(DATASET)[0].name == "synthetic-120" and ds.summary["name"] == "synthetic-120"
    assert [r.spec.pipeline for r in st.runs(subject=PIPELINE)] == [P]
    assert len(st.runs(D1, subject=DATASET)) == 2 and st.runs(D1, subject=PIPELINE) == []
    assert isinstance(ds, DatasetSummary)


def test_every_writer_writes_the_column(tmp_path):
    """put_run and note_dataset (above), and a bundle's import_runs."""
    st = _both(tmp_path)
    runs = [dict(r.to_json(), blobs=st.stage_blobs(r.id)) for r in st.runs()]
    other = Store(tmp_path / "other")
    other.import_runs(runs, [], {}, {h: d for h, d in st.datasets().items()})
    for s in (st, other):
        assert {k for (k,) in s.db.execute("SELECT subject FROM runs")} == {DATASET, PIPELINE}
        assert dict(s.db.execute("SELECT sha256, subject FROM datasets")) == {
            D1: DATASET,
            P: PIPELINE,
        }
        assert s.db.execute("PRAGMA user_version").fetchone()[0] == schema.CURRENT
    assert other.latest(PIPELINE) == P and other.latest() == D1


# -- check and repair name a wrong subject -----------------------------------------------------
def test_a_run_whose_subject_is_not_its_specs_is_damaged_and_repaired(tmp_path):
    st = _both(tmp_path)
    first = st.runs(D1)[0].id
    st.db.execute("UPDATE runs SET subject='pipeline' WHERE id=?", (first,))
    st.db.commit()
    why = "its subject column is not its spec's"
    with pytest.raises(Damaged, match=f"run {first[:12]} in the store is damaged \\({why}"):
        st.runs()
    assert why in st.damaged_runs()[first]
    report = check_store(st)
    assert not report["ok"] and report["damaged_runs"][0]["run"] == first[:12], report
    assert why in report["damaged_runs"][0]["why"]
    check_store(st, repair=True)
    assert not st.damaged_runs() and first not in {r.id for r in st.runs()}
    assert check_store(st)["ok"]


def test_a_dataset_record_whose_subject_is_not_its_summarys_is_damaged_and_repaired(tmp_path):
    st = _both(tmp_path)
    st.db.execute("UPDATE datasets SET subject='dataset' WHERE sha256=?", (P,))
    st.db.commit()
    why = "its subject column is not its summary's"
    for read in (st.datasets, st.subjects, lambda: st.subjects(DATASET)):
        with pytest.raises(Damaged, match=f"record of dataset {P[:12]} is damaged \\({why}"):
            read()
    report = check_store(st)
    assert [d["dataset"] for d in report["damaged_records"]] == [P[:12]], report
    assert why in report["damaged_records"][0]["why"]
    check_store(st, repair=True)
    assert list(st.datasets()) == [D1] and check_store(st)["ok"]


def test_a_subject_outside_the_two_kinds_cannot_be_written(tmp_path):
    st = _both(tmp_path)
    with pytest.raises(sqlite3.IntegrityError):
        st.db.conn.execute("UPDATE runs SET subject='banana'")


@pytest.mark.parametrize("damage", ["deleted", "cut short"])
def test_a_v1_store_gets_its_records_once_and_is_rebuilt_from_them_whole(
    tmp_path, monkeypatch, damage
):
    """Issue 54.5: a store from before the records gets them, once, from its index as it first
    opens; its index then deleted or cut short, `kit store check --repair` rebuilds it from them
    and every reader returns what that kit's readers returned (reads.json), in the same order.
    Before, the check said the runs were lost ("kit cannot rebuild it")."""
    home = _v1(tmp_path)
    monkeypatch.setenv("KIT_HOME", str(home))
    Store(home).close()
    records = sorted((home / "records").rglob("*.json"))
    assert len(records) == 1 + len(READS["runs"]) + len(READS["datasets"])  # one of the pairs
    Store(home).close()
    assert sorted((home / "records").rglob("*.json")) == records  # once
    index = home / "store.sqlite"
    if damage == "deleted":
        for p in home.glob("store.sqlite*"):
            p.unlink()
    else:
        os.truncate(index, index.stat().st_size // 2)
        code, _, err = call("runs")
        assert code == 1 and "rebuilds it from the runs' records" in err, err
    code, out, err = call("store", "check", "--repair")
    assert code == 0 and "restored from" in out, (out, err)
    st = Store(home)
    assert _reads(st) == _expected()
    st.close()
    assert call("store", "check")[0] == 0
