"""kit.runs.store (and blobs): content-addressed arrays, one transaction per run, bad bytes refused.

Every array read for a number is verified (hash, dtype, shape), an existing copy is verified
before a fresh one is discarded, and a claim per run id serialises overlapping plans.
"""

import json

import numpy as np
import pytest
from stored import arrays, put, spec

from kit.core.errors import KitError
from kit.core.spec import seeds
from kit.runs.store import Store


def test_put_and_read_back(tmp_path):
    store = Store(tmp_path / "home")
    s = spec()
    a = arrays()
    put(store, tmp_path, s, a)
    assert store.has_run(s.run_id)
    run = store.run(s.run_id)
    assert run.spec == s and run.stages["svd_rand"].shape == (60, 8)
    assert run.to_json()["spec"] == json.loads(s.to_json())  # the JSON edge: as stored
    assert np.array_equal(store.array(s.run_id, "knn"), a["knn"])
    assert [r.id for r in store.runs("d" * 64)] == [s.run_id]
    assert store.runs("e" * 64) == []


def test_identical_arrays_are_stored_once(tmp_path):
    store = Store(tmp_path / "home")
    blobs = lambda: sorted((tmp_path / "home" / "arrays").rglob("*.npy"))  # noqa: E731
    put(store, tmp_path, spec(), arrays())
    first = blobs()
    put(store, tmp_path, spec(replicate=1), arrays())
    assert blobs() == first and len(store.runs()) == 2  # the second run added no file


def test_same_bytes_other_dtype_is_another_blob(tmp_path):
    store = Store(tmp_path / "home")
    a = arrays()
    b = dict(a, **{"kmeans": a["kmeans"].view(np.float64)})
    put(store, tmp_path, spec(), a)
    put(store, tmp_path, spec(replicate=1), b)
    assert store.array(spec().run_id, "kmeans").dtype == np.int64
    assert store.array(spec(replicate=1).run_id, "kmeans").dtype == np.float64


def test_corrupt_output_is_refused_and_nothing_indexed(tmp_path):
    store = Store(tmp_path / "home")
    s = spec()
    out = tmp_path / "out"
    out.mkdir()
    np.save(out / "knn.npy", np.arange(4))
    manifest = {"stages": {"knn": {"sha256": "0" * 64, "dtype": "<i8", "shape": [4]}}, "env": {}}
    with pytest.raises(KitError, match="do not match"):
        store.put_run(s, out, manifest)
    assert not store.has_run(s.run_id) and store.runs() == []


def test_store_survives_reopen(tmp_path):
    put(Store(tmp_path / "home"), tmp_path, spec(), arrays())
    assert Store(tmp_path / "home").has_run(spec().run_id)


def _blob_file(store, run_id, stage):
    return store.blob_path(store.stage_blobs(run_id)[stage])


def test_a_flipped_byte_is_never_read_as_a_number(tmp_path):
    from kit.runs.store import DamagedArray

    store = Store(tmp_path / "home")
    s = spec()
    put(store, tmp_path, s, arrays())
    assert store.array(s.run_id, "lr") is not None  # verified once, remembered
    f = _blob_file(store, s.run_id, "lr")
    data = bytearray(f.read_bytes())
    data[-3] ^= 0x01  # one probability's last byte
    f.write_bytes(bytes(data))
    with pytest.raises(DamagedArray, match="lr is damaged .*sha256.*kit store check --repair"):
        store.array(s.run_id, "lr")


def test_a_rewritten_dtype_in_the_header_is_caught(tmp_path):
    from kit.runs.store import DamagedArray

    store = Store(tmp_path / "home")
    s = spec()
    put(store, tmp_path, s, arrays())
    f = _blob_file(store, s.run_id, "lr")
    f.write_bytes(f.read_bytes().replace(b"'<f8'", b"'<i8'", 1))  # same size, same bytes after
    with pytest.raises(DamagedArray, match="dtype <i8, recorded <f8"):
        store.array(s.run_id, "lr")


def test_verification_is_remembered_until_the_file_changes(tmp_path, monkeypatch):
    import kit.runs.store.blobs as blobs

    store = Store(tmp_path / "home")
    s = spec()
    put(store, tmp_path, s, arrays())
    calls = []
    real = blobs.array_sha256
    monkeypatch.setattr(blobs, "array_sha256", lambda a: calls.append(1) or real(a))
    store.array(s.run_id, "rf")
    store.array(s.run_id, "rf")
    assert calls == []  # verified when stored; not hashed again while the file is unchanged
    f = _blob_file(store, s.run_id, "rf")
    f.write_bytes(f.read_bytes())  # the same bytes, but the file was written: check again
    store.array(s.run_id, "rf")
    assert calls == [1]


