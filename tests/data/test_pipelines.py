"""A lab's pipeline file as a RunSpec: named by its hash, kept under it, made by kit's worker in a
real subprocess (fresh and warm), a failure one line with the traceback in the run's log."""

import hashlib
import json
from pathlib import Path

import pytest
from places import PIPELINES

from kit.core.errors import KitError
from kit.core.spec import RunSpec, pipeline_seeds
from kit.data.pipelines import add_pipeline, pipeline_file, pipeline_info
from kit.envs.kinds import stack_kind
from kit.runs.executing.attempt import WorkerFailed, attempt
from kit.runs.executing.warm import WarmPool

LAB = PIPELINES / "lab.py"


def lab_spec(info, **seed_values):
    stack = stack_kind("host").runnable()
    return RunSpec(
        dataset=info["sha256"],
        stack="host",
        stack_id=stack.identity,
        seeds=pipeline_seeds(info["seeds"], 0, **seed_values),
        pipeline=info["sha256"],
    ), stack


def make(spec, stack, folder, warm=None):
    folder.mkdir()
    return attempt(spec, stack, pipeline_file(spec.pipeline), folder, warm=warm)


def test_the_pipeline_field_keeps_every_existing_run_id_and_names_the_file():
    b = RunSpec(dataset="d" * 64, stack="host", stack_id="s" * 64)
    assert b.run_id == "f297b89734d77376d264740ad6597542851b8302bdd1f091e5e2581404caabc0"
    assert '"pipeline":' not in b.to_json() and '"pipeline":' not in b.worker_json()
    sha = "a" * 64
    a = RunSpec(
        dataset=sha,
        stack="host",
        stack_id="s" * 64,
        pipeline=sha,
        seeds=pipeline_seeds(("split", "init"), 1),
    )
    assert RunSpec.from_json(a.to_json()) == a and a.run_id != b.with_(dataset=sha).run_id
    assert json.loads(a.worker_json())["pipeline"] == sha
    assert a.seed_dict == {"split": 1, "init": 1}
    assert a.with_(pipeline="b" * 64, dataset="b" * 64).run_id != a.run_id  # an edited file
    with pytest.raises(ValueError, match="unknown seed name"):
        pipeline_seeds(("split",), 0, init=1)
    with pytest.raises(ValueError, match="sha256"):
        a.with_(dataset="d" * 64)
    with pytest.raises(ValueError, match="plain pipeline run"):
        a.with_(split=3)


def test_the_file_is_kept_by_hash_and_read_without_importing_it(tmp_path):
    info = add_pipeline(LAB)
    assert info["sha256"] == hashlib.sha256(LAB.read_bytes()).hexdigest()
    assert info["seeds"] == ["split", "init"] and info["kinds"]["emb"] == "embedding"
    assert pipeline_info(info["sha256"])["name"] == "lab.py"
    assert pipeline_file(info["sha256"]).read_bytes() == LAB.read_bytes()
    pipeline_file(info["sha256"]).write_bytes(b"SEEDS = ()\n")  # damaged under its name
    with pytest.raises(KitError, match="was edited after it was kept"):
        pipeline_file(info["sha256"])
    assert add_pipeline(LAB) == info and pipeline_file(info["sha256"])  # rewritten whole
    f = tmp_path / "mine.py"
    f.write_text("SEEDS = tuple(['a'])\ndef run(seeds): pass\n")
    with pytest.raises(KitError, match="mine.py:1: SEEDS must be written out as a literal"):
        add_pipeline(f)
    f.write_text("KINDS = {'x': 'lables'}\nSEEDS = ()\n")
    with pytest.raises(KitError, match="did you mean labels\\?"):
        add_pipeline(f)


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: {},  # emptied
        lambda d: {**d, "name": "x\nimport os.py"},  # a name that becomes code
        lambda d: {**d, "seeds": "split"},  # not a tuple of names
        lambda d: {**d, "kinds": {"emb": "planted"}},  # not a kind
        lambda d: {**d, "sha256": "0" * 64},  # another pipeline's record
        lambda d: {**d, "extra": 1},
    ],
)
def test_a_damaged_or_planted_record_of_a_file_is_one_line(edit):
    """What add_pipeline records beside the file is read by its schema, never trusted whole:
    a damaged record was a KeyError in every reader."""
    from kit.core.paths import subdir

    info = add_pipeline(LAB)
    record = subdir("pipelines") / "by-hash" / f"{info['sha256']}.json"
    record.write_text(json.dumps(edit(json.loads(record.read_text()))))
    with pytest.raises(KitError, match="is damaged; run the file again") as e:
        pipeline_info(info["sha256"])
    assert "\n" not in str(e.value)
    record.write_text("{")
    with pytest.raises(KitError, match="damaged"):
        pipeline_info(info["sha256"])


