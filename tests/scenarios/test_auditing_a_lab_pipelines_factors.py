"""A lab pipeline's factors beyond its seeds, each planned, run in real workers, stored, found
again from the specs and read in its budget row: process, threads, precision, and a stack pair
(kit's own interpreter registered as an external stack, paired in a small catalogue)."""

import json
import os
import subprocess
import sys

import pytest
from places import PIPELINES, ROOT

from kit.analysis.budget import output_budget
from kit.analysis.by_kind import pairs
from kit.app.audit import run_pairs
from kit.core.errors import KitError
from kit.core.subject import of_pipeline
from kit.data.pipelines import add_pipeline
from kit.envs import external
from kit.runs.planning.options import PlanOptions
from kit.runs.planning.plan import plan, plan_file
from kit.runs.store import Store
from kit.views.tables import output_budget_text

LAB = PIPELINES / "lab.py"


def _made(info, plans):
    store = Store()
    run_pairs(plans, info, store)
    return store


def _changed(b, factor):
    return {n for n, o in b["factors"][factor]["outputs"].items() if o["changed"]}


def test_whether_run_takes_a_dtype_is_read_from_the_file_and_precision_needs_it(tmp_path):
    assert add_pipeline(LAB)["dtype"] is True  # run(seeds, dtype="float64")
    f = tmp_path / "plain.py"
    f.write_text(
        "import numpy as np\nSEEDS = ('a',)\ndef run(seeds):\n"
        "    return {'x': np.zeros(2) + seeds['a']}\n"
    )
    info = add_pipeline(f)
    assert info["dtype"] is False
    with pytest.raises(KitError) as e:
        plan_file("precision", info, PlanOptions(threads=(1,)))
    assert str(e.value).startswith(
        "precision: plain.py's run takes no dtype: define run(seeds, dtype)"
    )
    for params in ("*args", "seeds, n_rows=5", "seeds, /, rows=5"):  # not named dtype: the lab's
        f.write_text(f"SEEDS = ()\ndef run({params}):\n    pass\n")
        assert add_pipeline(f)["dtype"] is False, params
    f.write_text("SEEDS = ()\ndef run(seeds, dtype='float64', n_rows=5):\n    pass\n")
    assert add_pipeline(f)["dtype"] is True


def test_kit_only_and_unknown_factors_are_refused_in_one_line():
    info = add_pipeline(LAB)
    opts = PlanOptions(threads=(1,))
    for factor in ("svd-iters", "svd-solver", "perturb", "torch-seed", "feed", "embedding"):
        with pytest.raises(
            KitError, match=f"^{factor} is a factor of kit's own pipeline, not for a pipeline file"
        ):
            plan_file(factor, info, opts)
    with pytest.raises(KitError, match="seed:svd is kit's own pipeline's, not for a pipeline"):
        plan_file("seed:svd", info, opts)
    with pytest.raises(KitError) as own:
        plan("host", "d" * 64, opts)
    with pytest.raises(KitError) as lab:  # host without --hosts: kit's own planner's line
        plan_file("host", info, opts)
    assert str(lab.value) == str(own.value)
    with pytest.raises(KitError, match="^unknown factor 'bogus' for a pipeline file"):
        plan_file("bogus", info, opts)


def test_a_stack_factor_says_what_kit_s_own_planner_says_where_its_stacks_are_absent():
    info = add_pipeline(LAB)
    for factor in ("blas", "arch", "python"):
        with pytest.raises(KitError) as own:
            plan(factor, "d" * 64, PlanOptions(threads=(1,)))
        with pytest.raises(KitError) as lab:
            plan_file(factor, info, PlanOptions(threads=(1,)))
        assert str(lab.value) == str(own.value) and "\n" not in str(lab.value)


