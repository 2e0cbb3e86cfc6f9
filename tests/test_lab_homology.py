"""A lab's protein pipeline under homology: its runs (kit run --pipeline, repeat and seed:split)
and kit's built-in synthetic proteins imported and clustered for real (MMseqs2), read by
`kit homology --pipeline`; every mistake one line."""

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import kit
from kit.analysis.cluster_bootstrap import cluster_weights
from kit.analysis.budget import output_budget
from kit.analysis.homology import output_homology
from kit.analysis.leakage import leakage
from kit.analysis.verdicts import bootstrap
from kit.cli import main
from kit.core.subject import of_pipeline
from kit.data.dataset import load_dataset
from kit.data.homology import Clustering, stored_clustering
from kit.data.pipelines import add_pipeline, file_sha256
from kit.runs.store import Store
from kit.worker.contract import ContractError, check_outputs

HERE = Path(__file__).parent / "pipelines"
PROTEINS = HERE / "proteins.py"
MODELS = ("p_lr", "p_rf")
KEYS = ["p_rf-p_lr acc", "p_rf-p_lr auc"]


from test_homology import _have_mmseqs  # noqa: E402 - one probe of MMseqs2 for both modules


def _tsv(path, rows):
    path.write_text("accession\tsequence\tlabel\n"
                    + "".join(f"{a}\t{s}\t{int(y)}\n" for a, s, y in rows))
    return path


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One KIT_HOME: 300 of kit's synthetic proteins (families of homologues) imported as
    "prot" and clustered, the same less one protein as "short" and clustered, and the pipeline's
    repeat and seed:split runs made by kit's CLI: two MMseqs2 runs and four pipeline runs."""
    if not _have_mmseqs():
        pytest.skip("no MMseqs2 on this platform")
    from kit.data.synthetic import generate

    root = tmp_path_factory.mktemp("lab-homology")
    ids, seqs, labels, _ = generate(300)
    rows = list(zip(ids, seqs, labels))
    full, short = _tsv(root / "prot.tsv", rows), _tsv(root / "short.tsv", rows[1:])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_HOME", str(root / "home"))
        mp.setenv("KIT_TEST_PROTEINS", str(full))
        for argv in (("data", "import", full, "--name", "prot"), ("data", "homology", "prot"),
                     ("data", "import", short, "--name", "short"), ("data", "homology", "short"),
                     ("run", "--pipeline", PROTEINS, "--factor", "repeat,seed:split",
                      "--threads", "1", "--seeds", "0,1,2")):
            assert main([str(a) for a in argv]) == 0, argv
    return {"home": root / "home", "tsv": full, "missing": ids[0]}


@pytest.fixture
def home(world, monkeypatch):
    monkeypatch.setenv("KIT_HOME", str(world["home"]))
    monkeypatch.setenv("KIT_TEST_PROTEINS", str(world["tsv"]))
    return world


def _without(world, tmp_path, monkeypatch, *datasets):
    """A copy of the world whose named datasets' clusterings are gone."""
    copy = tmp_path / "copy"
    shutil.copytree(world["home"], copy)
    for name in datasets:
        sha = json.loads((copy / "datasets" / f"{name}.json").read_text())["sha256"]
        for f in (copy / "datasets" / "homology").glob(f"{sha}-*.json"):
            f.unlink()
    monkeypatch.setenv("KIT_HOME", str(copy))


def _runs(store, info):
    return [r.id for r in store.runs(info["sha256"]) if r.spec.pipeline == info["sha256"]]


