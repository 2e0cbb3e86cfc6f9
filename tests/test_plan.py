"""kit.plan: each factor's pairs differ in exactly the thing the factor names."""

import pytest

from kit.errors import KitError
from kit.plan import FACTORS, PlanOptions, plan

D = "d" * 64


def diff(p):
    a, b = p.a.__dict__, p.b.__dict__
    return {k for k in a if a[k] != b[k]}


def pairs(factor, **opts):
    return plan(factor, D, PlanOptions(**opts))


def test_repeat_is_the_null_experiment():
    ps = pairs("repeat", threads=(1, 2, 4))
    assert len(ps) == 3 and all(diff(p) == {"replicate"} for p in ps)


def test_threads_against_one():
    ps = pairs("threads", threads=(1, 2, 4))
    assert [(p.a.threads, p.b.threads) for p in ps] == [(1, 2), (1, 4)]
    with pytest.raises(KitError):
        pairs("threads", threads=(1,))


def test_seed_defaults_to_the_papers_nine_pairs():
    ps = pairs("seed")
    assert len(ps) == 9 and all(diff(p) == {"seeds"} for p in ps)
    assert all(set(p.a.seed_dict.values()) == {0} for p in ps)
    assert set(ps[-1].b.seed_dict.values()) == {9}


@pytest.mark.parametrize("factor,moved", [("seed:svd", {"svd"}), ("seed:kmeans", {"kmeans"}),
                                          ("seed:models", {"mlp", "hgb", "rf"})])
def test_named_seed_factors_move_only_their_seed(factor, moved):
    for p in pairs(factor, seeds=(0, 1, 2)):
        a, b = p.a.seed_dict, p.b.seed_dict
        assert {k for k in a if a[k] != b[k]} == moved


def test_precision_at_one_and_most_threads():
    ps = pairs("precision", threads=(1, 2))
    assert [(p.a.threads, p.b.dtype) for p in ps] == [(1, "float32"), (2, "float32")]
    assert all(diff(p) == {"dtype"} for p in ps)


def test_svd_iters_levels():
    ps = pairs("svd-iters", seeds=(0, 1, 2), svd_iters=(5, 50))
    assert [p.level for p in ps] == ["5", "5", "50", "50"]
    assert all(p.a.svd_iters == int(p.level) and diff(p) == {"seeds"} for p in ps)


def test_unknown_factor_and_single_seed():
    with pytest.raises(KitError, match="unknown factor"):
        pairs("nope")
    with pytest.raises(KitError, match="two seeds"):
        pairs("seed", seeds=(3,))
    assert set(FACTORS) >= {"repeat", "threads", "seed", "precision", "svd-iters"}
