"""A lab pipeline's runs between two KIT_HOMEs (two host ids): exported by any of its factors
(seed:NAME included), compared only with the very file they were made with, and their reruns
here found again as the factor host, which `kit budget --pipeline` then shows."""

import json
import shutil

import pytest
from places import PIPELINES

from kit.app.audit import run_pairs
from kit.app.reproduce import keep_pipeline_files
from kit.cli import main
from kit.core.errors import KitError
from kit.data.pipelines import add_pipeline, file_sha256
from kit.runs.planning.options import PlanOptions
from kit.runs.planning.plan import plan_file
from kit.runs.store import Store

HERE = PIPELINES
LAB, TWO = HERE / "lab.py", HERE / "two_models.py"


def kit_cli(capsys, *argv):
    code = main(list(argv))
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.mark.slow
def test_export_by_seed_name_compare_only_with_the_same_file_and_the_host_row(
    capsys, tmp_path, monkeypatch
):
    info = add_pipeline(TWO)
    plan = [
        p
        for f in ("repeat", "seed:forest")
        for p in plan_file(f, info, PlanOptions(threads=(1,), seeds=(0, 1)))
    ]
    run_pairs(plan, info, Store())
    bundle = tmp_path / "lab.kit"
    code, out, err = kit_cli(
        capsys,
        "export",
        "--pipeline",
        str(TWO),
        "--factor",
        "seed:forest",
        "--arrays",
        "--out",
        str(bundle),
    )
    assert code == 0 and "2 runs" in out, err  # the base run and forest=1, not the replicate
    code, _, err = kit_cli(
        capsys,
        "export",
        "--pipeline",
        str(TWO),
        "--factor",
        "seed:nope",
        "--out",
        str(tmp_path / "no.kit"),
    )
    assert code == 1 and "no pairs of factor 'seed:nope'" in err and "seed:forest" in err
    assert err.strip().count("\n") == 0 and not (tmp_path / "no.kit").exists()
    with pytest.raises(SystemExit) as usage:  # kit's own dataset: kit's own names, as before
        main(["export", "--factor", "seed:forest", "--out", str(tmp_path / "kit.kit")])
    assert usage.value.code == 2 and "unknown factor 'seed:forest'" in capsys.readouterr().err

    other = tmp_path / "other"
    monkeypatch.setenv("KIT_HOME", str(other))  # another KIT_HOME: another host
    edited = tmp_path / "two_models.py"
    edited.write_text(TWO.read_text() + "# edited\n")
    code, _, err = kit_cli(capsys, "compare", str(bundle), "--pipeline", str(edited))
    assert code == 1 and err.strip().count("\n") == 0, err
    assert (
        f"differs from the file the bundle's runs were made with: it hashes to "
        f"{file_sha256(edited)[:12]}, the bundle's pipeline is two_models.py "
        f"({info['sha256'][:12]})" in err
    )
    assert not (other / "pipelines").exists() and not Store().runs()  # nothing written

    code, out, err = kit_cli(capsys, "compare", str(bundle), "--pipeline", str(TWO), "--json")
    assert code == 0, err
    assert json.loads(out)["pairs"] == 2
    code, out, err = kit_cli(capsys, "budget", "--pipeline", str(TWO), "--json")
    assert code == 0, err
    rows = json.loads(out)["factors"]
    assert rows["host"]["pairs"] == 2  # each run and its rerun here, found from the specs
    assert all(o["changed"] == 0 for o in rows["host"]["outputs"].values())  # all seeded
    assert list(rows) == ["host", "seed:forest"]  # kit's factor order
    code, out, _ = kit_cli(capsys, "budget", "--pipeline", str(TWO))
    assert code == 0 and "host" in out


