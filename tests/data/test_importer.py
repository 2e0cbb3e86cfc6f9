"""kit.data.importer and `kit data import`: every row imported or rejected, never skipped.

Files are written in the formats biologists have: a plain TSV, a UniProt TSV export (the
columns the website and REST API give), UniProt FASTA, and kit's own FASTA with label=.
"""

import os
from pathlib import Path

import pytest

from kit.cli import main
from kit.core.errors import KitError
from kit.core.paths import kit_home
from kit.data import load_dataset, stored_datasets
from kit.data.dataset import make_dataset
from kit.data.importer import MIN_RECORDS, _read, import_file
from kit.data.sink import Sink


def read_records(path) -> list:
    """[(accession, sequence, label, organism)] of a TSV or FASTA file, residues unchecked, as
    import_file's reader reads it (the first rejected row refused)."""
    with Sink(Path(path), check=False) as sink:
        _read(Path(path), sink)
        if sink.rejects:
            sink.refuse_rejects()
        return list(zip(*sink.columns(), strict=True))


SEQ = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQ"  # 66 aa
N = MIN_RECORDS + 20
TM = 'TRANSMEM 52..81; /note="Helical; Name=1"; /evidence="ECO:0000305|PubMed:29872227"'


def write(tmp_path, name, text, encoding="utf-8"):
    p = tmp_path / name
    p.write_text(text, encoding=encoding)
    return p


def rows(n=N, start=0):
    return "".join(f"P{i}\t{SEQ}\t{i % 2}\n" for i in range(start, start + n))


def test_tsv_with_header_and_organism(tmp_path):
    p = write(
        tmp_path,
        "a.tsv",
        "accession\tsequence\tlabel\torganism\n"
        + "".join(f"P{i}\t{SEQ}\t{i % 2}\thuman\n" for i in range(9)),
    )
    recs = read_records(p)
    assert len(recs) == 9 and recs[1] == ("P1", SEQ, 1, "human")


def test_a_uniprot_tsv_export_is_read_by_its_column_names(tmp_path):
    """Entry, Organism, Sequence, Transmembrane as UniProt writes them, with an extra column."""
    lines = ["Entry\tEntry Name\tOrganism\tSequence\tTransmembrane"]
    lines += [
        f"Q{i:05d}\tX{i}_HUMAN\tHomo sapiens (Human)\t{SEQ}\t{TM if i % 3 == 0 else ''}"
        for i in range(N)
    ]
    p = write(tmp_path, "uniprot.tsv", "\n".join(lines) + "\n")
    ds, dropped = import_file(p, "uni")
    assert dropped == {} and ds.n == N
    labels = dict(zip(ds.ids, ds.labels, strict=True))
    assert labels["Q00000"] == 1 and labels["Q00001"] == 0  # as `kit data fetch` derives it
    assert set(ds.organisms) == {"Homo sapiens (Human)"}


def test_uniprot_fasta_headers_give_accession_and_organism(tmp_path):
    body = "".join(
        f">sp|P{i:05d}|NAME{i}_YEAST Some protein OS=Saccharomyces cerevisiae (strain "
        f"ATCC 204508) OX=559292 GN=ABC{i} PE=1 SV=2 label={i % 2}\n{SEQ[:40]}\n{SEQ[40:]}\n"
        for i in range(N)
    )
    recs = read_records(write(tmp_path, "u.fasta", body))
    assert recs[1] == ("P00001", SEQ, 1, "Saccharomyces cerevisiae (strain ATCC 204508)")


def test_fasta_labels_in_header(tmp_path):
    p = write(
        tmp_path,
        "a.fasta",
        f">P1 label=1 organism=yeast\n{SEQ[:30]}\n{SEQ[30:]}\n>P2 label=false\n{SEQ}\n",
    )
    assert read_records(p) == [("P1", SEQ, 1, "yeast"), ("P2", SEQ, 0, "")]


@pytest.mark.parametrize(
    "text, why",
    [
        (f">P1\n{SEQ}\n", "no label=0|1"),
        (f">P1 label=1 label=0\n{SEQ}\n", "repeats label="),
        (f"P1\t{SEQ}\t2\n" + rows(), "label '2' is not 0/1"),  # was silently a "header"
        (f"P1\t{SEQ}\tTM\nP2\t{SEQ}\tnone\n" + rows(start=3), "nor is it a header"),
        (rows(5) + f" \t{SEQ}\t1\n", "empty accession"),
        (rows(5) + f"P9\t{SEQ}\n", "expected 3 or 4 tab-separated columns"),
        ("id\tsequence\n" + rows(), r"no label \(or Transmembrane\) column"),
    ],
    ids=[
        "fasta-no-label",
        "fasta-two-labels",
        "label-2-first",
        "bad-labels-first",
        "empty-accession",
        "short-row",
        "header-without-label",
    ],
)
def test_every_row_is_imported_or_refused_never_skipped(tmp_path, text, why):
    p = write(tmp_path, "a.fasta" if text.startswith(">") else "a.tsv", text)
    with pytest.raises(KitError, match=why):
        import_file(p, "mine")
    assert stored_datasets() == []


