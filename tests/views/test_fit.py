"""kit.views.fit: tables fit the width, a wrapped cell breaks between words or at a separator,
never inside a word, and a piece too wide for any line is shortened with an ellipsis."""

import pytest

from kit.views.fit import fitted, para, table, unwrapped, wrap_cell


@pytest.mark.parametrize(
    "text, w, lines",
    [
        ("lib: mkl 2024.2.2-Product", 12, ["lib: mkl", "2024.2.2-", "Product"]),
        ("linux-x86_64", 9, ["linux-", "x86_64"]),
        ("a/long/path/to/python", 12, ["a/long/path/", "to/python"]),
        ("one, two, three", 9, ["one, two,", "three"]),
        ("abcdefghijklmnopq", 6, ["abcde…"]),  # one piece wider: shortened, never cut in two
        # kit runs piped: "OPENBLAS_" / "CORETYPE=Sandybri" / "dge" before
        (
            "1t seed 0 OPENBLAS_CORETYPE=Sandybridge",
            18,
            ["1t seed 0", "OPENBLAS_CORETYPE=", "Sandybridge"],
        ),
        ("1t seed svd=1,kmeans=0,mlp=0", 16, ["1t seed svd=1,", "kmeans=0,mlp=0"]),  # items whole
        ("=<==<<>>==<<", 8, ["=<==<<>…"]),  # a verdict per run: marks, no separator in them
        ("short", 12, ["short"]),
        ("1t seed 0 repeat 1", 17, ["1t seed 0", "repeat 1"]),  # kit runs at 80 columns
        ("seed 0", 4, ["seed", "0"]),  # a word and its value wider than the column: split
    ],
)
def test_a_cell_breaks_at_spaces_and_separators_first(text, w, lines):
    assert wrap_cell(text, w).splitlines() == lines


def test_a_wrapped_table_column_keeps_words_whole(monkeypatch):
    monkeypatch.setenv("COLUMNS", "22")  # room for 15 columns in the wrapped one
    text = table(
        [["blas", "lib: mkl 2024.2.2-Product, on linux-x86_64"]], ["check", "found"], wrap=(1,)
    )
    assert max(len(x) for x in text.splitlines()) <= 22
    cells = [line[7:].strip() for line in text.splitlines()[2:]]
    # tabulate's own wrap gave "lib: mkl 2024" / ".2.2-Product,"
    assert cells == ["lib: mkl", "2024.2.2-", "Product, on", "linux-x86_64"], cells


def test_kit_runs_at_80_columns_keeps_repeat_1_together(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # kit runs' columns, with its longest stack name
    rows = [
        ["45a4872c6d25", "synthetic-1000", "py39-openblas-sk161", "1t seed 0 repeat 1", "0.52"],
        ["0a5d351b9e01", "synthetic-1000", "host", "1t seed svd=1,kmeans=0,mlp=0", "0.61"],
    ]
    text = table(rows, ["run", "dataset", "stack", "what distinguishes it", "wall s"], wrap=(3,))
    assert max(len(x) for x in text.splitlines()) <= 80
    assert "repeat 1" in text and not any(x.split()[-1:] == ["repeat"] for x in text.splitlines())
    assert "\n\n" not in text  # one table: the long header wraps rather than splitting it


def test_a_wrapped_header_keeps_its_words_and_a_narrow_column_gives_its_room_away(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    rows = [
        [
            "28abcbe2b64e",
            "pipeline two_models.py 87877e96fe4c",
            "host",
            "1t seed split=1,forest=0",
            "2.73",
        ]
    ]
    text = table(rows, ["run", "dataset", "stack", "what distinguishes it", "wall s"], wrap=(1, 3))
    assert max(len(x) for x in text.splitlines()) <= 80 and "\n\n" not in text
    assert "distinguishes" in text  # "distinguis" / "hes it" before
    assert "two_models.py" in text and "two_\n" not in text  # a word that fits: whole
    assert "1t seed split=1,forest=0" in text  # the room the dataset did not use
    monkeypatch.setenv("COLUMNS", "21")  # no room at all for a wrapped column: still ends
    assert table(rows, ["run", "dataset", "stack", "setting", "wall s"], wrap=(1, 3))
    assert wrap_cell("abc", 0) == "a"


def test_a_paragraph_keeps_no_run_of_spaces_from_how_its_text_was_assembled():
    """`kit data split ... --homology | cat` printed "rounds;     no search edge": a message
    split over source lines with "\\n    " came out of textwrap as five spaces (#43)."""
    text = (
        "GraphPart's partitioning of 1,234 search edges at 30% identity, 80% coverage\n    "
        "(MMseqs2 15; reused): 12 moved, 3 removed in 4 rounds;\n    no search edge joins "
        "train and test,  twice\tspaced"
    )
    for w in (40, 80, 200):
        with fitted(w):
            out = para(text, "      ", "  ")
        lines = out.splitlines()
        assert all("  " not in ln.strip() and len(ln) <= w for ln in lines), (w, lines)
        assert " ".join(out.split()) == " ".join(text.split())  # every word, in order
    unwrapped()  # --wide: one line, the same words, one space between them
    try:
        assert para(text, "    ", "  ") == "  " + " ".join(text.split())
    finally:
        unwrapped(False)


def test_each_thread_fits_its_own_width_at_once():
    """The width is a context's, not the process's (issue 55: the TUI's workers took turns
    behind a lock): two threads fitting 40 and 100 columns at once each get their own, and
    neither leaves its width (or a shortened cell) behind."""
    import threading

    from kit.views import fit

    seen, start, before = {}, threading.Barrier(2), fit.width()

    def render(columns):
        with fit.fitted(columns):
            start.wait()
            seen[columns] = [fit.width() for _ in range(200)]

    threads = [threading.Thread(target=render, args=(c,)) for c in (40, 100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(seen[40]) == {40} and set(seen[100]) == {100}
    assert fit.width() == before and not fit.shortened()
