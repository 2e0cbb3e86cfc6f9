"""The store knows itself (issue 54.5): an index deleted, replaced or read with a stale
write-ahead log under kit is said in one line, never read as the store.

Made for real: SQLite files copied and put back as a backup or a copy made while kit runs
leaves them, and a pipeline that deletes the index while its run is made."""

import gc
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from outputs import call
from places import FIXTURES, PIPELINES, ROOT
from stored import arrays, budget_store, put, spec

from kit.core.spec import seeds
from kit.runs.planning.options import Pair
from kit.runs.store import Store

READERS = (("runs",), ("budget",), ("verdicts",), ("advise",))
PIPELINE = PIPELINES / "unlinks.py"


def _pair(store, tmp_path, i):
    a, b = spec(seeds=seeds(2 * i)), spec(seeds=seeds(2 * i + 1))
    put(store, tmp_path, a, arrays(2 * i))
    put(store, tmp_path, b, arrays(2 * i + 1))
    store.add_pairs([Pair("seed", "", a, b, f"seed {2 * i} vs {2 * i + 1}")])


def _call(*argv) -> tuple:
    got = call(*argv)
    gc.collect()  # its store's connection closes, as at a command's exit: the log is settled
    return got


def _listed() -> list:
    code, out, err = _call("runs", "--json")
    assert code == 0, err
    return sorted(r["id"] for r in json.loads(out))


def _refused(home: Path, says: str) -> None:
    """Every reader and `store check` refuse in one line saying ``says``; no file of the index
    changes (SQLite would copy a stale log into the index on its last close; the -shm is only
    the log's index in memory, rebuilt by every opener)."""
    files = {
        p.name: p.read_bytes() for p in home.glob("store.sqlite*") if p.suffix != ".sqlite-shm"
    }
    for argv in READERS + (("store", "check"),):
        code, out, err = _call(*argv)
        assert code == 1 and out == "", (argv, out, err)
        assert err.count("\n") == 1 and err.startswith("kit: error: the store index "), err
        assert says in err and "kit store check --repair" in err, err
    assert {n: (home / n).read_bytes() for n in files} == files


def test_a_stale_write_ahead_log_is_refused_and_repair_sets_it_aside(tmp_path):
    """A backup taken while kit held the store open: the index and its -wal. The store goes on
    (three pairs more, the log checkpointed into the index and removed), then the backup's log
    is put back. Before: 2 of 8 runs and 1 of 4 pairs read, every reader and check exit 0, and
    the first reader made the rollback permanent."""
    home = Path(os.environ["KIT_HOME"])
    store = Store(home)
    _pair(store, tmp_path, 0)
    stale = (home / "store.sqlite-wal").read_bytes()  # what the backup holds
    for i in (1, 2, 3):
        _pair(store, tmp_path, i)
    store.close()
    assert not (home / "store.sqlite-wal").exists()
    runs = _listed()
    assert len(runs) == 8
    (home / "store.sqlite-wal").write_bytes(stale)
    _refused(home, "store.sqlite-wal beside it is stale")
    code, out, err = _call("store", "check", "--repair")
    assert code == 0 and "without its log it is write" in out, (out, err)
    assert list(home.glob("store.sqlite-wal.set-aside-*"))  # kept, never deleted
    assert _listed() == runs
    assert len(Store(home).pairs()) == 4
    assert _call("store", "check")[0] == 0


def test_a_restored_or_foreign_index_is_refused_and_repair_takes_it_as_it_is(tmp_path):
    """An older copy of the index put back (no log beside it), then another store's index in
    its place: each is one line; repair takes the index as it is, puts back what the records
    beside the arrays hold, and the store checks clean."""
    home = Path(os.environ["KIT_HOME"])
    store = Store(home)
    _pair(store, tmp_path, 0)
    store.close()
    shutil.copyfile(home / "store.sqlite", tmp_path / "backup.sqlite")
    store = Store(home)
    _pair(store, tmp_path, 1)
    store.close()
    shutil.copyfile(tmp_path / "backup.sqlite", home / "store.sqlite")
    _refused(home, "it was restored from an older copy")
    code, out, err = _call("store", "check", "--repair")
    # the runs stored after the copy come back from their records beside the arrays
    assert code == 0 and "taken as it is" in out and "restored from" in out, (out, err)
    assert len(_listed()) == 4 and _call("store", "check")[0] == 0

    other = Store(tmp_path / "other")
    _pair(other, tmp_path, 2)
    other.close()
    shutil.copyfile(tmp_path / "other" / "store.sqlite", home / "store.sqlite")
    _refused(home, "another store's index was put in its place")
    assert _call("store", "check", "--repair")[0] == 0
    assert _call("store", "check")[0] == 0


def test_a_store_without_an_identity_gets_one_once(tmp_path):
    """A store older kits made (tests/support/fixtures/store_v1) gets its id on its first open, in
    the index and in store.json, and keeps it; its runs read as before."""
    home = Path(os.environ["KIT_HOME"])
    home.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "store_v1" / "store.sqlite", home / "store.sqlite")
    store = Store(home)
    ident = store.identity
    assert json.loads((home / "store.json").read_text()) == {"store": ident, "generation": 0}
    store.close()
    assert Store(home).identity == ident


