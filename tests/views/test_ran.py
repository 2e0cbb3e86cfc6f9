"""What `kit run` prints after its runs: the factors it ran in the order the user gave them."""

from types import SimpleNamespace as NS

from kit.views.ran import asked_factors, run_text


def test_the_factors_run_keep_the_order_given_then_those_of_their_pairs():
    pairs = [NS(factor="seed"), NS(factor="host"), NS(factor="seed")]
    asked = asked_factors(("threads", "seed"), pairs)
    assert asked == ["threads", "seed", "host"]  # a set's order changed between processes
    b = {"rows": [NS(factor="repeat")], "dataset": {"name": "synthetic-120"}}
    text = run_text(b, asked, "kit budget")
    assert "no pairs of threads, seed, host stored on this dataset" in text
    assert text.endswith("also stored: repeat (every factor: kit budget)")


def test_a_run_that_stored_none_of_its_pairs_says_so_and_advises_no_other_factor():
    """Every pair skipped on a fresh store: the page says none of the factor's pairs is
    stored, not the empty store's `run kit run --factor repeat first` (a factor not run)."""
    b = {"rows": [], "dataset": {"name": "synthetic-150"}}
    text = run_text(b, ["threads"], "kit budget")
    assert "no pairs of threads stored on this dataset" in text
    assert "repeat" not in text and "also stored" not in text