def test_cluster_verdicts_and_leakage_of_the_pipelines_two_models(home, capsys):
    code, out, err = cli(capsys, "homology", "--pipeline", PROTEINS, "--json")
    assert code == 0, err
    r = json.loads(out)
    h = r["summary"]
    assert r["dataset"] == "prot" and "smallest clustered dataset" in r["chosen"]
    assert "also: short" not in r["chosen"]  # short lacks a protein: it holds not every id
    # four runs stored; the repeat's two are identical in every output, so one measurement
    assert [v["verdict"] for v in h["verdicts"]] == KEYS and h["runs"] == 3 and not h["left_out"]
    assert r["runs_stored"] == 4
    assert sorted(h["models"]) == sorted(MODELS) and r["leakage"] == ""
    # the same numbers by hand: each run's ids looked up in the clustering, kit's bootstrap
    store, info = Store(), add_pipeline(PROTEINS)
    ds = load_dataset("prot")
    c = stored_clustering(ds)
    at = {a: i for i, a in enumerate(ds.ids)}
    labels = np.asarray(c.labels)
    lo, acc_with, seen = [], [], set()
    for run in _runs(store, info):
        digests = tuple(sorted((k, s.sha256) for k, s in store.run(run).stages.items()))
        if digests in seen:
            continue
        seen.add(digests)
        probs = {m: store.array(run, m) for m in MODELS}
        y = store.array(run, "y_test")
        clusters = labels[[at[a] for a in store.array(run, "ids")]]
        train = labels[[at[a] for a in store.array(run, "train_ids")]]
        v = bootstrap(probs, y, weights=cluster_weights(clusters), models=MODELS)
        lo.append(v["p_rf-p_lr acc"]["lo"])
        acc_with.append(leakage(probs, y, np.isin(clusters, train), MODELS)["p_rf"].acc_with)
        assert len(np.unique(clusters)) >= 20  # families: fewer clusters than proteins
        assert len(np.unique(clusters)) < len(clusters)
    assert h["verdicts"][0]["cluster"]["lo"] == float(np.median(lo))
    assert h["models"]["p_rf"]["acc_with_homolog"] == float(np.median(acc_with))
    code, text, _ = cli(capsys, "homology", "--pipeline", PROTEINS)
    assert code == 0 and "p_rf-p_lr acc" in text and "Leakage over 3 runs" in text
    assert "4 runs stored, 3 distinct" in text
    assert "dataset prot" in text and "protein ids (ids) mapped into it" in text


def test_each_run_s_ids_are_read_once(home, monkeypatch):
    from kit.analysis.homology import find_clustering

    store, info = Store(), add_pipeline(PROTEINS)
    reads, array = [], Store.array
    monkeypatch.setattr(Store, "array", lambda self, run, stage: (
        reads.append((run, stage)), array(self, run, stage))[1])
    h = output_homology(store, of_pipeline(info), *find_clustering(store, of_pipeline(info)))["summary"]
    assert h.runs == 3 and not h.left_out
    ids = [r for r in reads if r[1] in ("ids", "train_ids")]
    # each verified read hashes the array: choosing the dataset and placing the runs share one
    assert sorted(ids) == sorted({(r, k) for r in _runs(store, info) for k in ("ids", "train_ids")})


def test_a_clustering_of_singletons_is_the_protein_bootstrap_bit_for_bit(home):
    store, info = Store(), add_pipeline(PROTEINS)
    ds = load_dataset("prot")
    alone = Clustering(ds.sha256, 1.0, 1.0, tuple(range(ds.n)), ds.n_train, "singletons")
    h = output_homology(store, of_pipeline(info), ds, alone)["summary"]
    assert h.runs == 3 and [v.verdict for v in h.verdicts] == KEYS
    for v in h.verdicts:
        assert v.cluster == v.protein and v.width_ratio_range == [1.0, 1.0]
        assert v.changed == 0 and v.lost == 0
    assert h.models["p_lr"].acc_with_homolog is None  # no test protein shares a cluster


def test_the_budget_compares_protein_ids_as_rows_changed(home):
    b = output_budget(Store(), of_pipeline(add_pipeline(PROTEINS)))
    assert b["factors"]["repeat"]["outputs"]["ids"]["changed"] == 0
    split = b["factors"]["seed:split"]["outputs"]
    assert split["ids"]["changed"] == 2 and split["ids"]["kind"] == "proteins"
    assert 0 < split["ids"]["worst"]["changed"] <= 100
    assert split["train_ids"]["kind"] == "train proteins"


def test_the_runs_read_under_homology_on_a_machine_that_imported_them(home, tmp_path,
                                                                       monkeypatch, capsys):
    """A collaborator's KIT_HOME with the same clustered datasets but never the file: the
    bundle carries what the file declares, so the homology view there is the one here."""
    code, out, err = cli(capsys, "homology", "--pipeline", PROTEINS, "--json")
    assert code == 0, err
    here = json.loads(out)
    bundle = tmp_path / "p.kit"
    assert cli(capsys, "export", "--pipeline", PROTEINS, "--arrays", "--out", bundle)[0] == 0
    other = tmp_path / "other"
    shutil.copytree(home["home"] / "datasets", other / "datasets")
    monkeypatch.setenv("KIT_HOME", str(other))
    code, _, err = cli(capsys, "import", bundle)
    assert code == 0, err
    code, out, err = cli(capsys, "homology", "--pipeline", file_sha256(PROTEINS)[:12], "--json")
    assert code == 0, err
    assert json.loads(out) == here


