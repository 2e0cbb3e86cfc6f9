"""kit.core.factors: the one registry every consumer reads. A factor registered there (with its
planner) is planned, accepted by the CLI, offered by the TUI, ordered in the budget, explained by
magnitude, ranked and worded by the advice, and given a verdict set, with no other change."""

import pytest

from kit.core import factors
from kit.core.errors import KitError


@pytest.fixture
def new_factor():
    """A new environment factor, "eps-env", planned as precision is: one ``register``."""
    from kit.runs.planning import plan

    f = factors.Factor(
        "eps-env",
        "a made-up environment setting",
        factors.SINGLE,
        factors.ENVIRONMENT,
        explained=r"^env:EPS_ENV$",
        sets_env=(("EPS_ENV", r"[01]"),),
    )

    def planner(ctx):
        base = ctx.base()
        return [plan.Pair(ctx.factor, "", base, base.with_(env=(("EPS_ENV", "1"),)), "off vs on")]

    with factors.registered(f, planner, after="threads"):
        yield f


def test_every_consumer_reads_the_table(new_factor, tmp_path, monkeypatch):
    from stored import arrays, env, flipped, put, spec

    from kit.analysis.advice import advise
    from kit.analysis.amplify import explain
    from kit.analysis.budget import budget
    from kit.analysis.records import BudgetRow, ModelBudget
    from kit.analysis.verdicts import verdict_sets
    from kit.app.verbs.records import kit_factor_names as factor_arg
    from kit.core.spec import seeds
    from kit.envs.stacks import Stack
    from kit.runs.planning.availability import availability
    from kit.runs.planning.plan import Pair, plan
    from kit.runs.store import Store

    assert factor_arg(["eps-env"]) == ("eps-env",)  # the CLI accepts it
    assert "eps-env" in {r["factor"] for r in availability()}  # the TUI's Plan list offers it
    pairs = plan("eps-env", "d" * 64, get=lambda n: Stack(n, ("python",), "id", {}))
    assert [p.b.env for p in pairs] == [(("EPS_ENV", "1"),)]  # its planner makes its pairs

    st = Store(tmp_path / "h")
    a, b = spec(), spec(env=(("EPS_ENV", "1"),))
    put(st, tmp_path, a, arrays(0))
    put(
        st,
        tmp_path,
        b,
        flipped(arrays(0), "hgb", 3),
        env(env={"OMP_NUM_THREADS": "1", "EPS_ENV": "1"}),
    )
    s1 = spec(seeds=seeds(1))
    put(st, tmp_path, s1, flipped(arrays(0), "hgb", 6))
    st.add_pairs([Pair("eps-env", "", a, b, "off vs on"), Pair("seed", "", a, s1, "seed 0 vs 1")])
    bud = budget(st, "d" * 64)
    assert [r.factor for r in bud["rows"]] == ["eps-env", "seed"]  # ordered by the table
    row = bud["rows"][0]
    assert row.confounds == {}  # what it is meant to change is explained by its regex
    assert "eps-env" in explain(
        bud["rows"]
        + [
            BudgetRow(
                "perturb",
                "1e-13",
                emb_rel_max=1e-13,
                verdicts_changed_max=0,
                models={"hgb": ModelBudget(flips_median=0, flips_max=0, max_dp=0)},
            )
        ]
    )
    a_ = advise(st, "d" * 64, bud)
    assert [r["factor"] for r in a_["ranking"]] == ["eps-env"]  # seed: the unit, not ranked
    assert [u["factor"] for u in a_["unit"]] == ["seed"]
    text = next(r["text"] for r in a_["recommendations"] if r["basis"].get("factor") == "eps-env")
    assert text.startswith("Pin eps-env (a made-up environment setting)")
    assert "eps-env" in verdict_sets(st, "d" * 64)


def test_the_table_is_complete_and_consistent():
    import kit.runs.planning.plan  # noqa: F401  (registers the built-in factors' planners)

    for f in factors.table():
        if f.plannable:
            assert callable(factors.planner(f.name))
        assert (f.planned == factors.TORCH) == (not f.has_verdicts)
    assert [f.name for f in factors.table() if f.yardstick] == ["seed", "torch-seed"]
    assert factors.unknown_factor("thread").endswith("did you mean threads?")
    assert factors.unknown_factor("zzz").startswith("unknown factor 'zzz'; choose from repeat,")


def test_one_registration_and_its_undoing():
    f = factors.Factor("eps-env", "a made-up setting", factors.SINGLE, factors.ENVIRONMENT)
    with pytest.raises(ValueError, match="needs a planner"):
        factors.register(f)
    with pytest.raises(ValueError, match="already registered"):
        factors.register(
            factors.Factor("repeat", "another", factors.SINGLE, factors.NOTHING), print
        )
    before = factors.names()
    with factors.registered(f, print, after="threads"):
        assert factors.names()[4] == "eps-env" and factors.order("eps-env") == 4
        assert factors.planner("eps-env") is print and "eps-env" in factors.plannable()
    assert factors.names() == before and factors.get("eps-env") is None
    with pytest.raises(KitError, match="unknown factor 'eps-env'"):
        factors.planner("eps-env")


def test_descriptions_take_their_versions_from_the_catalogue(tmp_path, monkeypatch):
    from kit.envs.descriptions import description, descriptions

    assert descriptions()["sklearn"] == (
        "scikit-learn version at a fixed numpy (1.4.2, 1.5.2, 1.9.1 on numpy 1.26.4)"
    )
    assert descriptions()["python"] == (
        "Python version at fixed libraries (3.12 against 3.14 on macOS, 3.13 on Linux)"
    )
    assert descriptions()["numpy"].startswith("numpy 1.26.4 against 2.x")
    stack = 'python = "3.12"\nnumpy = "1.26.4"\nscikit-learn = "{}"\n'
    (tmp_path / "stacks.toml").write_text(
        '[stack.a]\nlock = "a"\n'
        + stack.format("1.0.0")
        + '[stack.b]\nlock = "b"\n'
        + stack.format("2.0.0")
        + '[pairs.sklearn]\nlinux-x86_64 = [["a", "b"]]\n'
    )
    monkeypatch.setenv("KIT_STACKS_DIR", str(tmp_path))
    assert description(factors.get("sklearn")).endswith("(1.0.0, 2.0.0 on numpy 1.26.4)")
    assert "numpy n/a against 2.x" in description(factors.get("numpy"))  # no numpy pairs here
