"""kit.store: content-addressed arrays, one transaction per run, refusal of bad bytes."""

import numpy as np
import pytest

from kit.errors import KitError
from kit.store import Store
from stored import arrays, put, spec


def test_put_and_read_back(tmp_path):
    store = Store(tmp_path / "home")
    s = spec()
    a = arrays()
    put(store, tmp_path, s, a)
    assert store.has_run(s.run_id)
    run = store.run(s.run_id)
    assert run["spec"]["threads"] == 1 and run["stages"]["svd_rand"]["shape"] == [60, 8]
    assert np.array_equal(store.array(s.run_id, "knn"), a["knn"])
    assert [r["id"] for r in store.runs("d" * 64)] == [s.run_id]
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
    manifest = {"stages": {"knn": {"sha256": "0" * 64}}, "env": {}}
    with pytest.raises(KitError, match="do not match"):
        store.put_run(s, out, manifest)
    assert not store.has_run(s.run_id) and store.runs() == []


def test_store_survives_reopen(tmp_path):
    put(Store(tmp_path / "home"), tmp_path, spec(), arrays())
    assert Store(tmp_path / "home").has_run(spec().run_id)
