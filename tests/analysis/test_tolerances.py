"""`kit tolerances`: per output, the rtol/atol the measured environment factors need, measured
from the stored pairs (never seeds, precision or the null experiment), what reaches
predictions pinned, and each format usable as it says."""

import json

import numpy as np
import pytest
import yaml
from places import PIPELINES

from kit.analysis.compare import aligned
from kit.analysis.tolerances import HEADROOM, from_rows, is_environment, tolerances
from kit.app.audit import run_pairs
from kit.cli import main
from kit.core import factors
from kit.core.subject import of_dataset, of_pipeline
from kit.data.pipelines import add_pipeline
from kit.runs.planning.options import PlanOptions
from kit.runs.planning.plan import plan_file
from kit.runs.store import Store
from kit.views.tolerances import render, text, up

LAB = PIPELINES / "lab.py"


def test_the_registry_says_which_factors_are_tolerated():
    assert [f.name for f in factors.table() if f.tolerated] == [
        "host",
        "threads",
        "arch",
        "blas",
        "numpy",
        "python",
        "sklearn",
        "container",
        "os",
        "torch-threads",
        "torch-device",
    ]
    for name in (
        "repeat",
        "process",
        "precision",
        "seed",
        "seed:split",
        "perturb",
        "torch-deterministic",
        "seed:init",
        "no-such-factor",
    ):
        assert not is_environment(name)


def _o(kind, pairs_changed=1, **most):
    return {"kind": kind, "changed": pairs_changed, "most": most}


def test_levels_pins_and_the_factor_that_set_each_tolerance():
    rows = {
        "threads": {
            "pairs": 2,
            "outputs": {
                "emb": _o("embedding", max_abs=1e-15, max_rel=1e-13),
                "clusters": _o("labels", 0),
                "p_lr": _o("probabilities", max_abs=1e-16, max_rel=1e-15),
                "p_rf": _o("probabilities", max_abs=0.01, max_rel=0.02, flips=0),
            },
        },
        "sklearn": {
            "pairs": 1,
            "outputs": {
                "emb": _o("embedding", max_abs=3e-12, max_rel=2e-14),
                "clusters": _o("labels", max_abs=2.0, changed=4),
                "p_lr": _o("probabilities", max_abs=1e-15, max_rel=1e-14),
                "p_rf": _o("probabilities", max_abs=0.4, max_rel=0.9, flips=3),
            },
        },
        "seed:init": {"pairs": 5, "outputs": {"emb": _o("embedding", max_abs=9.0, max_rel=9.0)}},
        "precision": {"pairs": 1, "outputs": {"emb": _o("embedding", max_abs=1e-7, max_rel=1e-6)}},
    }
    t = from_rows(
        rows, {"pipeline": "a" * 64, "name": "x.py"}, {"sklearn": {"p_lr"}}, loose=["jitter"]
    )
    by = {r["output"]: r for r in t["tolerances"]}
    assert t["factors"] == ["threads", "sklearn"] and t["ignored"] == ["seed:init", "precision"]
    emb = by["emb"]  # the seed's 9.0 and float32's 1e-7 never widen it
    assert (emb["factor"], emb["level"], emb["pin"]) == ("sklearn", "magnitudes", False)
    assert emb["atol"] == 3e-12 * HEADROOM and emb["rtol"] == 1e-13 * HEADROOM
    assert emb["pairs"] == 3
    rf = by["p_rf"]
    assert (rf["factor"], rf["level"], rf["pin"], rf["atol"], rf["rtol"]) == (
        "sklearn",
        "predictions",
        True,
        None,
        None,
    )
    assert "3 prediction(s) cross 0.5" in rf["why"] and "pin, don't tolerate" in rf["why"]
    assert by["clusters"]["pin"] and "4 of its discrete values changed" in by["clusters"]["why"]
    assert by["p_lr"]["level"] == "conclusions" and by["p_lr"]["pin"]
    loose = from_rows(
        {"threads": {"pairs": 1, "outputs": {"jitter": _o("array", max_abs=1e-9)}}},
        {"pipeline": "a" * 64, "name": "x.py"},
        loose=["jitter"],
    )
    assert loose["tolerances"][0]["pin"] and "loose generator" in loose["tolerances"][0]["why"]
    # set by the loose generator, not by the environment factor that met it (a drive read
    # "set by threads" as "pin the threads")
    assert loose["tolerances"][0]["factor"] is None and loose["tolerances"][0]["loose"]
    line = next(ln for ln in text(loose).splitlines() if ln.startswith("jitter"))
    assert "PIN: seed it first" in line and "loose generator" in line and "threads" not in line
    yml = yaml.safe_load(render(t, "pytest-regressions"))["tolerances"]
    assert yml["emb"] == {"rtol": float(up(2e-13)), "atol": float(up(6e-12))}
    assert yml["p_rf"] == {"rtol": 0.0, "atol": 0.0}  # pinned: compared exactly
    listed = json.loads(render(t, "json"))
    assert {k for r in listed for k in r} >= {"output", "rtol", "atol", "factor", "level", "pin"}
    assert "PIN: don't tolerate" in render(t, "text")


