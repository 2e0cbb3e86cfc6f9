"""Significant digits: the field's definitions, checked against the significantdigits package,
and on real runs whose answer is known (repeat: all, threads: ~13, float32: ~7)."""

import numpy as np
import pytest

from kit.analysis.digits import agreement, element_bits


@pytest.mark.parametrize("case", ["noise", "float32", "same", "offset", "signs"])
def test_every_element_agrees_with_the_significantdigits_package(case):
    sd = pytest.importorskip("significantdigits")
    rng = np.random.default_rng(1)
    a = rng.normal(size=2000)
    b = {
        "noise": a * (1 + rng.normal(size=a.size) * 1e-11),
        "float32": a.astype(np.float32).astype(np.float64),
        "same": a.copy(),
        "offset": a + 1e-3,
        "signs": -a,
    }[case]
    ref = sd.significant_digits(
        b[None, :], reference=a, method="general", error="relative", basis=2, axis=0
    )
    assert np.array_equal(np.asarray(ref, float), element_bits(a, b))


def test_bitwise_identical_keeps_every_bit_of_its_dtype_and_zeros_are_handled():
    a = np.array([0.0, 1.0, 2.0, 0.0])
    assert agreement(a, a)["bits"] == 52 and agreement(a, a)["digits"] == pytest.approx(15.65, 0.01)
    f = a.astype(np.float32)
    assert agreement(f, f)["bits"] == 23
    b = np.array([0.0, 1.0, 2.0, 1e-300])  # a zero reference against anything else keeps nothing
    assert agreement(a, b)["bits_min"] == 0 and agreement(a, b)["bits"] == 52
    assert agreement(a, a[:2]) is None and agreement(np.arange(3), np.arange(3)) is None


def test_rounding_to_float32_keeps_about_seven_digits():
    a = np.random.default_rng(0).normal(size=10_000)
    d = agreement(a, a.astype(np.float32))
    assert 6.9 <= d["digits"] <= 8.0 and d["max_bits"] == 52


@pytest.mark.slow
def test_known_pairs_on_real_runs(on_every_kind):
    from kit.analysis.budget import pair_details
    from kit.app.selection import own_datasets
    from kit.runs.store import Store

    store = Store()
    # kit's own pipeline's pairs (the store's lab pipeline has outputs of its own names)
    pairs = [p for d in own_datasets(store) for p in pair_details(store, d)]

    def digits(factor, stage, level=None):
        return [
            p["comparison"].digits[stage]["digits"]
            for p in pairs
            if p["factor"] == factor and (level is None or p["level"] == level)
        ]

    assert digits("repeat", "svd_rand") and all(
        d == pytest.approx(15.65, 0.01) for d in digits("repeat", "svd_rand")
    )
    # float32 input: the TF-IDF values are float64's rounded to float32
    assert all(6.5 <= d <= 8.0 for d in digits("precision", "tfidf"))
    # the embedding rounded to float32 (perturb's float32 level): the same rounding, ~7 digits
    assert all(6.5 <= d <= 8.0 for d in digits("perturb", "svd_rand", "float32"))
    if on_every_kind["threads"]:  # a threads pair: identical, or ~13 digits (BLAS reductions)
        assert all(11.0 <= d <= 15.7 for d in digits("threads", "svd_rand"))


def _bits_by_the_formula(a, b):
    """element_bits as the module docstring writes it, with a copy per step (the reference)."""
    m = int(np.finfo(np.result_type(a.dtype, b.dtype, np.float32)).nmant)
    a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    with np.errstate(divide="ignore", invalid="ignore"):
        bits = np.floor(-np.log2(np.abs(b64 / a64 - 1.0)))
    bits = np.clip(np.nan_to_num(bits, nan=0.0, posinf=m, neginf=0.0), 0, m)
    bits[a64 == 0] = np.where(b64[a64 == 0] == 0, m, 0)
    bits[np.isnan(a64) | np.isnan(b64)] = 0
    return bits


@pytest.mark.parametrize("seed", range(6))
def test_element_bits_in_place_equals_the_formula_with_zeros_nans_and_infinities(seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=3000) * 10.0 ** rng.integers(-30, 30, size=3000)
    b = a * (1 + rng.normal(size=a.size) * 10.0 ** -rng.integers(1, 16, size=a.size))
    a[rng.integers(0, a.size, 20)] = 0.0
    b[rng.integers(0, a.size, 20)] = 0.0
    b[rng.integers(0, a.size, 5)] = np.nan
    a[rng.integers(0, a.size, 5)] = np.inf
    b[:10] = a[:10]  # equal numbers, zeros among them
    for x, y in ((a, b), (a.astype(np.float32), b.astype(np.float32)), (a, b.astype(np.float32))):
        with np.errstate(over="ignore", invalid="ignore"):
            want = _bits_by_the_formula(x, y)
        got = element_bits(x, y)
        assert got.dtype == want.dtype and np.array_equal(got, want)
