"""Every read command on a store that holds every kind of run: no exception, the right rows.

The store (tests/support/every_kind.py) holds pipeline, torch and perturbed runs, svd-iters and
svd-solver, every named seed, cross-stack factors and imported runs from another host.
"""

import json

import pytest
from places import PIPELINES

from kit.cli import main

pytestmark = pytest.mark.slow


def run_json(capsys, *argv):
    assert main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def run_text(capsys, *argv):
    assert main(list(argv)) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_the_store_holds_every_kind(on_every_kind, capsys):
    runs = run_json(capsys, "runs", "--json")
    kinds = {r["spec"]["kind"] for r in runs}
    assert {"pipeline", "perturb"} <= kinds
    assert ("torch" in kinds) == on_every_kind["torch"]
    assert {r["spec"].get("embedding", "randomized") for r in runs} == {"randomized", "arpack"}
    # this machine's, the lab's, and the two cluster workers named as machines by the host factor
    assert {r["spec"]["host"] for r in runs} >= {"0", "1"}
    assert len({r["spec"]["host"] for r in runs}) == 4
    assert all(r["manifest"]["node"]["host"] for r in runs if r["spec"]["host"] in ("0", "1"))


def test_budget_has_a_row_for_every_factor(on_every_kind, capsys):
    b = run_json(capsys, "budget", "--json")
    assert {r["factor"] for r in b["rows"]} == set(on_every_kind["factors"])
    assert run_text(capsys, "budget").startswith("dataset synthetic-120")
    for f in on_every_kind["factors"]:
        assert main(["budget", "--factor", f]) == 0
    capsys.readouterr()


def test_verdicts_read_only_runs_that_have_verdicts(on_every_kind, capsys):
    rep = run_json(capsys, "verdicts", "--json")
    assert not any(name.startswith("torch") for name in rep)  # the torch MLP has no verdicts
    assert {"seeds", "perturb", "svd-solver", "host"} <= set(rep)
    assert all(len(rows) == 12 for rows in rep.values())
    run_text(capsys, "verdicts")
    for name in rep:
        run_text(capsys, "verdicts", "--set", name)


def test_advise_amplify_and_report(on_every_kind, capsys, tmp_path):
    a = run_json(capsys, "advise", "--json")
    ranked = [r["factor"] for r in a["ranking"]]
    assert "svd-solver" not in ranked and "perturb" not in [r.split("=")[0] for r in ranked]
    assert not any(
        "svd-solver" in r["text"] and "pin that version" in r["text"] for r in a["recommendations"]
    )
    run_text(capsys, "advise")
    amp = run_json(capsys, "amplify", "--json")
    assert set(amp["explained"]) <= {
        "threads",
        "precision",
        "sklearn",
        "arch",
        "host",
        "container",
        "os",
    }
    run_text(capsys, "amplify")
    out = run_text(capsys, "report", "--out", str(tmp_path / "rep"))
    assert "wrote" in out
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "svd-solver" in html and "perturb" in html
    # the new figures are drawn from this store and embedded in the page
    for name, caption in (
        ("svd_components.png", "Each SVD component and singular value"),
        ("significant_digits.png", "Significant digits per stage"),
    ):
        assert (tmp_path / "rep" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert caption in html
    assert "emb digits" in html


def test_budget_for_one_factor_shows_digits_beside_the_difference(on_every_kind, capsys):
    out = run_text(capsys, "budget", "--factor", "precision")
    assert "digits" in out and "Significant digits on which the two runs agree" in out
    rows = run_json(capsys, "budget", "--factor", "precision", "--json")
    d = rows[0]["comparison"]["digits"]["tfidf"]
    assert 6.5 <= d["digits"] <= 8.0  # float64 against float32 input: ~7 digits
    comps = rows[0]["comparison"]["svd_rand"]["components"]
    assert len(comps) == len(rows[0]["comparison"]["svd_rand"]["values"]) and len(comps) > 1


def test_export_and_import_round_trip(on_every_kind, capsys, tmp_path, monkeypatch):
    out = run_text(capsys, "export", "--out", str(tmp_path / "all.kit"), "--arrays")
    assert "wrote" in out
    run_text(capsys, "export", "--out", str(tmp_path / "hashes.kit"))
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "elsewhere"))
    assert "imported" in run_text(capsys, "import", str(tmp_path / "all.kit"))
    b = run_json(capsys, "budget", "--json")
    assert {r["factor"] for r in b["rows"]} == set(on_every_kind["factors"])