def test_a_tolerance_as_wide_as_the_values_is_a_pin_never_numbers():
    """The digits example's metrics: [score in 0..1, inertia ~6e3] moved by 3e3 needs an atol
    that passes any score; centroids moved by 4x their own size need rtol >= 1. Neither is a
    tolerance a test could fail."""
    rows = {
        "sklearn": {
            "pairs": 1,
            "outputs": {
                "scores": _o("array", max_abs=3.2e3, max_rel=0.2),
                "centroids": _o("array", max_abs=0.5, max_rel=2.0),
                "emb": _o("embedding", max_abs=1e-12, max_rel=1e-10),
                "inertia": _o("array", max_abs=1e-9, max_rel=1e-13),
            },
        }
    }
    t = from_rows(
        rows,
        {"pipeline": "a" * 64, "name": "x.py"},
        spreads={"scores": 6.35e3, "centroids": 16.0, "emb": 3.0},
    )
    by = {r["output"]: r for r in t["tolerances"]}
    for name, words in (
        ("scores", "atol 6.4e+03 is at least half the spread of its values"),
        ("centroids", "rtol 4 is at least 1"),
    ):
        r = by[name]
        assert (r["pin"], r["wide"], r["rtol"], r["atol"]) == (True, True, None, None), r
        assert words in r["why"] and "pin, don't tolerate" in r["why"]
    # a value's own change far below its values' range, or a single value (no range): numbers
    assert by["emb"]["atol"] == 2e-12 and not by["emb"]["pin"]
    assert by["inertia"]["atol"] == 2e-9 and not by["inertia"]["pin"]
    shown = text(t)
    assert shown.count("PIN: too wide to test") == 2 and "2.00e-12" in shown
    assert "Left out, the lab pins them: blas." in text({**t, "pinned": ["blas"]})


def test_up_never_rounds_below_the_need():
    for x in (1.234567e-13, 9.999e-5, 1e-16, 0.005, 7.47e-13):
        assert float(up(x)) >= x and float(up(x)) <= x * 1.01
    assert up(0.0) == up(None) == "0.0"


@pytest.fixture
def threads_store():
    assert (
        main(["run", "--factor", "threads,repeat", "--threads", "1,2", "--n", "150", "--yes"]) == 0
    )
    store = Store()
    return store, store.latest_dataset()


