"""kit.app.bundle_pipelines: a protein pipeline's runs travel in a bundle with the file that
declares what they mean; the importer reads that file (never runs nor keeps it), and refuses ids
its file does not declare, ids that are not 1-d short strings, and a file that is not the runs'."""

import base64
import contextlib
import io
import json
import shutil

import numpy as np
import pytest
from places import PIPELINES

from kit.cli import main
from kit.data.pipelines import file_sha256
from kit.data.synthetic import generate
from kit.runs.store import Store
from kit.runs.store.blobs import blob_key
from tests.app.test_bundle_derived import forge, refused, restage

PROTEINS = PIPELINES / "proteins.py"
SHA = file_sha256(PROTEINS)


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The protein pipeline's repeat pair (two runs) made in KIT_HOME a, exported with and
    without its arrays."""
    root = tmp_path_factory.mktemp("bundle-pipelines")
    ids, seqs, labels, _ = generate(90)
    tsv = root / "prot.tsv"
    tsv.write_text(
        "accession\tsequence\tlabel\n"
        + "".join(f"{a}\t{s}\t{int(y)}\n" for a, s, y in zip(ids, seqs, labels, strict=True))
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_HOME", str(root / "a"))
        mp.setenv("KIT_TEST_PROTEINS", str(tsv))
        for argv in (
            ("run", "--pipeline", PROTEINS, "--factor", "repeat", "--threads", "1"),
            ("export", "--pipeline", PROTEINS, "--arrays", "--out", root / "p.kit"),
            ("export", "--pipeline", PROTEINS, "--out", root / "h.kit"),
        ):
            assert main([str(a) for a in argv]) == 0, argv
        reads = {}
        for what in ("verdicts", "budget"):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                assert main([what, "--pipeline", SHA[:12], "--json"]) == 0
            reads[what] = json.loads(buf.getvalue())
    return {
        "root": root,
        "bundle": root / "p.kit",
        "hashes": root / "h.kit",
        "reads": reads,
        "tsv": tsv,
    }


@pytest.fixture
def elsewhere(made, tmp_path, monkeypatch):
    """A KIT_HOME that never saw the pipeline file (another host)."""
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "b"))
    return tmp_path / "b"


def test_the_runs_arrive_with_what_their_file_declares(made, elsewhere, capsys):
    code, out, err = cli(capsys, "import", made["bundle"])
    assert code == 0, err
    for what, there in made["reads"].items():
        code, out, err = cli(capsys, what, "--pipeline", SHA[:12], "--json")
        assert code == 0, err
        assert json.loads(out) == there, what  # the verdicts need KINDS: truth, probabilities
    assert made["reads"]["verdicts"]  # (a reader that found no kinds would show none)
    store = Store()
    run = store.runs()[0].id
    assert store.array(run, "ids").dtype.kind == "U"  # the protein ids came with the runs
    # read, never kept where a worker imports a pipeline from: rerunning needs the user's file
    assert not list((elsewhere / "pipelines").glob("**/*.py"))
    code, _, err = cli(capsys, "compare", made["bundle"])
    assert code == 1 and "whose file is not here" in err and err.strip().count("\n") == 0


def test_a_hashes_only_bundle_carries_the_file_too(made, elsewhere, capsys):
    code, _, err = cli(capsys, "import", made["hashes"])
    assert code == 0, err
    code, out, err = cli(capsys, "runs", "--pipeline", SHA[:12], "--json")
    assert code == 0 and SHA[:12] in out, err


def test_runs_whose_file_is_not_here_travel_on_only_with_the_file(
    made, elsewhere, tmp_path, monkeypatch, capsys
):
    """Without its file what a pipeline's outputs are would not travel on: export says so
    before writing; given the very file, it carries it and the next machine reads alike."""
    assert cli(capsys, "import", made["bundle"])[0] == 0
    out = tmp_path / "again.kit"
    code, _, err = cli(capsys, "export", "--pipeline", SHA[:12], "--out", out)
    assert code == 1 and "`kit export --pipeline FILE.py` with the file as it was run" in err, err
    assert "this KIT_HOME has not got its file: its runs came in a bundle" in err, err
    assert err.strip().count("\n") == 0 and not out.exists()
    code, _, err = cli(capsys, "export", "--pipeline", PROTEINS, "--arrays", "--out", out)
    assert code == 0, err
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "c"))
    assert cli(capsys, "import", out)[0] == 0
    code, got, err = cli(capsys, "verdicts", "--pipeline", SHA[:12], "--json")
    assert code == 0 and json.loads(got) == made["reads"]["verdicts"], err


def test_an_edited_kept_file_is_found_by_the_check_and_refused_by_export_as_edited(
    made, tmp_path, monkeypatch, capsys
):
    """Issue 54 item 8: a kept pipeline file edited by hand passed `kit store check`, and
    `kit export --pipeline HASH` refused its runs "(its runs came in a bundle)"."""
    home = tmp_path / "a"
    shutil.copytree(made["root"] / "a", home)
    monkeypatch.setenv("KIT_HOME", str(home))
    kept = home / "pipelines" / "by-hash" / f"{SHA}.py"
    kept.write_bytes(kept.read_bytes() + b"# edited\n")
    code, out, err = cli(capsys, "store", "check")
    assert code == 1 and f"{kept} was edited after it was kept" in out, out + err
    bundle = tmp_path / "x.kit"
    code, _, err = cli(capsys, "export", "--pipeline", SHA[:12], "--out", bundle)
    assert code == 1 and err.strip().count("\n") == 0 and not bundle.exists(), err
    assert f"its kept file {kept} was edited after it was kept" in err, err
    assert "came in a bundle" not in err
    code, out, err = cli(capsys, "store", "check", "--repair")  # set aside, kept
    assert code == 0 and f"{kept} was edited after it was kept" in out and "moved to" in out
    assert cli(capsys, "store", "check")[0] == 0
    code, _, err = cli(capsys, "export", "--pipeline", SHA[:12], "--out", bundle)
    assert code == 1 and "`kit store check --repair` set it aside as" in err, err
    assert "came in a bundle" not in err
    code, _, err = cli(capsys, "export", "--pipeline", PROTEINS, "--out", bundle)  # as it was run
    assert code == 0 and bundle.exists(), err


def _stage(stage, change):
    """An edit that gives each run's output ``stage`` the array ``change(its array)``."""

    def edit(doc, ms):
        old = {r["blobs"][stage] for r in doc["runs"]}
        arrays = {b: np.load(io.BytesIO(ms.pop(f"arrays/{b}.npy"))) for b in old}
        for r in doc["runs"]:
            restage(r, ms, stage, change(arrays[r["blobs"][stage]]))

    return edit


