"""kit.core.numbers: one notation for a measured number, wherever kit prints one."""

from kit.core.numbers import fmt


def test_one_notation_from_1e_3_up_and_e_notation_below_and_above():
    assert fmt(4.2e-3) == "0.0042" and fmt(0.01026, 4) == "0.01026"  # the report's two, alike
    assert fmt(8.6e-3) == "0.0086" and fmt(1e-3) == "0.001" and fmt(3.6e-4) == "3.6e-04"
    assert fmt(5.3e-05) == "5.3e-05" and fmt(2.25e-13) == "2.3e-13" and fmt(12345.0) == "1.2e+04"
    assert fmt(0.404) == "0.404" and fmt(2.0) == "2" and fmt(0) == "0" and fmt(None) == "-"
    assert fmt(float("nan")) == "n/a" and fmt(3) == "3"


def test_the_line_is_drawn_on_the_number_as_printed():
    # just under 1e-3 rounds to 0.001: it reads as 0.001 does, not 1.0e-03 over 0.001
    assert fmt(0.001) == "0.001" and fmt(0.00099996) == "0.001" and fmt(9.96e-4) == "0.001"
    assert fmt(-9.96e-4) == "-0.001" and fmt(9.4e-4) == "9.4e-04"
    # just under 1e4 that rounds to 1e4 is e-notation; the rest below 1e4 is plain
    assert fmt(9999.7) == "1.0e+04" and fmt(1234.0) == "1230" and fmt(9994.0) == "9990"


def test_a_forged_duration_reads_as_an_unknown_time():
    from kit.core.numbers import span

    # JSON reads -Infinity and NaN: a bundle's wall_s may be either, and round(-inf) raised
    for x in (float("-inf"), float("inf"), float("nan"), -3.0, None, True):
        assert span(x) == "an unknown time"
    assert (span(0), span(40.4), span(12 * 60), span(3.5 * 3600)) == (
        "1 s",
        "40 s",
        "12 min",
        "3.5 h",
    )