@pytest.mark.slow
def test_the_worker_runs_it_fresh_and_warm_and_repeat_names_the_loose_output(tmp_path):
    info = add_pipeline(LAB)
    spec, stack = lab_spec(info)
    fresh = make(spec, stack, tmp_path / "a")
    assert fresh["outputs"] == ["emb", "clusters", "y_test", "p_lr", "jitter"]  # run's order
    assert sorted(fresh["stages"]) == sorted(fresh["outputs"])
    assert fresh["seeds"] == {"split": 0, "init": 0}
    assert fresh["stages"]["emb"]["shape"] == [300, 5]
    assert (tmp_path / "a" / "out" / "emb.npy").exists()
    pool = WarmPool()
    try:
        warm = [make(spec, stack, tmp_path / n, pool) for n in ("b", "c")]
    finally:
        pool.close()
    for m in warm:
        assert [k for k in fresh["stages"] if m["stages"][k] != fresh["stages"][k]] == ["jitter"]
    split = make(lab_spec(info, split=1)[0], stack, tmp_path / "d")
    assert {k for k in fresh["stages"] if split["stages"][k] != fresh["stages"][k]} == {
        "y_test",
        "p_lr",
        "jitter",
    }


def _failure(tmp_path, source: str) -> str:
    """The one line a fresh worker's run of pipeline ``source`` (as mine.py) fails with."""
    f = tmp_path / "mine.py"
    f.write_text(source)
    spec, stack = lab_spec(add_pipeline(f))
    with pytest.raises(WorkerFailed) as e:
        make(spec, stack, tmp_path / "a")
    return str(e.value)


@pytest.mark.slow
def test_a_failing_pipeline_is_one_line_and_its_traceback_is_in_the_log(tmp_path):
    line = _failure(
        tmp_path,
        "import numpy as np\nSEEDS = ('a',)\ndef run(seeds):\n"
        "    return {'x': np.zeros(2) / missing[seeds['a']]}\n",
    )
    assert "\n" not in line and "NameError" in line and "mine.py:4 in run" in line
    assert line.count("in run") == 1 and "its traceback: " in line
    log = Path(line.split("its traceback: ")[1])
    assert "Traceback (most recent call last)" in log.read_text()
    f = tmp_path / "mine.py"
    f.write_text(
        "import numpy as np\nSEEDS = ('a', 'b')\ndef run(seeds):\n"
        "    return {'x': np.zeros(2) + seeds['a']}\n"
    )
    spec, stack = lab_spec(add_pipeline(f))
    with pytest.raises(WorkerFailed, match=r"never reads seeds\['b'\]"):
        make(spec, stack, tmp_path / "b")


MODULE_RNG = """import numpy as np
SEEDS = ("init",)
RNG = np.random.default_rng(42)  # drawn at import: seeded, but its state moves run to run
def run(seeds):
    x = np.random.default_rng(seeds["init"]).normal(size=20)
    return {"x": x, "noise": x + RNG.normal(size=20)}
"""