def test_doctor_leaves_the_users_store_and_default_dataset_alone(on_every_kind, capsys):
    before = run_json(capsys, "runs", "--json")
    shown = run_text(capsys, "budget").splitlines()[0]
    code = main(["doctor", "--n", "100"])
    capsys.readouterr()
    assert code in (0, 1)  # 1 only if the null experiment failed; never a traceback
    assert run_json(capsys, "runs", "--json") == before
    assert run_text(capsys, "budget").splitlines()[0] == shown


def test_the_platform_kinds_are_all_there(on_every_kind):
    """Where a stack can exist here, its factors are in the store: nothing is silently left out."""
    from kit.envs.kinds import stack_kind
    from kit.envs.platforms import detect

    plat = detect()
    if stack_kind("np1-sk191").status(plat)[0] != "unavailable":
        assert {"sklearn", "arch"} <= set(on_every_kind["factors"])
    if stack_kind("torch-linux-cpu").status(plat)[0] != "unavailable":
        assert {"torch-seed", "torch-deterministic"} <= set(on_every_kind["factors"])


def test_runs_in_an_image_a_bundle_carried_are_read_by_every_reader(
    on_every_kind, capsys, tmp_path
):
    """The runs `kit compare --trust-image` made in a loaded image (stack NAME@bundle-ID12):
    listed with that image, paired with the lab's twins in the host row, and named by the
    report, the advice and an export like any run."""
    if not on_every_kind.get("loaded"):
        pytest.skip("no container runtime here: the store holds no loaded image's runs")
    runs = run_json(capsys, "runs", "--json")
    loaded = [r for r in runs if "@bundle-" in r["spec"]["stack"]]
    assert loaded
    for r in loaded:
        assert r["manifest"]["image"]["id"] == r["spec"]["stack_id"]
        assert r["spec"]["stack"].endswith("@bundle-" + r["spec"]["stack_id"][7:19])
    ids = {r["id"] for r in loaded}
    b = run_json(capsys, "budget", "--json")
    (host,) = [row for row in b["rows"] if row["factor"] == "host"]
    assert ids <= set(host["runs"])
    run_text(capsys, "report", "--out", str(tmp_path / "rep"))
    md = (tmp_path / "rep" / "report.md").read_text()
    assert loaded[0]["spec"]["stack"] in md and loaded[0]["spec"]["stack_id"][:19] in md
    run_text(capsys, "advise")
    run_text(capsys, "verdicts")
    assert main(["export", "--out", str(tmp_path / "again.kit"), "--factor", "host"]) == 0
    capsys.readouterr()


def test_explains_cross_fed_runs_are_read_back_and_counted_nowhere_else(
    on_every_kind, capsys, tmp_path
):
    """The store's feed runs (kit explain precision): `kit runs --kind feed` lists them, the
    report and the advice read their explanation back, and no budget row counts them."""
    feeds = run_json(capsys, "runs", "--kind", "feed", "--json")
    assert feeds and all(r["spec"]["kind"] == "feed" for r in feeds)
    ids = {r["id"] for r in feeds}
    b = run_json(capsys, "budget", "--json")
    assert not ids & {
        x for r in b["rows"] for p in r["runs"] for x in (p if isinstance(p, list) else [p])
    }
    a = run_json(capsys, "advise", "--json")
    assert any(
        "precision" in r["text"] and "starts at" in r["text"]
        for r in a["recommendations"]
        if r["kind"].startswith("explain")
    )
    run_text(capsys, "report", "--out", str(tmp_path / "rep"))
    assert "Where the differences start" in (tmp_path / "rep" / "report.md").read_text()