def _ids(change):
    return _stage("ids", change)


def _file(change):
    def edit(doc, ms):
        doc["pipelines"] = change(doc["pipelines"])

    return edit


def _source(data: bytes) -> dict:
    return {SHA: {"name": "proteins.py", "source": base64.b64encode(data).decode()}}


def _both(doc, ms):
    """Every run's train proteins its test proteins too: a leakage split read as homologs."""
    ids = {r["id"]: np.load(io.BytesIO(ms[f"arrays/{r['blobs']['ids']}.npy"])) for r in doc["runs"]}
    old = {r["blobs"]["train_ids"] for r in doc["runs"]}
    for r in doc["runs"]:
        restage(r, ms, "train_ids", ids[r["id"]])
    for b in old - {r["blobs"]["train_ids"] for r in doc["runs"]}:
        ms.pop(f"arrays/{b}.npy")


def _meta(stage, dtype, shape):
    """An edit of the recorded dtype and shape alone (a hashes-only bundle has no member)."""

    def edit(doc, ms):
        for r in doc["runs"]:
            info = {**r["stages"][stage], "dtype": dtype, "shape": shape}
            r["stages"][stage] = r["manifest"]["stages"][stage] = info
            r["blobs"][stage] = blob_key(info["sha256"], dtype, shape)

    return edit


def _field(change):
    def edit(doc, ms):
        change(doc)

    return edit