def test_a_damaged_copy_is_replaced_by_a_fresh_one_not_kept(tmp_path):
    """A damaged blob (or one a bundle planted) must not absorb the next run's correct bytes."""
    store = Store(tmp_path / "home")
    a = arrays()
    put(store, tmp_path, spec(), a)
    f = _blob_file(store, spec().run_id, "rf")
    f.write_bytes(f.read_bytes()[:-8] + b"\x00" * 8)
    put(store, tmp_path, spec(replicate=1), a)  # the same arrays again, from a new run
    assert np.array_equal(store.array(spec(replicate=1).run_id, "rf"), a["rf"])
    assert np.array_equal(store.array(spec().run_id, "rf"), a["rf"])  # one blob, repaired


def test_a_missing_array_of_a_local_run_is_not_called_an_import(tmp_path):
    from kit.runs.store import DamagedArray
    from kit.runs.store.hosts import host_id

    store = Store(tmp_path / "home")
    s = spec(host=host_id())
    put(store, tmp_path, s, arrays())
    _blob_file(store, s.run_id, "knn").unlink()
    with pytest.raises(DamagedArray, match="missing"):
        store.array(s.run_id, "knn")


def test_a_corrupt_index_is_one_clear_error(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "store.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(KitError, match="store index .* is damaged .*move it aside"):
        Store(home)


def test_one_claim_per_run_id(tmp_path):
    """Another live process holds the claim: no; a dead one's claim is taken over."""
    import subprocess
    import sys

    store = Store(tmp_path / "home")
    assert store.claim("r1") and store.claim("r1")  # ours, again
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with store._tx() as db:
            db.execute("UPDATE claims SET pid=? WHERE run='r1'", (other.pid,))
        assert not store.claim("r1")
    finally:
        other.kill()
        other.wait()
    assert store.claim("r1")  # its holder died: taken over
    store.release("r1")
    assert store.db.execute("SELECT count(*) FROM claims").fetchone()[0] == 0


def _plant(home, key: str, age_s: float):
    """An array file no run refers to, written ``age_s`` ago."""
    import os
    import time

    f = home / "arrays" / key[:2] / f"{key}.npy"
    f.parent.mkdir(exist_ok=True)
    f.write_bytes(b"planted")
    os.utime(f, (time.time() - age_s,) * 2)
    return f


def test_store_check_finds_and_repair_drops_what_is_damaged(tmp_path, kit_home, capsys):
    import json
    import time

    from stored import budget_store

    from kit.analysis.budget import budget
    from kit.cli import main

    st = budget_store(tmp_path, home=kit_home)
    seed1 = next(r.id for r in st.runs() if r.spec.seed_dict["svd"] == 1)
    f = _blob_file(st, seed1, "svd_rand")
    f.write_bytes(f.read_bytes()[:-8] + b"\x01" * 8)
    with st._tx() as db:  # the index is three hours old
        db.execute("UPDATE meta SET value=? WHERE key='born'", (str(time.time() - 3 * 3600),))
    orphan = _plant(kit_home, "ff" * 32, 2 * 3600)  # born under this index, no run uses it
    older = _plant(kit_home, "ee" * 32, 4 * 3600)  # older than the index: maybe another's
    recent = _plant(kit_home, "dd" * 32, 0)  # an import may be about to index it
    with pytest.raises(KitError, match="damaged"):
        budget(st, "d" * 64)  # never a silently wrong number
    assert main(["store", "check", "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert len(rep["damaged"]) == 1 and rep["damaged"][0]["runs"] == [seed1]
    assert rep["orphans"] == 1 and rep["unindexed"] == 1 and rep["recent"] == 1
    assert rep["factors_to_rerun"] == ["seed"]
    assert rep["files"] == rep["arrays"] + 3  # counted on disk
    assert main(["store", "check", "--repair"]) == 0
    assert "run these factors again: seed" in capsys.readouterr().out
    assert not st.has_run(seed1) and len(st.pairs("d" * 64)) == 3
    assert not orphan.exists() and recent.exists() and not older.exists()
    assert (kit_home / "unindexed" / "ee" / older.name).read_bytes() == b"planted"  # kept
    assert main(["store", "check", "--wide"]) == 0  # whole lines (piped output fits 80 columns)
    assert "every array and dataset file is what its runs recorded" in capsys.readouterr().out
    assert budget(st, "d" * 64)["yardstick"]["pairs"] == 1  # the one intact seed pair


def test_one_store_used_by_many_threads_at_once(tmp_path):
    """--jobs runs finish on several threads while others read: every statement is serialised
    (a shared sqlite3 connection otherwise fails with 'bad parameter or other API misuse')."""
    import threading

    store = Store(tmp_path / "h")
    errors = []

    def work(i):
        try:
            for j in range(200):
                run = f"{i:02d}{j:04d}".ljust(64, "0")
                assert store.claim(run)
                store.has_run(run)
                store.runs()
                store.datasets()
                store.release(run)
        except Exception as e:  # noqa: BLE001 - collected: an assertion in a thread would be lost
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_reading_a_remembered_array_writes_nothing(tmp_path, monkeypatch):
    """A read of an array already verified commits nothing (it wrote its file's identity again,
    a transaction per array read: most of the analysis ahead's CPU on a cluster)."""
    store = Store(tmp_path / "home")
    s = spec()
    put(store, tmp_path, s, arrays())
    writes = []
    monkeypatch.setattr(store, "note_verified", lambda *a: writes.append(a))
    for _ in range(3):
        store.array(s.run_id, "rf")
    assert writes == []


@pytest.mark.parametrize(
    "a",
    [
        np.arange(12.0).reshape(3, 4),
        np.asfortranarray(np.arange(12).reshape(3, 4)),
        np.array(7, dtype=np.int32),
        np.zeros((0, 5)),
        np.array([True, False]),
        np.array(["P12345", "Q9"]),
        np.arange(4, dtype=">i4"),
    ],
    ids=["c", "fortran", "0-d", "empty", "bool", "text", "big-endian"],
)
def test_an_array_is_read_as_numpy_reads_it(tmp_path, a):
    from kit.runs.store.blobs import load_npy

    np.save(tmp_path / "a.npy", a)
    got, want = load_npy(tmp_path / "a.npy"), np.load(tmp_path / "a.npy")
    assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    assert got.flags.writeable and got.flags.f_contiguous == want.flags.f_contiguous
    assert np.array_equal(load_npy((tmp_path / "a.npy").read_bytes()), want)


def test_a_file_is_verified_as_it_streams_by_without_an_array_made(tmp_path, monkeypatch):
    import kit.runs.store.blobs as blobs
    from kit.runs.store import array_sha256

    a = np.arange(1000.0).reshape(10, 100)
    np.save(tmp_path / "a.npy", a)
    sha = array_sha256(a)
    monkeypatch.setattr(blobs, "load_npy", lambda *_: pytest.fail("an array was made"))
    assert blobs.file_problem(tmp_path / "a.npy", sha, "<f8", [10, 100]) is None
    assert "do not match" in blobs.file_problem(tmp_path / "a.npy", "0" * 64, "<f8", [10, 100])
    assert (
        blobs.file_problem(tmp_path / "a.npy", sha, "<f4", [10, 100]) == "dtype <f8, recorded <f4"
    )
    assert blobs.file_problem(tmp_path / "a.npy", sha, "<f8", [100, 10]).startswith("shape")
    data = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(data[:-8])
    assert "declares 8000 bytes of data, the file holds 7992" in blobs.file_problem(
        tmp_path / "cut.npy", sha, "<f8", [10, 100]
    )
    assert "not a readable" in blobs.file_problem(tmp_path / "none.npy", sha, "<f8", [10, 100])
    monkeypatch.undo()  # a Fortran-order file's data is not the C-order bytes the hash is of
    np.save(tmp_path / "f.npy", np.asfortranarray(a))
    assert blobs.file_problem(tmp_path / "f.npy", sha, "<f8", [10, 100]) is None


def _received(tmp_path, spec_, stage_arrays, leave_out=(), name="got"):
    """A node's answer as the runner has it: the arrays that came back in a folder, and the
    manifest of all of them (spec included)."""
    from stored import env

    from kit.runs.store import array_sha256

    out = tmp_path / f"{name}-{spec_.run_id[:8]}"
    out.mkdir()
    stages = {}
    for name, a in stage_arrays.items():
        if name not in leave_out:
            np.save(out / f"{name}.npy", a)
        stages[name] = {"sha256": array_sha256(a), "dtype": a.dtype.str, "shape": list(a.shape)}
    return out, {
        "stages": stages,
        "timings": {},
        "wall_s": 1.0,
        "seeds": spec_.seed_dict,
        "env": env(),
        "spec": json.loads(spec_.to_json()),
    }


def test_an_array_the_store_holds_need_not_come_back(tmp_path):
    """A cluster node leaves out what the store holds (``held``): the run is indexed with the
    store's own copy; an array left out that was not held, or not in the store whole, is
    refused, and nothing of the run is stored or moved in."""
    store = Store(tmp_path / "home")
    a = arrays()
    put(store, tmp_path, spec(), a)
    held = store.held_blobs("d" * 64)
    shared = ("kmer.data", "kmer.indices", "tfidf.data")
    b = dict(arrays(seed=1), **{k: a[k] for k in shared})
    s1 = spec(seeds=seeds(1))
    out, manifest = _received(tmp_path, s1, b, leave_out=shared)
    store.put_run(s1, out, manifest, held=held)
    assert store.has_run(s1.run_id)
    assert {k: store.stage_blobs(s1.run_id)[k] for k in shared} == {
        k: store.stage_blobs(spec().run_id)[k] for k in shared
    }
    assert np.array_equal(store.array(s1.run_id, "kmer.data"), a["kmer.data"])

    s2 = spec(seeds=seeds(2))  # left out, but not held: no run of the dataset has it
    c = dict(arrays(seed=2), **{"kmer.data": np.ones(7)})
    out, manifest = _received(tmp_path, s2, c, leave_out=("kmer.data",))
    with pytest.raises(
        KitError, match="kmer.data: the worker's array does not match .*not a readable"
    ):
        store.put_run(s2, out, manifest, held=held)
    assert not store.has_run(s2.run_id)


def test_a_held_array_gone_from_the_store_refuses_the_run_before_anything_moves(tmp_path):
    store = Store(tmp_path / "home")
    a = arrays()
    put(store, tmp_path, spec(), a)
    held = store.held_blobs("d" * 64)
    f = _blob_file(store, spec().run_id, "kmer.data")
    f.write_bytes(f.read_bytes()[:-8] + b"\x01" * 8)  # damaged since the task was sent
    s1 = spec(seeds=seeds(1))
    b = dict(arrays(seed=1), **{"kmer.data": a["kmer.data"]})
    out, manifest = _received(tmp_path, s1, b, leave_out=("kmer.data",))
    files = sorted(p.name for p in (tmp_path / "home" / "arrays").rglob("*.npy"))
    with pytest.raises(
        KitError, match="kmer.data: not sent back, as the store held an equal array"
    ):
        store.put_run(s1, out, manifest, held=held)
    assert not store.has_run(s1.run_id)
    assert sorted(p.name for p in (tmp_path / "home" / "arrays").rglob("*.npy")) == files
    assert len(list(out.iterdir())) == len(b) - 1  # nothing moved: the next try has it all


def test_a_run_interrupted_while_indexed_leaves_no_verified_row_and_resumes(tmp_path, monkeypatch):
    """The run's rows and its files' verified identities are one transaction: cut short, none
    of it is written (the moved files are orphans the repair sweeps), and storing it again
    stores it whole."""
    import kit.runs.store.moving as moving

    store = Store(tmp_path / "home")
    s = spec()
    out, manifest = _received(tmp_path, s, arrays())

    def cut(_):
        raise KeyboardInterrupt

    monkeypatch.setattr(moving, "run_subject", cut)
    with pytest.raises(KeyboardInterrupt):
        store.put_run(s, out, manifest)
    assert not store.has_run(s.run_id)
    assert store.db.execute("SELECT count(*) FROM verified").fetchone()[0] == 0
    monkeypatch.undo()
    out, manifest = _received(tmp_path, s, arrays(), name="again")
    store.put_run(s, out, manifest)
    assert store.has_run(s.run_id) and store.has_arrays(s.run_id)
    assert np.array_equal(store.array(s.run_id, "knn"), arrays()["knn"])
    assert store.db.execute("SELECT count(*) FROM verified").fetchone()[0] == len(
        set(store.stage_blobs(s.run_id).values())
    )


def test_held_blobs_are_the_verified_arrays_of_the_datasets_last_runs(tmp_path):
    store = Store(tmp_path / "home")
    put(store, tmp_path, spec(), arrays())
    put(store, tmp_path, spec(dataset="e" * 64), arrays(seed=5))
    mine = set(store.stage_blobs(spec().run_id).values())
    assert store.held_blobs("d" * 64) == mine
    assert store.held_blobs("f" * 64) == frozenset()
    with store._tx() as db:
        db.execute("DELETE FROM verified")
    assert store.held_blobs("d" * 64) == frozenset()  # never verified here: not held
