"""kit.views.fit: tables fit the width, and a wrapped cell breaks between words, not inside one."""

import pytest

from kit.views.fit import table, wrap_cell


@pytest.mark.parametrize("text, w, lines", [
    ("lib: mkl 2024.2.2-Product", 12, ["lib: mkl", "2024.2.2-", "Product"]),
    ("linux-x86_64", 9, ["linux-", "x86_64"]),
    ("a/long/path/to/python", 12, ["a/long/path/", "to/python"]),
    ("one, two, three", 9, ["one, two,", "three"]),
    ("abcdefghijklmnopq", 6, ["abcdef", "ghijkl", "mnopq"]),  # one token wider: cut, as it must
    ("short", 12, ["short"]),
])
def test_a_cell_breaks_at_spaces_and_separators_first(text, w, lines):
    assert wrap_cell(text, w).splitlines() == lines


def test_a_wrapped_table_column_keeps_words_whole(monkeypatch):
    monkeypatch.setenv("COLUMNS", "24")  # room for 13 columns in the wrapped one
    text = table([["blas", "lib: mkl 2024.2.2-Product, on linux-x86_64"]], ["check", "found"],
                 wrap=(1,))
    assert max(len(x) for x in text.splitlines()) <= 24
    cells = [line[9:].strip() for line in text.splitlines()[2:]]
    # tabulate's own wrap gave "lib: mkl 2024" / ".2.2-Product,"
    assert cells == ["lib: mkl", "2024.2.2-", "Product, on", "linux-x86_64"], cells
