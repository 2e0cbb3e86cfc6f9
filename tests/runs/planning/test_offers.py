"""The one registry of factors (kit.core.factors): each factor applies per subject kind, with a
description and what it needs there; planners are looked up per (factor, kind); the errors say
their kind (NotFound, Refused, Failed) so no caller reads a message."""

import hashlib
import json
from types import SimpleNamespace

import pytest

from kit.analysis.releases import Release
from kit.app import releases
from kit.app.audit import file_pairs
from kit.core import factors
from kit.core.errors import Failed, KitError, NotFound, Refused
from kit.core.subject import DATASET, PIPELINE, of_dataset, of_pipeline
from kit.envs.platforms import Platform
from kit.envs.stacks import Stack
from kit.runs.planning import plan as own_planning
from kit.runs.planning.availability import availability
from kit.runs.planning.offers import Offer, offered
from kit.runs.planning.options import PlanOptions
from kit.runs.planning.plan import plan, plan_file

LINUX = Platform("linux", "x86_64", cpu_flags=frozenset({"avx", "avx2", "avx512f", "sse4_2"}))
MAC = Platform("darwin", "arm64", (14, 5), rosetta=True)
INFO = {"name": "lab.py", "sha256": "e" * 64, "seeds": ("split", "init"), "dtype": True}
BARE = {"name": "bare.py", "sha256": "f" * 64, "seeds": (), "dtype": False}


def _get(name):
    return Stack(name, ("python",), "id-" + name, {})


@pytest.fixture
def fixed(monkeypatch):
    """Plans as on an 8-core machine named "here", whatever this one is."""
    monkeypatch.setattr("kit.core.processes.cores", lambda: 8)
    monkeypatch.setattr(own_planning, "host_id", lambda: "here")


def test_the_subject_kinds_are_the_subject_module_s():
    assert (factors.DATASET, factors.PIPELINE) == (DATASET, PIPELINE)


# sha256 of every plan (and every refusal's line) below as the code before the registry made
# them: kit's own pipeline's outputs stay byte-identical, so this changes only with a plan on
# purpose (then say so in the commit)
BEFORE = "37b85ce5f10907a1faf4faaee6d64c04d65cf0963bcc73bbd825d8f24f12bbd0"
# factors added after the registry, whose plans tests/envs/kinds/test_container.py checks (a refusal
# that lists every factor names them: left out of its line here)
_ADDED = ("container", "os")
_NAMED = ", container, os"


def test_every_plan_is_byte_identical_to_the_plans_before_the_registry(fixed):
    out = []
    for plat in (LINUX, MAC):
        for opts in (
            PlanOptions(threads=(1, 2, 4), seeds=(0, 1, 2), hosts=("a", "b")),
            PlanOptions(threads=(1, 2)),
        ):
            for f in [
                *(f for f in factors.plannable() if f not in _ADDED),
                "seed:split",
                "seed:init",
                "seed:nope",
                "bogus",
                "feed",
            ]:
                for who in ("own", "lab"):
                    o = opts
                    if f == "torch-device":
                        o = PlanOptions(
                            threads=opts.threads,
                            seeds=opts.seeds,
                            hosts=opts.hosts,
                            device="cuda" if plat is LINUX else None,
                        )
                    try:
                        ps = (
                            plan(f, "d" * 64, o, plat=plat, get=_get)
                            if who == "own"
                            else plan_file(f, INFO, o, get=_get, plat=plat)
                        )
                        out.append([who, f, plat.key, [repr(p) for p in ps]])
                    except KitError as e:
                        out.append([who, f, plat.key, "error", str(e).replace(_NAMED, "")])
    text = json.dumps(out, indent=0)
    assert len(out) == 216 and hashlib.sha256(text.encode()).hexdigest() == BEFORE


def test_each_pipeline_factor_has_its_planner_and_the_list_comes_from_the_registry():
    assert not hasattr(own_planning, "LAB_FACTORS")
    names = factors.for_kind(PIPELINE)
    assert names == (
        "repeat",
        "process",
        "host",
        "threads",
        "precision",
        "seed",
        factors.SEED_NAME,
        *factors.names(factors.STACKS),
    )
    for name in names:
        assert callable(factors.planner(name, PIPELINE))
    assert factors.planner("seed:anything", PIPELINE) is factors.planner(
        factors.SEED_NAME, PIPELINE
    )
    # kit's own: every plannable factor, each with its planner for a dataset
    assert factors.for_kind(DATASET) == tuple(factors.plannable())
    for name in ("svd-iters", "perturb", "torch-seed", "feed"):
        with pytest.raises(NotFound):
            factors.planner(name, PIPELINE)