@pytest.mark.slow
def test_kit_pipeline_tolerances_are_measured_from_its_stored_pairs(
    threads_store, capsys, tmp_path
):
    store, ds = threads_store
    capsys.readouterr()
    t = tolerances(store, of_dataset(ds, store.datasets()[ds]))
    assert t["factors"] == ["threads"] and t["ignored"] == ["repeat"]
    by = {r["output"]: r for r in t["tolerances"]}
    (p,) = [p for p in store.pairs(ds) if p.factor == "threads"]
    a, b = store.array(p.a, "svd_rand"), store.array(p.b, "svd_rand")
    d = np.abs(a - aligned(a, b))
    assert by["svd_rand"]["max_abs"] == float(d.max()) > 0  # measured, independently here
    assert by["svd_rand"]["atol"] == HEADROOM * float(d.max())
    assert by["kmeans"]["kind"] == "labels" and by["y_test"]["kind"] == "truth"
    ra, rb = store.run(p.a), store.run(p.b)
    for name, r in by.items():  # identical bits: compared exactly
        if ra.stages[name].sha256 == rb.stages[name].sha256:
            assert (r["level"], r["rtol"], r["atol"]) == ("nothing", 0.0, 0.0)
    # the numpy snippet passes on the stored pair, whichever run is the reference
    ns: dict = {}
    exec(render(t, "numpy"), ns)
    runs = [{n: store.array(r, n) for n in by} for r in (p.a, p.b)]
    ns["check"](runs[1], runs[0])
    ns["check"](runs[0], runs[1])
    out = tmp_path / "tol.yml"
    assert main(["tolerances", "--format", "pytest-regressions", "--out", str(out)]) == 0
    got = yaml.safe_load(out.read_text())["tolerances"]
    assert got["svd_rand"]["atol"] >= by["svd_rand"]["atol"] and got["knn"] == {
        "rtol": 0.0,
        "atol": 0.0,
    }
    assert main(["tolerances", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(t["tolerances"]))
    # the factors a lab will pin are left out, and the written file says so
    assert main(["tolerances", "--pin", "threads"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "no tolerances: no environment factor left to tolerate: the lab pins threads" in out
    pinned = tolerances(store, of_dataset(ds, store.datasets()[ds]), pin=("threads",))
    assert pinned["factors"] == [] and pinned["pinned"] == ["threads"]
    with pytest.raises(SystemExit) as usage:
        main(["tolerances", "--pin", "thread"])
    assert (
        usage.value.code == 2
        and "argument --pin: unknown factor 'thread': did you mean threads"
        in capsys.readouterr().err
    )


@pytest.mark.slow
def test_a_lab_pipeline_read_from_its_budget_never_from_its_seeds():
    info = add_pipeline(LAB)
    plan = [
        p
        for f in ("repeat", "seed:init")
        for p in plan_file(f, info, PlanOptions(threads=(1, 2), seeds=(0, 1)))
    ]
    store = Store()
    run_pairs(plan, info, store)
    t = tolerances(store, of_pipeline(info))
    assert t["ignored"] == ["repeat", "seed:init"]
    # threads pairs are among these runs (1 and 2 threads, same seeds); where kit.analysis.
    # budget.output_budget finds them, jitter (the loose output) is pinned, never tolerated
    assert set(t["factors"]) <= {"threads"}
    for r in t["tolerances"]:
        assert r["output"] != "jitter" or r["pin"]
    if not t["factors"]:
        assert "no environment factor is stored" in t["note"]


def test_wrong_arguments_are_one_line(capsys, tmp_path):
    assert main(["tolerances", "--pipeline", str(tmp_path / "none.py")]) == 1
    assert capsys.readouterr().err.startswith("kit: error: no pipeline file")
    # --out's rule is every command's (tests/core/test_atomic.py): a folder there is said at once
    assert main(["tolerances", "--pipeline", str(LAB), "--out", str(tmp_path)]) == 1
    assert f"cannot write {tmp_path}: it is a folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["tolerances", "--format", "yaml"])
    assert e.value.code == 2 and "invalid choice: 'yaml'" in capsys.readouterr().err
    assert main(["tolerances", "--pipeline", str(LAB), "--dataset", "synthetic"]) == 1
    assert "--pipeline reads its own data" in capsys.readouterr().err


def test_a_nan_a_boolean_mask_or_a_string_that_changed_is_pinned_never_nan():
    from kit.analysis.by_kind import output_diff, tally

    x = np.linspace(1.0, 2.0, 8)
    nan = x.copy()
    nan[3] = np.nan  # one run's value turned NaN (say, at 2 threads)
    pairs = {
        "x": (x, nan, "array"),
        "mask": (x > 1.5, x > 1.2, "array"),
        "names": (np.array(["a", "b"]), np.array(["a", "c"]), "array"),
        "same_nan": (nan, nan.copy() + np.r_[1e-15, np.zeros(7)], "array"),
    }
    diffs = {
        k: {"kind": kind, "identical": False, **output_diff(a, b, kind)}
        for k, (a, b, kind) in pairs.items()
    }
    assert diffs["x"]["nonfinite"] == 1 and diffs["x"]["max_abs"] == 0.0
    assert "nonfinite" not in diffs["same_nan"] and 0 < diffs["same_nan"]["max_abs"] < 1e-14
    row = {"pairs": 0, "outputs": {}}
    tally(row, diffs)
    t = from_rows({"threads": row}, {"pipeline": "a" * 64, "name": "x.py"})
    by = {r["output"]: r for r in t["tolerances"]}
    for name in ("x", "mask", "names"):
        assert (by[name]["level"], by[name]["pin"]) == ("predictions", True), by[name]
    assert "NaN or inf in one run only" in by["x"]["why"]
    assert by["same_nan"]["level"] == "magnitudes" and not by["same_nan"]["pin"]
    yml = yaml.safe_load(render(t, "pytest-regressions"))["tolerances"]
    assert all(np.isfinite(v) for tol in yml.values() for v in tol.values())
    assert all(
        r[k] is None or np.isfinite(r[k])
        for r in json.loads(render(t, "json"))
        for k in ("rtol", "atol", "max_abs", "max_rel")
    )
    assert "=nan" not in render(t, "numpy") and " nan " not in render(t, "text")


def test_a_lab_verdict_an_environment_factor_changed_lifts_its_models_to_conclusions():
    from kit.analysis.tolerances import changed_models

    row = lambda changed: {"changed": changed, "models": ["p-rf", "p_lr"]}  # noqa: E731
    verdicts = {
        "factors": {
            "threads": {"verdicts": {"p-rf-p_lr acc": row(1), "p-rf-p_lr auc": row(0)}},
            "seed": {"verdicts": {"p-rf-p_lr acc": row(0)}},
        }
    }
    got = changed_models(verdicts)
    assert got == {"threads": {"p-rf", "p_lr"}, "seed": set()}  # names kept whole
    rows = {
        "threads": {
            "pairs": 1,
            "outputs": {
                "p-rf": _o("probabilities", max_abs=0.01, max_rel=0.02, flips=0),
                "other": _o("probabilities", max_abs=0.01, max_rel=0.02, flips=0),
            },
        }
    }
    by = {r["output"]: r for r in from_rows(rows, {"name": "x.py"}, got)["tolerances"]}
    assert (by["p-rf"]["level"], by["p-rf"]["pin"]) == ("conclusions", True)
    assert (by["other"]["level"], by["other"]["pin"]) == ("magnitudes", False)


def test_with_no_environment_factor_it_names_the_pipeline_s_own_command(capsys, monkeypatch):
    """Drive 35 #6: `kit run --factor threads` measures kit's own pipeline, not the file's."""
    import kit.analysis.tolerances as tol

    monkeypatch.setattr(
        tol,
        "output_budget",
        lambda store, subject: {
            "factors": {"repeat": {"pairs": 1, "outputs": {}}},
            "pipeline": subject.sha256,
            "name": subject.name,
            "loose": [],
        },
    )
    monkeypatch.setattr(tol, "output_verdicts", lambda store, subject: {"factors": {}})
    assert main(["tolerances", "--pipeline", str(LAB)]) == 0
    out = capsys.readouterr().out
    assert f"measure one first (kit run --pipeline {LAB} --factor threads)" in out


def _no_environment(monkeypatch, loose=()):
    """A lab pipeline whose budget holds repeat and seed only (``loose``: outputs the repeat
    changed), as after `kit run --pipeline FILE --factor repeat,seed`."""
    import kit.analysis.tolerances as tol

    monkeypatch.setattr(
        tol,
        "output_budget",
        lambda store, subject: {
            "factors": {"repeat": {"pairs": 1, "outputs": {}}, "seed": {"pairs": 1, "outputs": {}}},
            "pipeline": subject.sha256,
            "name": subject.name,
            "loose": list(loose),
        },
    )
    monkeypatch.setattr(tol, "output_verdicts", lambda store, subject: {"factors": {}})


@pytest.mark.parametrize("form", ["pytest-regressions", "numpy", "json"])
def test_a_file_format_with_no_environment_factor_exits_non_zero_with_the_table_s_reason(
    capsys, monkeypatch, tmp_path, form
):
    """Drive 56 #3: an empty tolerance file with exit 0 is what a lab's CI would commit."""
    _no_environment(monkeypatch, loose=["p_rf"])
    assert main(["tolerances", "--pipeline", str(LAB)]) == 0
    table = " ".join(capsys.readouterr().out.split())
    assert "no environment factor is stored: measure one first" in table
    out = tmp_path / "tol.out"
    assert main(["tolerances", "--pipeline", str(LAB), "--format", form, "--out", str(out)]) == 1
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert captured.out == "" and not out.exists() and "Traceback" not in err
    assert err.startswith("kit: ") and err.count("kit: ") == 1
    reason = table[table.index("no tolerances:") :]
    assert reason.split("LOOSE")[0].strip() in err  # the same reason the table gives
    assert "LOOSE GENERATOR: p_rf differs" in err and "LOOSE GENERATOR: p_rf differs" in table


def test_a_loose_generator_is_stated_in_every_format_and_each_header_names_what_it_holds():
    rows = {
        "threads": {
            "pairs": 1,
            "outputs": {
                "p": {
                    "kind": "probabilities",
                    "changed": 1,
                    "most": {"max_abs": 1e-9, "max_rel": 1e-9},
                },
                "q": {"kind": "floats", "changed": 1, "most": {"max_abs": 1e-12, "max_rel": 1e-12}},
            },
        }
    }
    t = from_rows(rows, {"pipeline": "a" * 64, "name": "x.py"}, loose=["p"])
    assert "LOOSE GENERATOR: p differs" in " ".join(render(t, "text").split())
    doc = yaml.safe_load(render(t, "pytest-regressions"))
    assert doc["loose_generator"] == ["p"] and doc["tolerances"]["p"] == {"rtol": 0.0, "atol": 0.0}
    assert "loose generator" in doc["why"]["p"]
    ns: dict = {}
    exec(render(t, "numpy"), ns)
    assert "LOOSE GENERATOR: p differs" in ns["LOOSE_GENERATOR"] and "LOOSE" in ns["__doc__"]
    assert [r["loose"] for r in json.loads(render(t, "json"))] == [True, False]
    # the YAML holds no code: its header names aligned() nowhere, and no line up where none is
    yml = render(t, "pytest-regressions")
    assert "aligned(" not in yml and "line up" not in yml and "aligned: {}" in yml
    assert "aligned(" in render(t, "numpy")
    # without a loose generator none is said
    t = from_rows(rows, {"pipeline": "a" * 64, "name": "x.py"})
    assert "LOOSE GENERATOR:" not in render(t, "text") + render(t, "pytest-regressions") + render(
        t, "numpy"
    )
    assert yaml.safe_load(render(t, "pytest-regressions"))["loose_generator"] == []


_LAB_TEST = """
from pathlib import Path

import numpy as np
import yaml
from tolerances import aligned

HERE = Path(__file__).parent
TOLERANCES = yaml.safe_load(open(HERE / "tolerances.yml"))["tolerances"]
EXPECTED = HERE / "expected_outputs.npz"


def test_pipeline(ndarrays_regression):
    out = dict(np.load(HERE / "outputs.npz"))  # what the pipeline's run(seeds) returned
    if ALIGN and EXPECTED.exists():
        out = aligned(out, dict(np.load(EXPECTED)))
    ndarrays_regression.check(out, fullpath=EXPECTED, tolerances=TOLERANCES)
"""


@pytest.mark.slow  # starts pytest in a subprocess, as a lab's own test run would
def test_a_lab_s_pytest_regressions_test_passes_another_sign_and_numbering_with_kit_s_tolerance(
    tmp_path,
):
    """An embedding with one column's sign flipped and centroids renumbered (k-means' and the
    SVD's arbitrary choices) beside tiny real changes: ndarrays_regression with kit's
    tolerances fails them as they are, and passes them lined up by the generated aligned()."""
    import subprocess
    import sys

    from kit.analysis.by_kind import output_diff

    rng = np.random.default_rng(0)
    emb, cen = rng.normal(size=(30, 3)), rng.normal(size=(4, 2)) * 5
    emb2 = emb * np.array([1.0, -1.0, 1.0]) + rng.normal(scale=1e-12, size=emb.shape)
    cen2 = cen[[2, 0, 3, 1]] + rng.normal(scale=1e-12, size=cen.shape)
    rows = {
        "threads": {
            "pairs": 1,
            "outputs": {
                "emb": {
                    "kind": "embedding",
                    "changed": 1,
                    "most": output_diff(emb, emb2, "embedding"),
                },
                "cen": {
                    "kind": "centroids",
                    "changed": 1,
                    "most": output_diff(cen, cen2, "centroids"),
                },
            },
        }
    }
    t = from_rows(rows, {"pipeline": "a" * 64, "name": "x.py"})
    by = {r["output"]: r for r in t["tolerances"]}
    assert not by["emb"]["pin"] and not by["cen"]["pin"] and by["cen"]["atol"] < 1e-9
    assert yaml.safe_load(render(t, "pytest-regressions"))["aligned"] == {
        "emb": "signs",
        "cen": "rows",
    }
    (tmp_path / "tolerances.yml").write_text(render(t, "pytest-regressions"))
    (tmp_path / "tolerances.py").write_text(render(t, "numpy"))

    def lab_test(outputs: dict, align: bool) -> subprocess.CompletedProcess:
        np.savez(tmp_path / "outputs.npz", **outputs)
        (tmp_path / "test_lab.py").write_text(f"ALIGN = {align}\n" + _LAB_TEST)
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:randomly",
                "test_lab.py",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )

    first = lab_test({"emb": emb, "cen": cen}, True)  # records the expected file, fails once
    assert first.returncode == 1 and "File not found in data directory, created" in first.stdout
    assert lab_test({"emb": emb2, "cen": cen2}, False).returncode == 1  # as they are: fails
    got = lab_test({"emb": emb2, "cen": cen2}, True)
    assert got.returncode == 0, got.stdout[-2000:]
    # a real change beyond the tolerance still fails once lined up
    assert lab_test({"emb": emb2 * 1.001, "cen": cen2}, True).returncode == 1
    # the numpy format's own check() does the same
    ns: dict = {}
    exec(render(t, "numpy"), ns)
    ns["check"]({"emb": emb2, "cen": cen2}, {"emb": emb, "cen": cen})
    with pytest.raises(AssertionError):
        ns["check"]({"emb": emb2, "cen": cen2 + 1e-3}, {"emb": emb, "cen": cen})