@pytest.mark.slow
def test_process_threads_and_precision_are_planned_run_found_again_and_read():
    info = add_pipeline(LAB)
    plans = (
        plan_file("threads", info, PlanOptions(threads=(1, 2)))
        + plan_file("process", info, PlanOptions(threads=(1,)))
        + plan_file("precision", info, PlanOptions(threads=(1, 2)))
    )
    store = _made(info, plans)
    # the float32 runs at 1 and 2 threads differ in threads alone, but are precision's runs:
    # found again, the pairs are exactly the planned ones
    assert sorted((p.factor, p.a.run_id, p.b.run_id) for p in plans) == pairs(
        store, of_pipeline(info), fit=False
    )
    fresh, warm = next((p.a, p.b) for p in plans if p.factor == "process")
    # the warm run followed another run (the primer, at the file's own seeds) in its process
    assert store.run(fresh.run_id).manifest["runs_before"] == 0
    assert store.run(warm.run_id).manifest["runs_before"] >= 1
    b = output_budget(store, of_pipeline(info))
    assert {f: r["pairs"] for f, r in b["factors"].items()} == {
        "threads": 1,
        "process": 1,
        "precision": 2,
    }
    # a warm worker changes nothing the named seeds hold: only the unseeded output moves
    assert _changed(b, "process") == {"jitter"}
    assert "jitter" in _changed(b, "threads")
    # float32 against float64: every float output the embedding reaches moves
    assert {"emb", "p_lr", "jitter"} <= _changed(b, "precision")
    emb = b["factors"]["precision"]["outputs"]["emb"]["worst"]
    assert 0 < emb["rel"] < 1e-3 and emb["digits"] < 9
    assert store.run(plans[-1].b.run_id).manifest["stages"]["emb"]["dtype"] == "<f4"
    # jitter adds a float64 draw to the float32 embedding: said, as not float32 in those runs
    assert "jitter" in b["not_in_dtype"] and "emb" not in b["not_in_dtype"]
    assert "precision: jitter" in " ".join(output_budget_text(b).split())


@pytest.fixture
def paired(tmp_path, monkeypatch):
    """kit's interpreter as the external stack 'mine', and a catalogue pairing host with it for
    sklearn (a stand-in pair: the same libraries, so only the loose output may differ)."""
    cat = tmp_path / "catalogue"
    cat.mkdir()
    (cat / "stacks.toml").write_text(
        'reference = "host"\n\n[pairs.sklearn]\n'
        'linux-x86_64 = [["host", "mine"]]\n'
        'macos-arm64 = [["host", "mine"]]\n\n'
        '[codepaths.linux-x86_64.openblas]\nstack = "mine"\n'
        'variable = "OPENBLAS_CORETYPE"\n'
        'values = ["Prescott", "Haswell"]\nneeds = { Haswell = "avx2" }\n'
    )
    monkeypatch.setenv("KIT_STACKS_DIR", str(cat))
    external.add("mine", sys.executable)
    return "mine"


@pytest.mark.slow
def test_a_stack_pair_is_planned_run_in_both_stacks_found_again_and_read(paired):
    info = add_pipeline(LAB)
    plans = plan_file("sklearn", info, PlanOptions(seeds=(3,)))
    assert [(p.a.stack, p.b.stack, p.a.threads, p.a.seed_dict) for p in plans] == [
        ("host", paired, 1, {"split": 3, "init": 3})
    ]
    store = _made(info, plans)
    assert pairs(store, of_pipeline(info), fit=False) == [
        ("sklearn", plans[0].a.run_id, plans[0].b.run_id)
    ]
    b = output_budget(store, of_pipeline(info))
    assert b["factors"]["sklearn"]["pairs"] == 1 and _changed(b, "sklearn") == {"jitter"}
    with pytest.raises(KitError, match="factor 'numpy' has no stack pairs on"):
        plan_file("numpy", info, PlanOptions())