FORGED = {
    "bytes ids": (_ids(lambda a: a.astype("S")), None),  # ids as bytes are ids: accepted
    # a forger who drops the file: the outputs read as arrays, nothing reads them as ids
    "no file": (_file(lambda p: {}), None),
    "2-d ids": (_ids(lambda a: a.reshape(1, -1)), "must be a 1-d string array of ids"),
    "long ids": (_ids(lambda a: a.astype("<U300")), "over 256 characters"),
    "ids of no width": (_meta("ids", "<U0", [10**9]), "nor fixed-width text"),
    "an id twice": (_ids(lambda a: np.concatenate([a[:1], a[:-1]])), "holds the id"),
    "test ids among the train ids": (_both, "cannot also be a train protein"),
    "ids not one per truth row": (_ids(lambda a: a[:-1]), "not one per truth row"),
    "text probabilities": (
        _stage("p_lr", lambda a: a.astype(str)),
        "is declared probabilities by its pipeline's file, which must be",
    ),
    "a 2-d truth": (_stage("y_test", lambda a: a.reshape(1, -1)), "is declared truth"),
    "an object dtype": (_meta("ids", "|O", [30]), "nor fixed-width text"),
    # -Infinity is no JSON number: the decoder refuses the text before any reader sees it
    "a wall time of -inf": (
        _field(lambda d: [r["manifest"].update(wall_s=float("-inf")) for r in d["runs"]]),
        "bundle.json is not JSON",
    ),
    "a negative wall time": (
        _field(lambda d: [r["manifest"].update(wall_s=-1.0) for r in d["runs"]]),
        "has no wall time",
    ),
    "a pair of a run not in it": (
        _field(lambda d: d["pairs"][0].update(b="f" * 64)),
        "is not of two of the bundle's runs",
    ),
    "another file": (
        _file(lambda p: _source(PROTEINS.read_bytes() + b"#\n")),
        "does not hash to its runs' pipeline",
    ),
    "no run's file": (_file(lambda p: {**p, "f" * 64: p[SHA]}), "is no pipeline of its runs"),
    "a path for a name": (
        _file(lambda p: {SHA: {**p[SHA], "name": "../x.py"}}),
        "not a plain .py file name",
    ),
    "not base64": (_file(lambda p: {SHA: {**p[SHA], "source": "!!"}}), "is not base64"),
    "files not a mapping": (_file(lambda p: []), "malformed (pipelines)"),
}


@pytest.mark.parametrize("case", list(FORGED))
def test_forged_ids_and_files_are_refused_in_one_line(made, elsewhere, tmp_path, capsys, case):
    edit, words = FORGED[case]
    forged = forge(made["bundle"], tmp_path / "forged.kit", edit)
    if words is None:
        code, _, err = cli(capsys, "import", forged)
        assert code == 0, err
        return
    refused(capsys, forged, words)
    assert not [f for f in elsewhere.glob("pipelines/**/*") if f.is_file()]


@pytest.mark.slow
def test_a_pipeline_of_text_labels_travels_and_reads_alike(made, tmp_path, monkeypatch, capsys):
    """Text truth and labels (class names) are what a worker writes for many labs: exported
    and imported, every reader reads them there as here."""
    text = tmp_path / "text.py"
    text.write_text(TEXT)
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "a"))
    assert (
        cli(
            capsys,
            "run",
            "--pipeline",
            text,
            "--factor",
            "seed",
            "--threads",
            "1",
            "--seeds",
            "0,1",
        )[0]
        == 0
    )
    reads = {w: cli(capsys, w, "--pipeline", text, "--json") for w in ("budget", "verdicts")}
    assert all(code == 0 for code, _, _ in reads.values()), reads
    assert (
        cli(capsys, "export", "--pipeline", text, "--arrays", "--out", tmp_path / "t.kit")[0] == 0
    )
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "b"))
    code, _, err = cli(capsys, "import", tmp_path / "t.kit")
    assert code == 0, err
    sha = file_sha256(text)[:12]
    for what, (_, out, _) in reads.items():
        code, there, err = cli(capsys, what, "--pipeline", sha, "--json")
        assert code == 0 and json.loads(there) == json.loads(out), (what, err)


TEXT = """import numpy as np

SEEDS = ("a",)
KINDS = {"y": "truth", "cl": "labels", "p1": "probabilities", "p2": "probabilities"}


def run(seeds):
    rng = np.random.default_rng(seeds["a"])
    p1, p2 = rng.random(40), rng.random(40)
    y = np.array(["enzyme", "other"])[np.arange(40) % 2]
    return {"y": y, "cl": np.array(["c1", "c2"])[(p1 > 0.5).astype(int)], "p1": p1, "p2": p2,
            "names": np.array([f"row {i}" for i in range(40)])}
"""
