"""kit.runs.planning.plan: each factor's pairs differ in exactly the thing the factor names."""

import re

import pytest

from kit.core import factors
from kit.core.errors import KitError
from kit.runs.planning.options import PlanOptions
from kit.runs.planning.plan import plan

D = "d" * 64


@pytest.fixture(autouse=True)
def eight_cores(monkeypatch):
    """Plans are checked for a machine with 8 cores, whatever this one has."""
    monkeypatch.setattr("kit.core.processes.cores", lambda: 8)


def test_thread_counts_above_the_cores_are_refused(monkeypatch):
    """One check and one message, the CLI's, whether the counts were parsed or given."""
    from kit.runs.planning.options import parse_threads

    monkeypatch.setattr("kit.core.processes.cores", lambda: 2)
    says = (
        "4 threads on a machine with 2 cores would measure oversubscription, not the thread "
        "count; use 1 to 2"
    )
    with pytest.raises(KitError, match=f"^{re.escape(says)}$"):
        PlanOptions(threads=(1, 4))
    with pytest.raises(ValueError, match=f"^{re.escape(says)}$"):
        parse_threads("1,4")
    with pytest.raises(KitError, match="^0 is not allowed here: the smallest is 1$"):
        PlanOptions(threads=(0,))
    with pytest.raises(KitError, match="power iterations must be 1 or more, not 0$"):
        PlanOptions(svd_iters=(0,))


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


@pytest.mark.parametrize(
    "factor,moved",
    [("seed:svd", {"svd"}), ("seed:kmeans", {"kmeans"}), ("seed:models", {"mlp", "hgb", "rf"})],
)
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


def test_svd_solver_is_the_svd_iters_seed_pairs_on_the_arpack_embedding():
    ps = pairs("svd-solver")
    assert [p.b.seed_dict["svd"] for p in ps] == [1, 2, 3, 4, 5]  # svd-iters' seeds
    assert all(s.embedding == "arpack" and s.svd_iters == 5 for p in ps for s in (p.a, p.b))
    assert all(diff(p) == {"seeds"} for p in ps)


def test_unknown_factor_and_single_seed():
    with pytest.raises(KitError, match="unknown factor"):
        pairs("nope")
    with pytest.raises(KitError, match="two seeds"):
        pairs("seed", seeds=(3,))
    assert set(factors.names(factors.SINGLE, factors.PERTURB)) >= {
        "repeat",
        "threads",
        "seed",
        "precision",
        "svd-iters",
    }


# -- stack factors --------------------------------------------------------------------------
from kit.envs.platforms import Platform  # noqa: E402
from kit.envs.stacks import Stack  # noqa: E402
from kit.runs.planning.plan import required_stacks  # noqa: E402
from kit.runs.planning.stack_pairs import stack_pairs  # noqa: E402

LINUX = Platform("linux", "x86_64", cpu_flags=frozenset({"avx", "avx2", "avx512f", "sse4_2"}))
OLD_LINUX = Platform("linux", "x86_64", cpu_flags=frozenset({"sse4_2"}))
MAC = Platform("darwin", "arm64", (14, 5), rosetta=True)


def fake_get(name):
    return Stack(name, ("python",), "id-" + name, {})


def test_sklearn_pairs_hold_numpy_fixed():
    ps = plan("sklearn", D, PlanOptions(), plat=LINUX, get=fake_get)
    assert [(p.a.stack, p.b.stack) for p in ps] == [
        ("np1-sk142", "np1-sk152"),
        ("np1-sk152", "np1-sk191"),
        ("np1-sk142", "np1-sk191"),
    ]
    assert all(diff(p) == {"stack", "stack_id"} for p in ps)


def test_blas_differs_by_platform():
    assert [(a, b) for a, _, b, _, _ in stack_pairs("blas", LINUX)] == [
        ("py39-openblas-sk161", "py39-mkl-sk161")
    ]
    assert [(a, b) for a, _, b, _, _ in stack_pairs("blas", MAC)] == [
        ("np1-sk152", "np2-sk152"),
        ("np1-sk191", "np2-sk191"),
    ]


def test_arch_is_rosetta_on_a_mac_and_code_paths_on_linux():
    assert [(a, b) for a, _, b, _, _ in stack_pairs("arch", MAC)] == [
        ("np1-sk191", "np1-sk191-x86"),
        ("np2-sk161", "np2-sk161-x86"),
    ]
    ps = plan("arch", D, PlanOptions(), plat=LINUX, get=fake_get)
    openblas = [p for p in ps if p.a.stack == "np2-sk191"]
    assert [dict(p.b.env)["OPENBLAS_CORETYPE"] for p in openblas] == [
        "Prescott",
        "Sandybridge",
        "Haswell",
    ]
    assert all(
        dict(p.a.env)["OPENBLAS_CORETYPE"] == "SkylakeX" and diff(p) == {"env"} for p in openblas
    )
    mkl = [p for p in ps if p.a.stack == "py39-mkl-sk161"]
    assert [dict(p.b.env)["MKL_CBWR"] for p in mkl] == ["COMPATIBLE", "SSE4_2", "AVX2"]
    # a CPU without AVX: only code paths it can run are planned
    old = stack_pairs("arch", OLD_LINUX)
    assert [dict(eb)["MKL_CBWR"] for _, _, _, eb, _ in old] == ["COMPATIBLE"]