@pytest.mark.slow
def test_a_module_level_generator_is_named_by_the_process_factor(tmp_path):
    from kit.app.audit import run_file
    from kit.runs.planning.options import PlanOptions
    from kit.runs.store import Store
    from kit.worker import contract

    f = tmp_path / "carried.py"
    f.write_text(MODULE_RNG)
    # one process imports the file once, as a notebook does: the second call draws on
    first, again = (contract.call(contract.load(f), {"init": 0}) for _ in range(2))
    assert (first["x"] == again["x"]).all() and (first["noise"] != again["noise"]).all()
    b = run_file(f, ("repeat", "process"), PlanOptions(threads=(1,)), Store())
    process = b["factors"]["process"]["outputs"]
    assert process["noise"]["changed"] == 1 and process["x"]["changed"] == 0
    assert "noise" in b["loose"] and "x" not in b["loose"]
    assert b["loose_line"].startswith("noise differs between runs with the same named seeds")
    if not b["factors"]["repeat"]["outputs"]["noise"]["changed"]:  # two fresh draws agreed
        assert (
            "noise differs only in a worker that made a run before: state kept at module "
            "level" in b["loose_line"]
        )


@pytest.mark.slow
def test_a_pipeline_s_own_failures_point_at_the_pipeline_not_the_stack(tmp_path):
    """Its own ModuleNotFoundError in a fresh worker is its line, with where the file runs
    from; a sys.exit or argparse at import is caught; a failing warm primer names a log that
    exists; and the warm worker lives on."""
    f = tmp_path / "mine.py"
    line = _failure(
        tmp_path,
        "import numpy as np\nimport helpers_beside_me\nSEEDS = ('a',)\n"
        "def run(seeds):\n    return {'x': np.zeros(2) + seeds['a']}\n",
    )
    assert "ModuleNotFoundError" in line and "kit stacks build" not in line, line
    assert "mine.py:2" in line and "kit's copy kept by its hash" in line and "\n" not in line
    f.write_text(
        "import argparse\nimport numpy as np\nSEEDS = ('a',)\n"
        "ARGS = argparse.ArgumentParser().parse_args()  # a script's habit\n"
        "def run(seeds):\n    if seeds['a'] == 7919:\n        raise SystemExit(3)\n"
        "    return {'x': np.zeros(2) + seeds['a']}\n"
    )
    spec, stack = lab_spec(add_pipeline(f))
    pool = WarmPool()
    try:
        with pytest.raises(WorkerFailed) as e:
            make(spec.with_(process="warm"), stack, tmp_path / "c", pool)
        line = str(e.value)
        assert "SystemExit: 3" in line and "primer run, every seed 7919" in line, line
        assert Path(line.split("its traceback: ")[1].split(" (in the")[0]).exists()
        got = make(spec, stack, tmp_path / "b", pool)  # the same worker, alive; argv the file's
        assert got["outputs"] == ["x"] and got["runs_before"] == 1
    finally:
        pool.close()


@pytest.mark.parametrize(
    "source,words",
    [
        (
            b"KINDS = {['x']: 'labels'}\nSEEDS = ()\n",
            "odd.py:1: KINDS must be written out as a literal",
        ),
        (b"SEEDS = ('a',)\x00\n", "odd.py: the pipeline file does not parse (source code string"),
        (b"SEEDS = (\n", "odd.py:1: the pipeline file does not parse"),
    ],
)
def test_what_kit_reads_without_running_the_file_is_one_line(tmp_path, source, words):
    f = tmp_path / "odd.py"
    f.write_bytes(source)
    with pytest.raises(KitError) as e:
        add_pipeline(f)
    assert str(e.value).startswith(words) and "None" not in str(e.value), str(e.value)


def test_an_annotated_seeds_is_read_as_the_worker_reads_it(tmp_path):
    f = tmp_path / "typed.py"
    f.write_text(
        "SEEDS: tuple = ('a',)\nKINDS: dict = {'x': 'labels'}\ndef run(seeds):\n    pass\n"
    )
    info = add_pipeline(f)
    assert info["seeds"] == ["a"] and info["kinds"] == {"x": "labels"}