def test_every_reader_shows_homology_on_a_clustered_dataset(on_every_kind, capsys, tmp_path):
    """The dataset's MMseqs2 clustering reaches every reader: `kit homology`, the budget, the
    advice, the report (a section and a plot) and the notebook, with the same numbers."""
    import kit

    assert on_every_kind["homology"]
    h = run_json(capsys, "homology", "--json")
    assert (
        h["runs"] > 0
        and len(h["verdicts"]) == 12
        and set(h["models"]) == {"lr", "mlp", "hgb", "rf"}
    )
    assert 0 <= h["clustering"]["test_with_train_homolog"] <= 1
    assert all(v["runs"] == h["runs"] for v in h["verdicts"])
    b = run_json(capsys, "budget", "--json")
    assert b["homology"]["too_narrow"] == h["too_narrow"]
    assert "Homology (MMseqs2" in run_text(capsys, "budget")
    a = run_json(capsys, "advise", "--json")
    rec = [r for r in a["recommendations"] if r["kind"] == "homology"]
    assert len(rec) == 1 and rec[0]["basis"]["rest_on_homologs"] == h["rest_on_homologs"]
    run_text(capsys, "report", "--out", str(tmp_path / "rep"))
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "Under homology" in html and "Verdict intervals and accuracy under homology" in html
    assert (tmp_path / "rep" / "homology.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    frame = kit.open().homology()
    assert len(frame) == 12 and frame.attrs["too_narrow"] == h["too_narrow"]
    ratios = [None if x != x else x for x in frame["width_ratio"]]  # NaN: no ratio
    assert ratios == [v["width_ratio"] for v in h["verdicts"]]


def test_every_reader_reads_the_lab_pipeline_by_file_and_hash(on_every_kind, capsys, tmp_path):
    """The store's lab pipeline (tests/support/pipelines/lab.py): each reader with --pipeline, by
    its file and by its hash prefix; the null experiment names its unseeded output."""

    import kit

    sha = on_every_kind["pipeline"]
    for ref in (str(PIPELINES / "lab.py"), sha[:12]):
        b = run_json(capsys, "budget", "--pipeline", ref, "--json")
        assert set(b["factors"]) == {"repeat", "threads", "seed:split", "seed:init"}
        assert b["loose"] == ["jitter"]
        assert "LOOSE GENERATOR: jitter" in run_text(capsys, "budget", "--pipeline", ref)
        v = run_json(capsys, "verdicts", "--pipeline", ref, "--json")
        assert v["models"] == ["p_lr"] and v["factors"]["seed:split"]["spread"]["p_lr"]["runs"] == 2
        a = run_json(capsys, "advise", "--pipeline", ref, "--json")
        assert [s["step"] for s in a["steps"]][:1] == ["loose"]
        runs = run_json(capsys, "runs", "--pipeline", ref, "--json")
        assert len(runs) == 5 and all(r["spec"]["pipeline"] == sha for r in runs)
        t = run_json(capsys, "tolerances", "--pipeline", ref, "--format", "json")
        rows = {r["output"]: r for r in (t if isinstance(t, list) else t["rows"])}
        # the loose output is pinned, never tolerated; every other set by threads, the one
        # environment factor stored
        assert set(rows) == {"emb", "clusters", "y_test", "p_lr", "jitter"}
        assert rows["jitter"]["pin"] and rows["jitter"]["rtol"] is None
        assert all(r["factor"] in ("threads", None) for r in rows.values())
    assert "wrote" in run_text(
        capsys, "report", "--pipeline", sha[:12], "--out", str(tmp_path / "r")
    )
    assert "## What to fix first" in (tmp_path / "r" / "report.md").read_text()
    assert "5 runs" in run_text(
        capsys, "export", "--pipeline", sha[:12], "--out", str(tmp_path / "lab.kit"), "--arrays"
    )
    assert kit.open().budget(pipeline=sha[:12]).attrs["loose"] == ["jitter"]


def test_every_reader_compares_every_output_kind_of_a_pipeline(on_every_kind, capsys, tmp_path):
    """tests/support/pipelines/every_output.py declares each kind kit compares (an embedding,
    labels, neighbours, probabilities, the truth, a plain array, protein ids): each reader with
    --pipeline reads every declared output by its kind, and the verbs a pipeline cannot take
    say so in one line."""
    import csv
    import io
    import sys

    from kit.worker.kinds import OUTPUT_KINDS

    sys.path.insert(0, str(PIPELINES))
    import every_output

    assert set(every_output.KINDS.values()) == set(OUTPUT_KINDS)
    sha = on_every_kind["every_output"][:12]
    b = run_json(capsys, "budget", "--pipeline", sha, "--json")
    assert set(b["factors"]) == {"repeat", "threads", "seed:split", "seed:init"}
    for factor, row in b["factors"].items():
        assert {n: o["kind"] for n, o in row["outputs"].items()} == every_output.KINDS, factor
    assert not b["factors"]["repeat"]["outputs"]["emb"]["changed"]
    # split moves which rows are held out: the truth and the ids; init the embedding onwards
    split = b["factors"]["seed:split"]["outputs"]
    assert split["y_test"]["changed"] and split["ids"]["changed"] and not split["emb"]["changed"]
    assert b["factors"]["seed:init"]["outputs"]["emb"]["changed"]
    rows = list(csv.DictReader(io.StringIO(run_text(capsys, "budget", "--pipeline", sha, "--csv"))))
    assert {(r["factor"], r["output"]) for r in rows} == {
        (f, n) for f in b["factors"] for n in every_output.KINDS
    }
    v = run_json(capsys, "verdicts", "--pipeline", sha, "--json")
    assert v["models"] == ["p_lr", "p_nb"]
    assert run_json(capsys, "advise", "--pipeline", sha, "--json")["steps"]
    t = run_json(capsys, "tolerances", "--pipeline", sha, "--format", "json")
    assert {r["output"] for r in (t if isinstance(t, list) else t["rows"])} == set(
        every_output.KINDS
    )
    assert "wrote" in run_text(capsys, "report", "--pipeline", sha, "--out", str(tmp_path / "r"))
    runs = run_json(capsys, "runs", "--pipeline", sha, "--json")
    assert f"{len(runs)} runs" in run_text(
        capsys, "export", "--pipeline", sha, "--out", str(tmp_path / "e.kit"), "--arrays"
    )
    for verb in (["amplify"], ["explain", "threads"]):
        assert main([*verb, "--pipeline", sha]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err


def test_the_protein_pipeline_reads_under_homology(on_every_kind, capsys, tmp_path, monkeypatch):
    """The store's protein pipeline (tests/support/pipelines/proteins.py): its ids map into the
    store's clustering of its own proteins; homology, verdicts, budget and report read it, and kit's
    own readers never count it."""
    sha = on_every_kind["proteins"]
    r = run_json(capsys, "homology", "--pipeline", sha[:12], "--json")
    assert r["dataset"] == "synthetic-120" and r["runs_stored"] == 3
    h = r["summary"]
    assert [v["verdict"] for v in h["verdicts"]] == ["p_rf-p_lr acc", "p_rf-p_lr auc"]
    assert h["runs"] >= 1 and sorted(h["models"]) == ["p_lr", "p_rf"]
    assert all(v["cluster"]["lo"] is not None for v in h["verdicts"])
    assert "Under homology: kit homology --pipeline" in run_text(
        capsys, "verdicts", "--pipeline", sha[:12]
    )
    b = run_json(capsys, "budget", "--pipeline", sha[:12], "--json")
    assert set(b["factors"]) == {"repeat", "seed:split"} and not b["loose"]
    run_text(capsys, "report", "--pipeline", sha[:12], "--out", str(tmp_path / "r"))
    assert "Under homology" in (tmp_path / "r" / "report.md").read_text()
    assert sha not in json.dumps(run_json(capsys, "budget", "--json"))
    # a pipeline that declares no protein ids says so in one line
    lab = on_every_kind["pipeline"]
    assert main(["homology", "--pipeline", lab[:12]]) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    # its runs travel, ids and all, with what its file declares: the verdicts read the same there
    verdicts = run_json(capsys, "verdicts", "--pipeline", sha[:12], "--json")
    run_text(capsys, "export", "--pipeline", sha[:12], "--arrays", "--out", str(tmp_path / "p.kit"))
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "elsewhere"))
    assert "imported" in run_text(capsys, "import", str(tmp_path / "p.kit"))
    assert run_json(capsys, "verdicts", "--pipeline", sha[:12], "--json") == verdicts