def test_python_pair_and_required_stacks():
    assert stack_pairs("python", LINUX)[0][2] == "py313-np2-sk191"
    assert stack_pairs("python", MAC)[0][2] == "py314-np2-sk191"
    assert required_stacks(["seed", "python"], LINUX) == ["host", "np2-sk191", "py313-np2-sk191"]
    with pytest.raises(KitError, match="no stack pairs on linux-arm64"):
        stack_pairs("blas", Platform("linux", "aarch64"))


def test_host_pairs_one_spec_on_two_named_machines_and_other_plans_go_where_told():
    pairs = plan("host", "d" * 64, PlanOptions(hosts=("a", "b", "c")))
    assert [(p.a.host, p.b.host) for p in pairs] == [("a", "b"), ("a", "c")]
    assert all(p.a.with_(host="") == p.b.with_(host="") for p in pairs)  # nothing else differs
    with pytest.raises(KitError, match="--hosts A,B"):
        plan("host", "d" * 64, PlanOptions())
    on = plan("seed", "d" * 64, PlanOptions(seeds=(0, 1), host="node-x"))
    assert {p.a.host for p in on} | {p.b.host for p in on} == {"node-x"}


def test_the_local_executor_refuses_a_run_planned_for_another_machine():
    from kit.runs.executing.runner import LocalExecutor

    spec = plan("host", "d" * 64, PlanOptions(hosts=("a", "b")))[0].a
    with pytest.raises(KitError, match="planned for 'a', not this machine"):
        LocalExecutor().check(spec)


# -- what each factor's pairs differ in: the registry's rule, which bundles are checked by ----
from kit.runs.planning.plan import plan_file  # noqa: E402
from kit.runs.planning.stack_pairs import listed_pairs  # noqa: E402

LAB_INFO = {"name": "lab.py", "sha256": "e" * 64, "seeds": ("split", "init"), "dtype": True}


def _planned(factor, plat):
    opts = PlanOptions(
        threads=(1, 2, 4),
        seeds=(0, 1, 2),
        hosts=("a", "b"),
        device="cuda" if factor == "torch-device" and plat is LINUX else None,
    )
    return plan(factor, D, opts, plat=plat, get=fake_get)


def _lab_planned(factor, plat):
    opts = PlanOptions(threads=(1, 2, 4), seeds=(0, 1, 2), hosts=("a", "b"))
    return plan_file(factor, LAB_INFO, opts, get=fake_get, plat=plat)


def _every_pair():
    out = []
    for plat in (LINUX, MAC):
        for f in factors.plannable():
            try:
                out += _planned(f, plat)
            except KitError:  # e.g. torch-device without a device here: planned on the other
                pass
        lab = [f for f in factors.plannable() if factors.FACTORS[f].planned == factors.STACKS]
        for f in (
            "repeat",
            "process",
            "host",
            "threads",
            "precision",
            "seed",
            "seed:split",
            "seed:init",
            *lab,
        ):
            try:
                out += _lab_planned(f, plat)
            except KitError:
                pass
    return out


def test_the_registry_s_rule_accepts_every_pair_each_planner_makes():
    """kit.core.factors.differs is what a bundle's pair labels are checked by: it must take
    every pair kit itself plans (for kit's pipeline and a lab's, on Linux and on a Mac), with
    the level its planner writes, and name no other factor for a pair that only one makes."""
    every = _every_pair()
    planned = {p.factor for p in every}
    assert planned >= set(factors.plannable()) | {"seed:init"}  # every factor was planned
    for p in every:
        stacks = (
            listed_pairs(p.factor)
            if factors.get(p.factor) and factors.FACTORS[p.factor].planned == factors.STACKS
            else ()
        )
        assert factors.differs(p.factor, p.a, p.b, stacks), (p.factor, p.label)
        assert factors.level(p.factor, p.a, p.b) == p.level, (p.factor, p.label)
        # nothing is a pair of the null experiment but the null experiment
        if p.factor != "repeat":
            assert not factors.differs("repeat", p.a, p.b), (p.factor, p.label)


@pytest.mark.parametrize(
    "label,real",
    [
        ("repeat", "seed"),
        ("threads", "seed"),
        ("blas", "seed"),
        ("seed:svd", "seed"),
        ("seed", "seed:svd"),
        ("torch-seed", "seed"),
        ("svd-solver", "seed"),
        ("process", "threads"),
        ("precision", "threads"),
        ("sklearn", "blas"),
    ],
)
def test_a_pair_is_not_another_factor_s(label, real):
    p = _planned(real, MAC)[0]
    stacks = listed_pairs(label) if factors.FACTORS[label].planned == factors.STACKS else ()
    assert not factors.differs(label, p.a, p.b, stacks)