def _kit(*args, how="delete"):
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        KIT_TEST_HOME_HEX=os.environ["KIT_HOME"].encode().hex(),  # a path would be dropped
        KIT_TEST_HOW=how,
    )
    return subprocess.run(
        [sys.executable, "-m", "kit", *args], capture_output=True, text=True, env=env
    )


@pytest.mark.slow
@pytest.mark.parametrize("how", ["delete", "replace"])
def test_a_pipeline_that_deletes_or_replaces_the_store_fails_in_one_line(how):
    """Before: exit 0 and 'repeat: every output identical'; then `kit runs` said 'no runs
    stored' and `store check` exit 0."""
    got = _kit("run", "--pipeline", str(PIPELINE), "--factor", "repeat", "--threads", "1", how=how)
    assert got.returncode == 1, (got.stdout, got.stderr)
    assert "identical" not in got.stdout and "Traceback" not in got.stderr
    last = got.stderr.strip().splitlines()[-1]
    word = "deleted" if how == "delete" else "replaced"
    assert last.startswith("kit: error: the store index ") and f"was {word} while" in last, last
    runs = _kit("runs")
    if how == "delete":  # the index is gone: said, never an empty store
        assert runs.returncode == 1 and "is missing" in runs.stderr, runs.stderr
        assert _kit("store", "check").returncode == 1
        assert _kit("store", "check", "--repair").returncode == 0
        runs = _kit("runs")
    # nothing the run made reads as stored
    assert runs.returncode == 0 and "no runs stored" in runs.stdout, (runs.stdout, runs.stderr)
    assert _kit("store", "check").returncode == 0


def test_every_reader_refuses_a_damaged_index_exactly_when_kit_runs_does(tmp_path, monkeypatch):
    """Each 4 KiB page of a store's index zeroed in turn (its caches filled first, as after a
    budget). Before: `kit runs` exit 0 where budget, verdicts and advise refused (a zeroed page
    of an index over runs or pairs), and `store check` exit 0 on several of those."""
    home = Path(os.environ["KIT_HOME"])
    budget_store(tmp_path, home=home)
    for argv in READERS:
        _call(*argv)
    with sqlite3.connect(home / "store.sqlite") as db:  # the log in: every page is the file's
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = (home / "store.sqlite").stat().st_size // 4096
    for page in range(1, pages):  # after the header page
        damaged = tmp_path / f"home{page}"
        shutil.copytree(home, damaged)
        with open(damaged / "store.sqlite", "r+b") as f:
            f.seek(page * 4096)
            f.write(b"\0" * 4096)
        monkeypatch.setenv("KIT_HOME", str(damaged))
        said = {argv: _call(*argv) for argv in READERS + (("store", "check"),)}
        codes = {argv: code for argv, (code, _, _) in said.items()}
        assert len(set(codes.values())) == 1, (page, codes)
        if codes[("runs",)]:
            lines = {err for _, _, err in said.values()}
            assert len(lines) == 1 and "is damaged" in lines.pop(), (page, said)


def test_rows_deleted_by_hand_are_said_and_put_back_from_the_records(tmp_path):
    """A run's rows and its pairs deleted from the index with sqlite3: before, every reader and
    the check went on without them, exit 0; now the check names what the index lacks against
    the records beside the arrays (exit 1), and repair puts it back as it was."""
    home = Path(os.environ["KIT_HOME"])
    budget_store(tmp_path, home=home)
    before = {argv: _call(*argv) for argv in READERS}
    gone = _listed()[0]
    with sqlite3.connect(home / "store.sqlite") as db:
        for sql in (
            "DELETE FROM pairs WHERE a=? OR b=?",
            "DELETE FROM stages WHERE run=?",
            "DELETE FROM runs WHERE id=?",
        ):
            db.execute(sql, (gone,) * sql.count("?"))
    code, out, err = _call("store", "check")
    assert (
        code == 1
        and f"the index lacks what the records beside the arrays hold: 1 run(s) ({gone[:12]})"
        in out
    ), (out, err)
    code, out, err = _call("store", "check", "--repair")
    assert code == 0 and "restored from" in out, (out, err)
    assert {argv: _call(*argv) for argv in READERS} == before
    assert _call("store", "check")[0] == 0


def test_an_emptied_index_is_rebuilt_from_the_records(tmp_path):
    """store.sqlite emptied (0 bytes) beside its arrays: before, repair moved it aside and
    dropped every run; now every reader points at the rebuild and it loses none."""
    home = Path(os.environ["KIT_HOME"])
    budget_store(tmp_path, home=home)
    before = {argv: _call(*argv) for argv in READERS}
    for p in home.glob("store.sqlite-*"):
        p.unlink()
    (home / "store.sqlite").write_bytes(b"")
    code, _, err = _call("runs")
    assert code == 1 and "rebuilds the index from the runs' records" in err, err
    code, out, err = _call("store", "check", "--repair")
    assert code == 0 and "restored from" in out, (out, err)
    assert {argv: _call(*argv) for argv in READERS} == before
    assert _call("store", "check")[0] == 0
