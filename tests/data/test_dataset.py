"""kit.data.dataset: split, hash, head, storage and refusal of a tampered file."""

import json

import pytest

from kit.core.errors import KitError
from kit.data.dataset import (
    SPLIT_SEED,
    load_dataset,
    make_dataset,
    n_train_for,
    save_dataset,
    stored_datasets,
)


def records(n):
    ids = [f"P{i:04d}" for i in range(n)]
    seqs = ["ACDEFGHIKLMNPQRSTVWY" * 4 for _ in range(n)]
    return ids, seqs, [i % 2 for i in range(n)], ["org"] * n


def test_split_is_the_papers_4002_1998():
    assert n_train_for(6000) == 4002
    assert 6000 - n_train_for(6000) == 1998


def test_shuffle_is_fixed_by_the_split_seed():
    a = make_dataset("a", "test", *records(30))
    b = make_dataset("b", "test", *records(30))
    c = make_dataset("c", "test", *records(30), split_seed=SPLIT_SEED + 1)
    assert a.ids == b.ids and a.sha256 == b.sha256
    assert a.ids != c.ids and a.sha256 != c.sha256
    assert sorted(a.ids) == records(30)[0]
    assert (a.n_train, a.n_test) == (21, 9)  # int(30 * 0.333) = 9 test


def test_no_shuffle_keeps_file_order():
    ds = make_dataset("a", "test", *records(30), shuffle=False)
    assert list(ds.ids) == records(30)[0] and ds.split_seed is None


def test_hash_covers_labels_and_cut():
    ids, seqs, labels, orgs = records(30)
    a = make_dataset("a", "t", ids, seqs, labels, orgs, shuffle=False)
    labels[0] ^= 1
    b = make_dataset("a", "t", ids, seqs, labels, orgs, shuffle=False)
    assert a.sha256 != b.sha256
    assert a.head(29).sha256 != a.sha256 and a.head(29).n == 29


def test_save_load_round_trip_and_tamper_refused(kit_home):
    ds = make_dataset("mine", "test", *records(12))
    path = save_dataset(ds)
    assert stored_datasets() == ["mine"]
    assert load_dataset("mine").sha256 == ds.sha256
    assert load_dataset("mine", 9).n == 9
    doc = json.loads(path.read_text())
    doc["labels"][0] ^= 1
    path.write_text(json.dumps(doc))
    with pytest.raises(KitError, match="does not match"):
        load_dataset("mine")


def test_unknown_dataset_is_a_clear_error():
    with pytest.raises(KitError, match="no dataset 'nope'"):
        load_dataset("nope")


def test_synthetic_is_cached_and_labelled(kit_home):
    ds = load_dataset("synthetic", 200)
    assert ds.synthetic and ds.summary()["synthetic"] and ds.name == "synthetic-200"
    assert load_dataset("synthetic", 200).sha256 == ds.sha256
    assert (kit_home / "datasets" / "synthetic-200.json").exists()
    with pytest.raises(KitError):
        load_dataset("synthetic", 50)


def test_the_file_a_worker_reads_is_verified_before_each_plan(tmp_path, capsys):
    """Editing labels in datasets/by-hash/<sha>.json changed every later run's results under
    the original hash, and `kit data verify` said ok."""
    import json

    from kit.cli import main
    from kit.data.dataset import dataset_path, verify_worker_file

    ds = load_dataset("synthetic", 120)
    path = dataset_path(ds)
    good = path.read_bytes()
    doc = json.loads(good)
    doc["labels"][0] = 1 - doc["labels"][0]
    path.write_text(json.dumps(doc, separators=(",", ":")))
    assert verify_worker_file(path) == "its records do not hash to its name"
    assert main(["data", "verify", "synthetic"]) == 1
    assert "damaged" in capsys.readouterr().err
    assert dataset_path(ds).read_bytes() == good  # the next plan rewrites it from the dataset
    assert verify_worker_file(path) is None


def test_a_full_disk_leaves_no_half_written_dataset(tmp_path, monkeypatch):
    import errno
    import os

    from kit.data.dataset import save_dataset, stored_datasets

    ds = load_dataset("synthetic", 120)

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(KitError, match="No space left on device; nothing was changed"):
        save_dataset(ds.__class__(**{**ds.__dict__, "name": "mine"}))
    assert "mine" not in stored_datasets()
    assert not list((tmp_path / "kit-home" / "datasets").glob(".*tmp"))


def test_ids_and_seqs_are_compact_and_hash_and_serialise_as_tuples(tmp_path):
    """Accessions and sequences are one buffer each (a tuple of str costs ~57 bytes a row more,
    issue 24's tiny-row import); they compare, hash, slice and serialise as the tuples did."""
    import hashlib

    from kit.data.dataset import _json_list, _worker_doc
    from kit.data.strings import Strings

    ids, seqs, labels, orgs = records(30)
    ids[3], seqs[4] = "P\u00e9\U0001f600", ""  # not only ASCII, and an empty row
    ds = make_dataset("a", "t", ids, seqs, labels, orgs, shuffle=False)
    assert isinstance(ds.ids, Strings) and isinstance(ds.seqs, Strings)
    assert ds.ids == tuple(ids) and list(ds.seqs) == seqs and ds.seqs[4] == "" == ds.seqs[-26]
    assert ds.ids[2:5] == ids[2:5] and isinstance(ds.ids[2:5], Strings) and ds.ids[5:2] == ()
    assert hash(ds.ids) == hash(tuple(ids)) and ids[3] in ds.ids and "X" not in ds.ids
    tuples = [tuple(ids), tuple(seqs), tuple(labels), tuple(orgs), ds.n_train]
    want = json.dumps(tuples, separators=(",", ":"))
    assert "".join(_json_list([ds.ids, ds.seqs, ds.labels, ds.organisms, ds.n_train])) == want
    assert ds.sha256 == hashlib.sha256(want.encode()).hexdigest()
    doc = json.loads(_worker_doc(ds))
    assert _worker_doc(ds) == json.dumps(doc, separators=(",", ":")).encode()
    path = save_dataset(ds)
    assert (
        path.read_bytes()
        == json.dumps(json.loads(path.read_text()), separators=(",", ":")).encode()
    )
    again = load_dataset("a")
    assert isinstance(again.seqs, Strings) and again == ds and again.head(10).ids == ids[:10]


def test_no_swissprot_yet_says_kit_data_fetch_makes_it(kit_home, capsys):
    from kit.cli import main

    assert main(["budget", "--dataset", "swissprot"]) == 1
    err = capsys.readouterr().err
    assert "no dataset 'swissprot'" in err and "`kit data fetch` downloads it" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert main(["budget", "--dataset", "mine"]) == 1  # another name: import it
    assert "kit data fetch" not in capsys.readouterr().err
