"""kit.data.importer and `kit data import`: TSV and FASTA, rejection, filtering, order."""

import pytest

from kit.cli import main
from kit.data import load_dataset, stored_datasets
from kit.data.importer import import_file, read_records
from kit.errors import KitError

SEQ = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQ"  # 66 aa


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_tsv_with_header_and_organism(tmp_path):
    p = write(tmp_path, "a.tsv", "accession\tsequence\tlabel\torganism\n"
              + "".join(f"P{i}\t{SEQ}\t{i % 2}\thuman\n" for i in range(9)))
    recs = read_records(p)
    assert len(recs) == 9 and recs[1] == ("P1", SEQ, 1, "human")


def test_fasta_labels_in_header(tmp_path):
    p = write(tmp_path, "a.fasta", f">P1 label=1 organism=yeast\n{SEQ[:30]}\n{SEQ[30:]}\n"
              f">P2 label=false\n{SEQ}\n")
    assert read_records(p) == [("P1", SEQ, 1, "yeast"), ("P2", SEQ, 0, "")]


def test_fasta_without_label_is_refused(tmp_path):
    p = write(tmp_path, "a.fasta", f">P1\n{SEQ}\n")
    with pytest.raises(KitError, match="no label"):
        read_records(p)


def test_bad_records_are_named_and_nothing_is_stored(tmp_path):
    rows = [f"P{i}\t{SEQ}\t0\n" for i in range(6)] + [f"BAD1\t{SEQ}X\t1\n", f"SHORT\t{SEQ[:20]}\t1\n"]
    p = write(tmp_path, "a.tsv", "".join(rows))
    with pytest.raises(KitError, match=r"2 record\(s\) rejected: BAD1: non-standard residue\(s\) X; SHORT: length 20"):
        import_file(p, "mine")
    assert stored_datasets() == []
    ds, dropped = import_file(p, "mine", filter_bad=True)
    assert dropped == 2 and ds.n == 6 and "BAD1" not in ds.ids


def test_no_shuffle_keeps_order(tmp_path):
    p = write(tmp_path, "a.tsv", "".join(f"P{i}\t{SEQ}\t{i % 2}\n" for i in range(9)))
    ds, _ = import_file(p, "kept", shuffle=False)
    assert list(ds.ids) == [f"P{i}" for i in range(9)] and ds.n_train == 7  # int(9 * 0.333) = 2 test
    assert load_dataset("kept").sha256 == ds.sha256


def test_cli_import_and_errors(tmp_path, capsys):
    p = write(tmp_path, "a.tsv", "".join(f"P{i}\t{SEQ}\t{i % 2}\n" for i in range(9)))
    assert main(["data", "import", str(p), "--name", "mine"]) == 0
    assert "imported 9 proteins as 'mine'" in capsys.readouterr().out
    dup = write(tmp_path, "d.tsv", f"P1\t{SEQ}\t1\nP1\t{SEQ}\t0\nP2\t{SEQ}\t0\n")
    assert main(["data", "import", str(dup), "--name", "dup"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "appears more than once" in err
    assert main(["data", "import", str(tmp_path / "missing.tsv"), "--name", "x"]) == 1
    assert main(["data", "import", str(p), "--name", "synthetic"]) == 1
