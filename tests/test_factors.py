"""kit.core.factors: the one table every consumer reads. A factor added there (with its
planner) is planned, accepted by the CLI, offered by the TUI, ordered in the budget, explained by
magnitude, ranked and worded by the advice, and given a verdict set, with no other change."""

import re

import pytest

from kit.core import factors


@pytest.fixture
def new_factor(monkeypatch):
    """A new environment factor, "eps-env", planned as precision is: one table entry and a planner."""
    from kit.runs import plan

    f = factors.Factor("eps-env", "a made-up environment setting", factors.SINGLE,
                       factors.ENVIRONMENT, explained=r"^env:EPS_ENV$")
    table = factors.TABLE[:3] + (f,) + factors.TABLE[3:]  # after threads
    monkeypatch.setattr(factors, "TABLE", table)
    monkeypatch.setattr(factors, "FACTORS", {x.name: x for x in table})
    monkeypatch.setattr(factors, "_PATTERNS", {**factors._PATTERNS, "eps-env": re.compile(f.explained)})

    def planner(ctx):
        base = ctx.base()
        return [plan.Pair(ctx.factor, "", base, base.with_(env=(("EPS_ENV", "1"),)), "off vs on")]

    monkeypatch.setitem(plan.PLANNERS, "eps-env", planner)
    return f


def test_every_consumer_reads_the_table(new_factor, tmp_path, monkeypatch):
    from kit.analysis.advice import advise
    from kit.analysis.amplify import explain
    from kit.analysis.budget import budget
    from kit.analysis.records import BudgetRow, ModelBudget
    from kit.analysis.verdicts import verdict_sets
    from kit.cli.common import factors as factor_arg
    from kit.envs.stacks import Stack
    from kit.runs.availability import availability
    from kit.runs.plan import Pair, plan
    from kit.core.spec import seeds
    from kit.runs.store import Store
    from stored import arrays, env, flipped, put, spec

    assert factor_arg("eps-env") == ("eps-env",)  # the CLI accepts it
    assert "eps-env" in {r["factor"] for r in availability()}  # the TUI's Plan list offers it
    pairs = plan("eps-env", "d" * 64, get=lambda n: Stack(n, ("python",), "id", {}))
    assert [p.b.env for p in pairs] == [(("EPS_ENV", "1"),)]  # its planner makes its pairs

    st = Store(tmp_path / "h")
    a, b = spec(), spec(env=(("EPS_ENV", "1"),))
    put(st, tmp_path, a, arrays(0))
    put(st, tmp_path, b, flipped(arrays(0), "hgb", 3), env(env={"OMP_NUM_THREADS": "1", "EPS_ENV": "1"}))
    s1 = spec(seeds=seeds(1))
    put(st, tmp_path, s1, flipped(arrays(0), "hgb", 6))
    st.add_pairs([Pair("eps-env", "", a, b, "off vs on"), Pair("seed", "", a, s1, "seed 0 vs 1")])
    bud = budget(st, "d" * 64)
    assert [r.factor for r in bud["rows"]] == ["eps-env", "seed"]  # ordered by the table
    row = bud["rows"][0]
    assert row.confounds == {}  # what it is meant to change is explained by its regex
    assert "eps-env" in explain(bud["rows"] + [BudgetRow(
        "perturb", "1e-13", emb_rel_max=1e-13, verdicts_changed_max=0,
        models={"hgb": ModelBudget(flips_median=0, flips_max=0, max_dp=0)})])
    a_ = advise(st, "d" * 64, bud)
    assert [r["factor"] for r in a_["ranking"]][0] in ("eps-env", "seed")
    text = next(r["text"] for r in a_["recommendations"] if r["basis"].get("factor") == "eps-env")
    assert text.startswith("Pin eps-env (a made-up environment setting)")
    assert "eps-env" in verdict_sets(st, "d" * 64)


def test_the_table_is_complete_and_consistent():
    from kit.runs.plan import PLANNERS, planner

    for f in factors.TABLE:
        if f.plannable:
            assert planner(f.name) in PLANNERS.values()
        assert (f.planned == factors.TORCH) == (not f.has_verdicts)
    assert [f.name for f in factors.TABLE if f.yardstick] == ["seed", "torch-seed"]
    assert factors.suggest("thread") == "threads" and factors.suggest("zzz") is None
