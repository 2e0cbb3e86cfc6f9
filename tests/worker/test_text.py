"""kit.worker.text: foreign text said as one printable line, and a long log kept by its ends."""

from kit.worker.text import LINE_CHARS, head_and_tail, one_line


def test_escapes_and_control_characters_never_reach_the_line():
    said = one_line("\x1b[31mred\x1b[0m\n\tnext\x1b]0;title\x07 line\x00\x7f\x9b2Jend")
    assert said == "red next line end"


def test_a_long_text_is_cut_at_the_limit_with_an_ellipsis():
    said = one_line("word " * 10**6)  # 5 MB: read only as far as a line can show
    assert len(said) == LINE_CHARS and said.endswith("…")
    assert one_line("x" * 10, limit=10) == "x" * 10
    assert one_line("x" * 11, limit=10) == "x" * 9 + "…"


def test_a_log_keeps_its_start_and_end_and_says_how_much_it_left_out():
    small = b"Traceback\nValueError: boom\n"
    assert head_and_tail(small, limit=64) is small
    kept = head_and_tail(b"a" * 100 + b"b" * 1000 + b"c" * 100, limit=200)
    assert kept.startswith(b"a" * 100) and kept.endswith(b"c" * 100)
    assert b"\n\xe2\x80\xa6 1,000 bytes left out \xe2\x80\xa6\n" in kept