def test_a_bundle_of_several_pipelines_says_which_the_file_is_not(tmp_path):
    doc = {"datasets": {"a" * 64: {"pipeline": "lab.py"}, "b" * 64: {"pipeline": "two.py"}}}
    copy = tmp_path / "mine.py"
    shutil.copy(LAB, copy)
    with pytest.raises(
        KitError,
        match=r"runs name 2 pipelines: lab.py \(aaaaaaaaaaaa\), "
        r"two.py \(bbbbbbbbbbbb\)",
    ):
        keep_pipeline_files(doc, {"a" * 64, "b" * 64}, [copy])
    with pytest.raises(KitError, match="no pipeline file's runs"):
        keep_pipeline_files(doc, set(), [copy])
    lab = file_sha256(LAB)
    doc["datasets"][lab] = {"pipeline": "lab.py"}
    with pytest.raises(
        KitError,
        match=r"runs name 2 pipelines: .*; the file of two.py "
        r"\(bbbbbbbbbbbb\) is not here: give --pipeline FILE.py once",
    ):
        keep_pipeline_files(
            doc, {lab, "b" * 64}, [copy]
        )  # the same bytes as lab.py, under another name
    assert not (
        tmp_path / "kit-home" / "pipelines" / "by-hash" / f"{lab}.py"
    ).exists()  # refused first


@pytest.mark.slow
def test_a_hashes_only_bundle_compares_by_bits_and_says_what_it_cannot_measure(
    capsys, tmp_path, monkeypatch
):
    """Without --arrays the collaborator's runs hold digests only: the loose output's bits
    differ here, and kit says so (and how to measure it) instead of stopping with an error."""
    info = add_pipeline(LAB)
    run_pairs(plan_file("repeat", info, PlanOptions(threads=(1,))), info, Store())
    bundle = tmp_path / "lab.kit"
    assert kit_cli(capsys, "export", "--pipeline", str(LAB), "--out", str(bundle))[0] == 0
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "other"))
    code, out, err = kit_cli(capsys, "compare", str(bundle), "--pipeline", str(LAB))
    assert code == 0, err
    assert "jitter" in out and "by how much not measured" in " ".join(out.split())
    code, out, _ = kit_cli(capsys, "tolerances", "--pipeline", str(LAB), "--format", "json")
    rows = {r["output"]: r for r in json.loads(out)}
    assert rows["jitter"]["pin"] and rows["emb"]["level"] == "nothing"


@pytest.mark.slow
def test_a_bundle_without_its_file_forged_then_read_with_the_file_is_one_line_each(
    capsys, tmp_path, monkeypatch
):
    """A lab bundle stripped of its pipeline file skips the kind checks at import; once the
    file is given, every reader leaves the unfit run out instead of failing inside."""
    import numpy as np

    from kit.runs.planning.options import PlanOptions as Opts
    from tests.app.test_bundle_derived import forge, restage

    info = add_pipeline(LAB)
    run_pairs(
        [
            p
            for f in ("repeat", "seed")
            for p in plan_file(f, info, Opts(threads=(1,), seeds=(0, 1)))
        ],
        info,
        Store(),
    )
    bundle = tmp_path / "lab.kit"
    assert main(["export", "--pipeline", str(LAB), "--arrays", "--out", str(bundle)]) == 0

    def edit(doc, ms):
        doc["pipelines"] = {}  # the file left behind: its KINDS unknown to the importer
        for i, r in enumerate(doc["runs"]):
            restage(r, ms, "emb", np.zeros(300) + i)  # an embedding must be 2-d
        used = {f"arrays/{b}.npy" for r in doc["runs"] for b in r["blobs"].values()}
        for n in [n for n in ms if n.startswith("arrays/") and n not in used]:
            del ms[n]

    forged = forge(bundle, tmp_path / "forged.kit", edit)
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "here"))
    assert main(["import", str(forged)]) == 0
    capsys.readouterr()
    for cmd in ("budget", "verdicts", "advise", "tolerances", "report"):
        extra = ["--out", str(tmp_path / "report")] if cmd == "report" else []
        code = main([cmd, "--pipeline", str(LAB), *extra])
        out, err = capsys.readouterr()
        assert code == 0 and "internal error" not in err and "Traceback" not in err, (cmd, err)
        if cmd in ("budget", "verdicts"):  # the run left out is said, once, in one line
            said = [line for line in out.splitlines() if "UNFIT" in line]
            assert said and all(
                "is declared embedding" in line and "left out" in line for line in said
            ), out