@pytest.mark.slow
def test_arch_s_code_paths_are_one_stack_under_two_settings_found_again(paired):
    from kit.envs.platforms import detect

    plat = detect()
    if plat.key != "linux-x86_64" or "avx2" not in plat.cpu_flags:
        pytest.skip("the catalogue's code path pair is an x86_64 Linux one, needing AVX2")
    info = add_pipeline(LAB)
    plans = plan_file("arch", info, PlanOptions())
    assert [(p.a.stack, p.a.env, p.b.env) for p in plans] == [
        (paired, (("OPENBLAS_CORETYPE", "Haswell"),), (("OPENBLAS_CORETYPE", "Prescott"),))
    ]
    store = _made(info, plans)
    assert pairs(store, of_pipeline(info), fit=False) == [
        ("arch", plans[0].a.run_id, plans[0].b.run_id)
    ]
    assert output_budget(store, of_pipeline(info))["factors"]["arch"]["pairs"] == 1


def _kit(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "kit", *args], capture_output=True, text=True, env=env
    )


@pytest.mark.slow
def test_kit_run_pipeline_in_another_stack_and_its_one_line_refusals(paired):
    got = _kit(
        "run",
        "--pipeline",
        str(LAB),
        "--factor",
        "process",
        "--threads",
        "1",
        "--stack",
        paired,
        "--json",
    )
    assert got.returncode == 1, got.stderr  # lab.py's jitter: its process pair is loose
    b = json.loads(got.stdout)
    assert b["factors"]["process"]["pairs"] == 1
    specs = Store().specs(b["pipeline"]).values()
    assert {s.stack for s in specs} == {paired}
    for factor, said in (
        ("feed", "not for a pipeline file"),
        ("blas", "no stack pairs on"),
        ("seed:split,perturb", "perturb is a factor of kit's own pipeline"),
    ):
        bad = _kit("run", "--pipeline", str(LAB), "--factor", factor, "--threads", "1")
        assert bad.returncode == 1 and said in bad.stderr, bad.stderr
        assert bad.stderr.strip().count("\n") == 0 and "Traceback" not in bad.stderr
    bad = _kit("run", "--pipeline", str(LAB), "--factor", "host", "--hosts", "a,b")
    assert (
        bad.returncode == 1
        and "--hosts names node classes of a cluster: add --cluster" in bad.stderr
    )


def test_the_worker_and_the_contract_compile_under_python_3_9():
    """The worker runs inside foreign stacks down to Python 3.9: no later syntax in kit/worker
    (a 3.10+ construct would fail there, not here). Run under 3.9 when one is installed."""
    from kit.envs.interpreters import find_python
    from kit.envs.platforms import detect

    python = find_python("3.9", None, detect())
    if python is None:
        pytest.skip("no Python 3.9 interpreter here")
    files = sorted(str(f) for f in (ROOT / "kit" / "worker").glob("*.py"))
    got = subprocess.run(
        [
            python,
            "-c",
            "import sys\nfor f in sys.argv[1:]:\n"
            "    compile(open(f).read(), f, 'exec')\nprint(sys.version_info[:2])",
            *files,
        ],
        capture_output=True,
        text=True,
    )
    assert got.returncode == 0 and got.stdout.strip() == "(3, 9)", got.stderr


def test_a_file_s_stack_factor_asks_to_build_its_stacks_as_kit_s_own_does(kit_home, capsys):
    """A fresh home: the sklearn pair's stacks are not built. The plan names them (no pairs
    yet: a stack's identity is part of each run), `kit run` asks before building them, and
    without a terminal or --yes refuses saying so (was: "stack ... is not built")."""
    from kit.app.verbs import plan as plan_verb
    from kit.app.verbs import run, to_run
    from kit.cli import main

    store = Store()
    target = to_run(store, ("sklearn",), pipeline=str(LAB))
    p = plan_verb(store, target, target.factors, PlanOptions(threads=(1,)))
    names = [n for n, _ in p.stacks]
    assert names and p.pairs == () and all(n.startswith("np") for n in names)
    asked = []
    ran = run(
        store, target, PlanOptions(threads=(1,)), confirm=lambda ask: asked.append(ask) or False
    )
    assert [n for n, _ in asked[0].stacks] == names and store.runs() == [] and ran.failure is None
    capsys.readouterr()
    assert main(["run", "--pipeline", str(LAB), "--factor", "sklearn"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "add --yes to build them" in err and names[0] in err and "is not built" not in err
