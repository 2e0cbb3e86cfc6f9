"""A bundle of a lab pipeline's runs: what its manifests claim is checked against its stages,
kit's own stage-shape rules stay kit's, and compare reads every output either run returned."""

import json

import numpy as np
import pytest
from places import PIPELINES

from kit.analysis.by_kind import compare
from kit.app.audit import run_pairs
from kit.cli import main
from kit.data.pipelines import add_pipeline
from kit.runs.planning.options import PlanOptions
from kit.runs.planning.plan import plan_file
from kit.runs.store import Store
from tests.app.test_bundle_derived import forge

TWO = PIPELINES / "two_models.py"


def stored(path, factors, seeds=(0, 1)):
    info = add_pipeline(path)
    plan = [p for f in factors for p in plan_file(f, info, PlanOptions(threads=(1,), seeds=seeds))]
    store = Store()
    run_pairs(plan, info, store)
    return info, store, plan


def cli(capsys, *argv):
    code = main(list(argv))
    got = capsys.readouterr()
    return code, got.out, got.err


def exported(capsys, tmp_path, path, factors):
    info, store, plan = stored(path, factors)
    bundle = tmp_path / "lab.kit"
    code, out, err = cli(
        capsys, "export", "--pipeline", info["sha256"][:12], "--arrays", "--out", str(bundle)
    )
    assert code == 0, err
    return info, bundle


@pytest.mark.slow
def test_a_manifest_that_lists_other_outputs_than_its_stages_is_refused(
    capsys, tmp_path, monkeypatch
):
    info, bundle = exported(capsys, tmp_path, TWO, ("repeat",))
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "other"))
    for n, outputs in enumerate(
        (["nope"], ["y_test", "p_lr"], ["y_test", "p_lr", "p_rf", "p_lr"], "y_test p_lr p_rf")
    ):

        def edit(doc, ms, outputs=outputs):
            for r in doc["runs"]:
                r["manifest"]["outputs"] = outputs

        forged = forge(bundle, tmp_path / f"forged{n}.kit", edit)
        for argv in (("import", str(forged)), ("compare", str(forged), "--pipeline", str(TWO))):
            code, _, err = cli(capsys, *argv)
            assert code == 1 and err.strip().count("\n") == 0, (argv, outputs, err)
            assert "lists other outputs than the run's stages" in err and "Error" not in err
    code, _, err = cli(capsys, "import", str(bundle))  # the bundle as written: accepted
    assert code == 0, err


ONE_MORE = """import numpy as np
SEEDS = ("a",)
def run(seeds):
    out = {"x": np.arange(4.0) + seeds["a"]}
    if seeds["a"]:
        out["extra"] = np.zeros(3)
    return out
"""


@pytest.mark.slow
def test_compare_reads_the_outputs_either_run_returned(tmp_path):
    f = tmp_path / "more.py"
    f.write_text(ONE_MORE)
    info, store, plan = stored(f, ("seed:a",))
    (p,) = plan
    got = compare(store, p.a.run_id, p.b.run_id, {})
    assert list(got) == ["x", "extra"] and got["extra"]["missing"] == "a"
    assert compare(store, p.b.run_id, p.a.run_id, {})["extra"]["missing"] == "b"
    assert not np.isnan(got["x"]["rel"])


KIT_NAMES = """import numpy as np
SEEDS = ("a",)
KINDS = {"lr": "probabilities", "y_test": "truth", "knn": "neighbours"}
def run(seeds):
    p = np.random.default_rng(seeds["a"]).random(6)
    return {"lr": np.stack([1 - p, p], axis=1), "y_test": (p > 0.5).astype(np.int64),
            "knn": np.arange(18, dtype=np.int64).reshape(6, 3)}
"""


@pytest.mark.slow
def test_kits_own_stage_shape_rules_do_not_apply_to_a_labs_outputs(capsys, tmp_path, monkeypatch):
    f = tmp_path / "names.py"
    f.write_text(KIT_NAMES)
    info, bundle = exported(capsys, tmp_path, f, ("repeat",))
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "other"))
    code, out, err = cli(capsys, "compare", str(bundle), "--pipeline", str(f))
    assert code == 0 and "reproduced" in out, err


@pytest.mark.slow
def test_compare_says_no_prediction_flipped_only_of_a_pipeline_with_probabilities(
    capsys, tmp_path, monkeypatch
):
    f = tmp_path / "loose.py"
    f.write_text(
        "import numpy as np\nSEEDS = ('a',)\ndef run(seeds):\n"
        "    return {'x': np.random.default_rng().normal(size=3) + seeds['a']}\n"
    )
    info, bundle = exported(capsys, tmp_path, f, ("repeat",))
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "other"))
    code, out, err = cli(capsys, "compare", str(bundle), "--pipeline", str(f), "--json")
    answer = json.loads(out)["answer"]
    assert answer.startswith("differs: x in 2 of 2 runs") and "prediction" not in answer, answer