def test_filter_drops_and_counts_every_row_it_does_not_import(tmp_path):
    p = write(
        tmp_path, "a.tsv", f"P1\t{SEQ}\tTM\nPX\t{SEQ}X\t1\nPS\t{SEQ[:20]}\t0\n" + rows(start=3)
    )
    ds, dropped = import_file(p, "mine", filter_bad=True)
    assert dropped == {
        "unreadable rows": 1,
        "non-standard residues": 1,
        "lengths outside 60-700": 1,
    }
    assert ds.n == N and not {"P1", "PX", "PS"} & set(ds.ids)
    assert ds.meta["dropped"] == 3


def test_a_byte_order_mark_is_not_part_of_the_first_accession(tmp_path):
    p = write(tmp_path, "bom.tsv", "accession\tsequence\tlabel\n" + rows(), encoding="utf-8-sig")
    assert read_records(p)[0][0] == "P0"


def test_nothing_parses_says_what_was_expected_and_what_the_first_line_held(tmp_path):
    p = write(tmp_path, "a.tsv", "# only a comment\n\n")
    with pytest.raises(KitError, match="no records found; expected a header naming accession"):
        read_records(p)


@pytest.mark.parametrize(
    "text, why",
    [
        (rows(20), f"20 usable records; the pipeline needs at least {MIN_RECORDS}"),
        ("".join(f"P{i}\t{SEQ}\t0\n" for i in range(N)), "holds only label 0"),
    ],
)
def test_files_the_pipeline_cannot_run_on_are_refused_at_import(tmp_path, text, why):
    with pytest.raises(KitError, match=why):
        import_file(write(tmp_path, "a.tsv", text), "mine")
    assert stored_datasets() == []


def test_bad_records_are_named_and_nothing_is_stored(tmp_path):
    p = write(tmp_path, "a.tsv", rows() + f"BAD1\t{SEQ}X\t1\nSHORT\t{SEQ[:20]}\t1\n")
    with pytest.raises(
        KitError,
        match=r"a.tsv: 2 record\(s\) rejected: BAD1: non-standard "
        r"residue\(s\) X \(line 121\); SHORT: length 20 outside 60-700 "
        r"\(line 122\); fix those lines",
    ):
        import_file(p, "mine")
    assert stored_datasets() == []
    ds, dropped = import_file(p, "mine", filter_bad=True)
    assert sum(dropped.values()) == 2 and ds.n == N and "BAD1" not in ds.ids


def test_no_shuffle_keeps_order(tmp_path):
    p = write(tmp_path, "a.tsv", rows())
    ds, _ = import_file(p, "kept", shuffle=False)
    assert list(ds.ids) == [f"P{i}" for i in range(N)] and ds.n_train == N - int(N * 0.333)
    assert load_dataset("kept").sha256 == ds.sha256


def test_reimport_refuses_other_content_without_replace(tmp_path):
    a, b = write(tmp_path, "a.tsv", rows()), write(tmp_path, "b.tsv", rows(start=1000))
    first, _ = import_file(a, "mine")
    assert import_file(a, "mine")[0].sha256 == first.sha256  # the same file again: idempotent
    with pytest.raises(KitError, match="already exists .* pass --replace"):
        import_file(b, "mine")
    assert load_dataset("mine").sha256 == first.sha256
    assert (
        import_file(b, "mine", replace=True)[0].sha256
        == load_dataset("mine").sha256
        != first.sha256
    )


@pytest.mark.parametrize(
    "name", ["synthetic", "synthetic-600", "swissprot", "x" * 300, ".hidden", "a/b"]
)
def test_reserved_and_bad_names(tmp_path, name):
    with pytest.raises(KitError, match="reserved|dataset name"):
        import_file(write(tmp_path, "a.tsv", rows()), name)