def test_what_each_factor_needs_is_declared_per_kind():
    assert factors.NEEDS_DTYPE in factors.use("precision", PIPELINE).needs
    assert factors.NEEDS_THREADS in factors.use("threads", DATASET).needs
    assert factors.NEEDS_SEED in factors.use("seed:init", PIPELINE, ("init",)).needs
    assert factors.use("seed:svd", PIPELINE, ("init",)) is None  # kit's seed, not the file's
    assert factors.use("seed:svd", PIPELINE, ("svd",)) is not None  # unless it names it
    assert factors.use("svd-iters", PIPELINE) is None and factors.use("svd-iters", DATASET)


def test_a_factor_registers_a_planner_only_for_a_kind_it_applies_to():
    f = factors.Factor("own-only", "x", factors.SINGLE, factors.SEED)
    with factors.registered(f, lambda ctx: []):
        assert factors.for_kind(PIPELINE).count("own-only") == 0
        with pytest.raises(ValueError, match="does not apply to a pipeline"):
            factors.register(f, lambda ctx: [], kind=PIPELINE)
    assert ("own-only", DATASET) not in factors._PLANNERS


def test_unknown_factors_are_not_found_and_others_refused_in_today_s_lines(fixed):
    opts = PlanOptions(threads=(1,))
    with pytest.raises(
        NotFound,
        match="^unknown factor 'bogus' for a pipeline file: one of "
        "repeat, process, host, threads, precision, seed, "
        "seed:NAME, arch, blas",
    ):
        plan_file("bogus", INFO, opts, get=_get)
    with pytest.raises(NotFound, match="^unknown factor 'bogus'; choose from repeat, "):
        plan("bogus", "d" * 64, opts, get=_get)
    for factor in ("feed", "embedding", "svd-iters", "perturb"):
        with pytest.raises(
            Refused,
            match=f"^{factor} is a factor of kit's own pipeline, not "
            r"for a pipeline file \(lab.py\): one of repeat, ",
        ):
            plan_file(factor, INFO, opts, get=_get)
    with pytest.raises(
        Refused,
        match="^lab.py names no seed 'svd': its SEEDS are split, init "
        r"\(seed:NAME for one of them\); seed:svd is kit's own",
    ):
        plan_file("seed:svd", INFO, opts, get=_get)
    with pytest.raises(Refused, match="^bare.py names no seeds"):
        plan_file("seed", BARE, opts, get=_get)
    with pytest.raises(Refused, match="^precision: bare.py's run takes no dtype"):
        plan_file("precision", BARE, opts, get=_get)
    with pytest.raises(Refused, match="^choose at least one factor$"):
        file_pairs(INFO, (), opts)


def test_a_pipeline_s_offers_come_from_the_registry_with_what_it_lacks():
    rows = availability(LINUX)
    got = {o.factor: o for o in offered(of_pipeline(INFO), LINUX, rows)}
    assert list(got) == [
        "repeat",
        "process",
        "host",
        "threads",
        "precision",
        "seed",
        "seed:split",
        "seed:init",
        *factors.names(factors.STACKS),
    ]
    assert got["seed"].description == "every named seed at once (split, init)"
    assert got["seed:init"] == Offer("seed:init", "the seed init alone, the others held")
    here = {r["factor"]: r for r in rows}
    assert got["blas"].description == here["blas"]["description"]  # kit's own line, filled
    assert got["host"].available is False and got["host"].reason == here["host"]["reason"]
    bare = {o.factor: o for o in offered(of_pipeline(BARE), LINUX, rows)}
    assert "seed:split" not in bare
    assert bare["seed"].reason == "its SEEDS are (): there is no seed to vary"
    assert bare["precision"].reason == "its run takes no dtype: define run(seeds, dtype)"


def test_kit_s_own_offers_are_its_availability_rows():
    rows = availability(LINUX)
    own = offered(of_dataset("d" * 64, {"name": "d"}), LINUX, rows)
    want = [
        Offer(r["factor"], r["description"], r["available"], r["reason"])
        for r in rows
        if factors.get(r["factor"]).plannable
    ]
    assert own == want


def test_a_build_failure_s_cause_is_its_reason_not_a_cut_message(monkeypatch):
    """The cause holds ": " and the lead-in has two: cutting the message at the first ": "
    (as releases did) would show "could not build: ..." instead of uv's own line."""
    cause = "uv sync failed: error: no wheel for cp399: none fits"
    built = []

    class Kind:
        def status(self, plat):
            return "missing", None

        def download_bytes(self, plat):
            return 0

        def build(self, plat, log=lambda m: None):
            built.append(1)
            raise Failed(f"stack probe-x: could not build: {cause}", reason=cause)

    monkeypatch.setattr(releases, "stack_kind", lambda name: Kind())
    a = SimpleNamespace(run_id="r" * 64, pipeline=None)  # a spec of kit's own pipeline
    store = SimpleNamespace(run=lambda rid: SimpleNamespace(spec=a), has_run=lambda rid: True)
    scan = SimpleNamespace(
        releases=[Release("9.9", "probe-x")], groups=("models",), pair=SimpleNamespace(a=a.run_id)
    )
    assert releases.run_scans([scan], store) == [] and built
    assert scan.releases == [Release("9.9", why=cause)]