def test_verdicts_point_to_the_homology_view(home, capsys):
    code, out, _ = cli(capsys, "verdicts", "--pipeline", PROTEINS)
    assert code == 0 and f"kit homology --pipeline {PROTEINS}" in out.replace("\n", " ")
    code, out, _ = cli(capsys, "verdicts", "--pipeline", PROTEINS, "--json")
    assert code == 0 and json.loads(out)["models"] == list(MODELS)


def test_the_notebook_reads_it_too(home):
    frame = kit.open().homology(pipeline=str(PROTEINS), data="prot")
    assert list(frame.index) == KEYS and frame.attrs["runs"] == 3
    assert set(frame.attrs["models"]) == set(MODELS)


@pytest.mark.slow
def test_without_train_proteins_the_leakage_is_one_line_and_the_bootstrap_stays(
        home, tmp_path, capsys):
    src = PROTEINS.read_text()
    f = tmp_path / "test_only.py"
    f.write_text(src.replace('"train_ids": "train proteins", ', "")
                 .replace('"train_ids": ids[train], ', ""))
    assert main(["run", "--pipeline", str(f), "--factor", "repeat", "--threads", "1",
                 "--seeds", "0"]) == 0
    capsys.readouterr()
    code, out, err = cli(capsys, "homology", "--pipeline", f)
    assert code == 0, err
    assert "declares no \"train proteins\" output" in out.replace("\n", " ")
    assert "p_rf-p_lr auc" in out and "Leakage over" not in out


@pytest.mark.parametrize("argv, words", [
    (("--data", "nosuch"), "no dataset 'nosuch'"),
    (("--data", "prot", "--identity", "0.5"), "no homology clustering of dataset prot at "
                                              "--identity 0.5 yet: `kit data homology prot "
                                              "--identity 0.5`"),
])
def test_a_wrong_dataset_is_one_line(home, capsys, argv, words):
    code, out, err = cli(capsys, "homology", "--pipeline", PROTEINS, *argv)
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1
    assert words in err
    if argv[1] == "short":  # every run names the one protein short lacks
        assert f"are not in dataset short (first '{home['missing']}')" in err


def test_no_clustering_holding_the_ids_is_one_line(world, tmp_path, monkeypatch, capsys):
    _without(world, tmp_path, monkeypatch, "prot")
    code, _, err = cli(capsys, "homology", "--pipeline", PROTEINS)
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "closest: short lacks 1 (e.g." in err and "--data short" in err
    _without(world, tmp_path / "b", monkeypatch, "prot", "short")
    code, _, err = cli(capsys, "homology", "--pipeline", PROTEINS)
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "no stored dataset has a homology clustering" in err and "kit data homology" in err


def test_a_pipeline_without_protein_ids_is_one_line(capsys):
    code, _, err = cli(capsys, "homology", "--pipeline", HERE / "two_models.py")
    assert code == 1 and 'declares no "proteins" output' in err
    code, _, err = cli(capsys, "homology", "--data", "prot")
    assert code == 1 and "--data goes with --pipeline" in err


KINDS = {"ids": "proteins", "train_ids": "train proteins", "y": "truth"}
IDS = np.array(["P1", "P2", "P3"])


@pytest.mark.parametrize("change, words", [
    ({"ids": np.array([1, 2, 3])}, "'ids' is a proteins output but is 1-d int64: it must be a "
                                   "1-d string array of ids"),
    ({"ids": IDS.reshape(3, 1)}, "'ids' is a proteins output but is 2-d"),
    ({"ids": IDS[:2]}, "'ids' (proteins) holds 2 ids but 'y' (truth) 3 rows"),
    ({"ids": np.array(["P1", "P1", "P3"])}, "'ids' (proteins) holds an id twice"),
    ({"train_ids": np.array([b"T1", b"T1"])}, "'train_ids' (train proteins) holds an id twice"),
    ({"train_ids": np.zeros(2)}, "'train_ids' is a train proteins output but is 1-d float64"),
])
def test_bad_protein_outputs_are_contract_errors(change, words):
    good = {"ids": IDS, "train_ids": np.array([b"T1", b"T2"]), "y": np.array([0, 1, 1])}
    assert check_outputs("mine.py", good, KINDS)  # bytes ids ('S') are ids too
    with pytest.raises(ContractError, match="^mine.py: output " + words.replace("(", r"\(")
                       .replace(")", r"\)").replace("[", r"\[")):
        check_outputs("mine.py", {**good, **change}, KINDS)