def test_devices_pipes_and_folders_are_refused_without_reading(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # reading it would block forever
    for path in ("/dev/zero", fifo, tmp_path):
        with pytest.raises(KitError, match="not a regular file"):
            read_records(path)


def test_cli_import_and_errors(tmp_path, capsys):
    p = write(tmp_path, "a.tsv", rows())
    assert main(["data", "import", str(p), "--name", "mine"]) == 0
    assert f"imported {N} proteins as 'mine'" in capsys.readouterr().out
    dup = write(tmp_path, "d.tsv", rows() + f"P1\t{SEQ}\t0\n")
    assert main(["data", "import", str(dup), "--name", "dup"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "appears more than once (first on line 2)" in err
    assert main(["data", "import", str(tmp_path / "missing.tsv"), "--name", "x"]) == 1
    assert "cannot read" in capsys.readouterr().err
    assert main(["data", "import", str(p), "--name", "synthetic"]) == 1


def test_import_help_shows_the_formats(capsys):
    with pytest.raises(SystemExit):
        main(["data", "import", "--help"])
    out = capsys.readouterr().out
    assert "Transmembrane" in out and "label=1" in out and "--replace" in out


# -- the file is read as a stream: bounded, and a bad byte is one line naming its line ----------
def _fixtures():
    """Files as biologists have them; their datasets' sha256 were measured before the importer
    streamed (whole-file read), and must not change."""
    uni = ["Entry\tEntry Name\tOrganism\tSequence\tTransmembrane"]
    uni += [
        f"Q{i:05d}\tX{i}_HUMAN\tHomo sapiens (Human)\t{SEQ[i % 7 :]}{SEQ[: i % 5]}\t"
        f"{TM if i % 3 == 0 else ''}"
        for i in range(120)
    ]
    fasta = "".join(
        f">sp|P{i:05d}|N{i}_YEAST Some protein OS=Saccharomyces cerevisiae OX=559292 "
        f"GN=A{i} PE=1 SV=2 label={i % 2}\n{SEQ[:40]}\n{SEQ[40:]}{'W' * (i % 9)}\n\n"
        for i in range(120)
    )
    crlf = "\ufeff# a comment\r\n\r\naccession\tsequence\tlabel\torganism\r\n" + "".join(
        f"P{i}\t{SEQ.lower() if i % 4 == 0 else SEQ}{'A' * (i % 11)}\t{('yes', 'no')[i % 2]}\t"
        "mouse\r\n"
        for i in range(120)
    )
    return {"uniprot.tsv": "\n".join(uni) + "\n", "uniprot.fasta": fasta, "crlf.tsv": crlf}


@pytest.mark.parametrize(
    "name, shuffle, sha",
    [
        ("uniprot.tsv", True, "50654fb03983f1a71d9e0cf98103366e534c9563c2e181860079e1b0f3843068"),
        ("uniprot.tsv", False, "8f2a1409208b021f3b4a9ef45014f9e7b27f7654eb0c4c5b22c1b9f7b2557597"),
        ("uniprot.fasta", True, "68850431873971d78435ce5345dfee5b8bf07f089ac2f47c97b1ad291b0c72fe"),
        (
            "uniprot.fasta",
            False,
            "7212b8e23b3e6b1c5dbe350ebb693496703c741098d6f6f5f83c82b0dbe03516",
        ),
        ("crlf.tsv", True, "2b7995fbec719701103b40cf105762aa37035f80a93d258560d935bb0973db23"),
        ("crlf.tsv", False, "273a5b7240a8cf9b8aa84ede55287508e91b06045744d192f72e6e8fee5d2b58"),
    ],
)
def test_streaming_gives_the_same_dataset_byte_for_byte(tmp_path, name, shuffle, sha):
    p = tmp_path / name
    p.write_bytes(_fixtures()[name].encode())
    ds, dropped = import_file(p, "fixture", shuffle=shuffle)
    assert (ds.sha256, ds.n, dropped) == (sha, 120, {})
    assert load_dataset("fixture").sha256 == sha  # the stored file re-hashes to the same


def test_the_size_limit_is_named_and_can_be_raised(tmp_path, capsys, monkeypatch):
    p = write(tmp_path, "big.tsv", rows() * 200)  # about 2.1 MiB, duplicates past the limit
    monkeypatch.setenv("KIT_IMPORT_MAX_MIB", "1")
    assert main(["data", "import", str(p), "--name", "big"]) == 1
    err = capsys.readouterr().err
    assert (
        len(err.strip().splitlines()) == 1
        and "at most 1 MiB of proteins are imported (set KIT_IMPORT_MAX_MIB to raise the limit)"
        in err
    )
    monkeypatch.setenv("KIT_IMPORT_MAX_MIB", "3")
    with pytest.raises(KitError, match="appears more than once"):  # read, past the old limit
        import_file(p, "big")
    monkeypatch.setenv("KIT_IMPORT_MAX_MIB", "lots")
    with pytest.raises(KitError, match="KIT_IMPORT_MAX_MIB must be a size in MiB"):
        import_file(p, "big")
    assert stored_datasets() == []


def test_a_non_utf8_byte_after_many_blank_lines_names_its_line(tmp_path, capsys):
    p = tmp_path / "latin1.tsv"
    p.write_bytes(
        b"\n" * 3_000_000 + rows(5).encode() + f"P9\t{SEQ}\t1\tS\xe3o Paulo\n".encode("latin-1")
    )
    assert main(["data", "import", str(p), "--name", "x"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert (
        f"{p}:3000006: byte 0xe3 (column {len(SEQ) + 8}) is not UTF-8 text; save the file "
        "as UTF-8" in err
    )


def test_an_emoji_in_a_sequence_names_the_file_and_line(tmp_path):
    p = write(tmp_path, "e.tsv", rows() + f"P999\t{SEQ[:30]}\U0001f600{SEQ[31:]}\t1\n")
    with pytest.raises(
        KitError,
        match=f"e.tsv: 1 record\\(s\\) rejected: P999: non-standard "
        f"residue\\(s\\) \U0001f600 \\(line {N + 1}\\); fix those",
    ):
        import_file(p, "mine")


def test_only_newlines_or_one_endless_line_is_refused_with_one_line(tmp_path, capsys):
    blank = tmp_path / "blank.tsv"
    blank.write_bytes(b"\n" * (64 * 2**20))
    assert main(["data", "import", str(blank), "--name", "x"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and f"{blank}: no records found" in err
    endless = tmp_path / "endless.tsv"
    endless.write_bytes(b"P1\t" + b"A" * (5 * 2**20) + b"\t1\n")
    assert main(["data", "import", str(endless), "--name", "x"]) == 1
    assert f"{endless}:1: a line longer than 4 MiB is not a protein row" in capsys.readouterr().err


def test_a_long_fasta_record_is_dropped_with_its_true_length(tmp_path):
    long = ">PL label=1\n" + (SEQ + "\n") * 200  # 13,200 residues over 200 lines
    p = write(
        tmp_path, "l.fasta", "".join(f">P{i} label={i % 2}\n{SEQ}\n" for i in range(N)) + long
    )
    with pytest.raises(KitError, match=r"PL: length 13200 outside 60-700 \(line 241\)"):
        import_file(p, "mine")
    ds, dropped = import_file(p, "mine", filter_bad=True)
    assert dropped == {"lengths outside 60-700": 1} and ds.n == N


# -- kept records are spilled, not held: a refused file costs no memory for the rows before it --
def test_a_file_refused_at_its_end_never_held_its_earlier_rows(tmp_path):
    import tracemalloc

    p = write(tmp_path, "late.tsv", rows(200_000) + f"PX\t{SEQ}X\t1\n")  # 15 MB, X in the last row
    tracemalloc.start()
    try:
        with pytest.raises(KitError, match=r"PX: non-standard residue\(s\) X \(line 200001\)"):
            import_file(p, "late")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # holding the 200,000 rows read before the bad one costs ~3x the file (49 MB); spilled, the
    # import allocates its read and write buffers only (~5 MB)
    assert peak < p.stat().st_size / 2
    assert stored_datasets() == [] and os.listdir(kit_home() / "datasets") == []


def test_the_spill_is_gone_after_every_exit_and_repeats_are_found_at_read_back(tmp_path):
    folder = kit_home() / "datasets"
    dup = write(tmp_path, "d.tsv", rows(30_000) + f"P7\t{SEQ}\t0\n" + rows(5, 30_000))
    with pytest.raises(
        KitError,
        match=r"d.tsv:30001: accession 'P7' appears more than once "
        r"\(first on line 8\)",
    ):
        import_file(dup, "dup")
    few = write(tmp_path, "few.tsv", rows(MIN_RECORDS - 1))
    with pytest.raises(KitError, match="usable records"):
        import_file(few, "few")
    ok = write(tmp_path, "ok.tsv", rows(30_000))
    ds, _ = import_file(ok, "ok")
    assert ds.n == 30_000 and sorted(os.listdir(folder)) == ["ok.json"]
    # read back straight into split order: the same dataset as shuffling the records in memory
    assert ds == make_dataset("ok", "import:ok.tsv", *zip(*read_records(ok), strict=True))