def test_a_pipelines_runs_reach_none_of_kits_own_readers(on_every_kind, capsys):
    """Stored after most of kit's runs, the pipeline's runs are not the default dataset and
    not counted by kit's own budget, verdicts, advice or the runs of a dataset."""
    sha = on_every_kind["pipeline"]
    b = run_json(capsys, "budget", "--json")
    assert b["dataset"].get("sha256") != sha
    assert {r["factor"] for r in b["rows"]} == set(on_every_kind["factors"])
    assert not {
        x for r in b["rows"] for p in r["runs"] for x in (p if isinstance(p, list) else [p])
    } & {r["id"] for r in run_json(capsys, "runs", "--pipeline", sha[:12], "--json")}
    assert sha not in json.dumps(run_json(capsys, "verdicts", "--json"))
    assert sha not in json.dumps(run_json(capsys, "advise", "--json"))
    mine = run_json(capsys, "runs", "--dataset", "synthetic", "--n", "120", "--json")
    assert mine and not any(r["spec"].get("pipeline") for r in mine)
    every = run_json(capsys, "runs", "--json")
    assert sum(r["spec"].get("pipeline") == sha for r in every) == 5  # `kit runs` shows both


@pytest.mark.parametrize(
    "argv",
    [
        ["budget"],
        ["verdicts"],
        ["advise"],
        ["amplify"],
        ["runs"],
        ["stacks"],
        ["budget", "--factor", "seed"],
        ["data", "list"],
        ["homology"],
        ["budget", "--pipeline", "lab.py"],
        ["verdicts", "--pipeline", "lab.py"],
        ["advise", "--pipeline", "lab.py"],
        ["homology", "--pipeline", "proteins.py"],
    ],
    ids=lambda a: " ".join(a),
)
def test_every_table_fits_80_columns(on_every_kind, capsys, monkeypatch, argv):
    """At 80 columns the budget was 106-131 characters wide, `kit stacks` 160, `kit runs` 144
    and advice lines up to 463: rows wrapped into each other."""
    monkeypatch.setenv("COLUMNS", "80")
    if "--pipeline" in argv:  # the store's lab pipelines, by their files
        argv = [str(PIPELINES / a) if a.endswith(".py") else a for a in argv]
    out = run_text(capsys, *argv)
    wide = [ln for ln in out.splitlines() if len(ln) > 80]
    assert not wide, wide[:3]


def test_torch_rows_say_what_mps_cannot_promise_on_a_mac(on_every_kind):
    from dataclasses import replace

    from kit.analysis.advice import MPS_NOTE, advise
    from kit.envs.platforms import detect
    from kit.runs.store import Store

    if not on_every_kind["torch"]:
        pytest.skip("no torch stack on this platform")
    store = Store()
    ds = next(
        d
        for d, _ in store.datasets().items()
        if any(p.factor == "torch-deterministic" for p in store.pairs(d))
    )
    here = advise(store, ds)
    mac = advise(
        store, ds, plat=replace(detect(), system="darwin", machine="arm64", macos_version=(14, 5))
    )
    assert MPS_NOTE in [r["text"] for r in mac["recommendations"]]
    assert (MPS_NOTE in [r["text"] for r in here["recommendations"]]) == (
        detect().system == "darwin"
    )