def test_the_report_has_an_under_homology_section(home, tmp_path, capsys):
    code, _, err = cli(capsys, "report", "--pipeline", PROTEINS, "--out", tmp_path / "r")
    assert code == 0, err
    md = (tmp_path / "r" / "report.md").read_text()
    section = md.split("## Under homology", 1)[1]
    assert "dataset prot" in section and "p_rf-p_lr acc" in section and "Leakage over" in section


def test_an_accession_held_twice_in_two_clusters_is_said_not_guessed(home):
    store, info = Store(), add_pipeline(PROTEINS)
    ds = load_dataset("prot")
    c = stored_clustering(ds)
    # the first protein's accession given again to a protein of a cluster of its own
    twice = SimpleNamespace(name="twice", ids=list(ds.ids) + [ds.ids[0]], n=ds.n + 1)
    labels = c.labels + (max(c.labels) + 1,)
    h = output_homology(store, of_pipeline(info), twice, Clustering("0" * 64, 0.3, 0.8, labels, ds.n_train,
                                                    "hand"))["summary"]
    # a run testing on it is left out; one training on it keeps its verdicts, not its leakage
    assert h.runs >= 1 and h.left_out
    assert all(f"more than once, in different clusters (first '{ds.ids[0]}')" in line
               for line in h.left_out)
    same = Clustering("0" * 64, 0.3, 0.8, c.labels + (c.labels[0],), ds.n_train, "hand")
    assert output_homology(store, of_pipeline(info), twice, same)["summary"].runs == 3  # one cluster: no doubt


def _variant(tmp_path, name, old, new):
    """The test pipeline with one output changed, run (repeat, seed 0) as its own pipeline."""
    src = PROTEINS.read_text()
    assert old in src
    f = tmp_path / name
    f.write_text(src.replace(old, new))
    assert main(["run", "--pipeline", str(f), "--factor", "repeat", "--threads", "1",
                 "--seeds", "0"]) == 0
    return f


@pytest.mark.slow
def test_ids_that_are_not_utf8_leave_the_run_out_in_one_line(home, tmp_path, capsys):
    """Fixed-width bytes ids the contract takes but that do not decode: a reader said a
    traceback (UnicodeDecodeError) in kit homology and kit report."""
    f = _variant(tmp_path, "bad_bytes.py", '"ids": ids[test]',
                 '"ids": np.array([b"\\xff" + a.encode() for a in ids[test]])')
    capsys.readouterr()
    code, out, err = cli(capsys, "homology", "--pipeline", f)
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1
    assert "not UTF-8" in err
    code, out, err = cli(capsys, "report", "--pipeline", f, "--out", tmp_path / "r")
    assert code == 0, err
    assert "Under homology" not in (tmp_path / "r" / "report.md").read_text()


@pytest.mark.slow
def test_train_ids_the_dataset_lacks_cost_the_leakage_split_not_the_verdicts(home, tmp_path,
                                                                               capsys):
    f = _variant(tmp_path, "odd_train.py", '"train_ids": ids[train]',
                 '"train_ids": np.array(["X" + a for a in ids[train]])')
    capsys.readouterr()
    code, out, err = cli(capsys, "homology", "--pipeline", f, "--data", "prot", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["summary"]["runs"] == 1 and r["summary"]["verdicts"]
    assert "could be placed in dataset prot" in r["leakage"] and "not in dataset" in r["leakage"]


def test_a_dataset_lacking_one_protein_leaves_out_what_it_cannot_place(home, capsys):
    """short lacks the first protein: a run testing on it is left out, a run training on it
    keeps its verdicts and loses only its leakage split; each said in a line."""
    code, out, err = cli(capsys, "homology", "--pipeline", PROTEINS, "--data", "short", "--json")
    r = json.loads(out) if code == 0 else None
    if r is None:  # every run tests on it: one line
        assert code == 1 and len(err.strip().splitlines()) == 1 and "short" in err
        return
    lines = r["summary"]["left_out"] + [r["leakage"]]
    assert any("not in dataset short" in ln for ln in lines)
