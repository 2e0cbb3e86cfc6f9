"""kit.app.bundle_pipelines: a protein pipeline's runs travel in a bundle with the file that
declares what they mean; the importer reads that file (never runs nor keeps it), and refuses ids
its file does not declare, ids that are not 1-d short strings, and a file that is not the runs'."""

import base64
import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from kit.cli import main
from kit.data.pipelines import file_sha256
from kit.data.synthetic import generate
from kit.runs.store import Store
from test_bundle_trust import forge, refused, restage

PROTEINS = Path(__file__).parent / "pipelines" / "proteins.py"
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
    tsv.write_text("accession\tsequence\tlabel\n"
                   + "".join(f"{a}\t{s}\t{int(y)}\n" for a, s, y in zip(ids, seqs, labels)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_HOME", str(root / "a"))
        mp.setenv("KIT_TEST_PROTEINS", str(tsv))
        for argv in (("run", "--pipeline", PROTEINS, "--factor", "repeat", "--threads", "1"),
                     ("export", "--pipeline", PROTEINS, "--arrays", "--out", root / "p.kit"),
                     ("export", "--pipeline", PROTEINS, "--out", root / "h.kit")):
            assert main([str(a) for a in argv]) == 0, argv
        reads = {}
        for what in ("verdicts", "budget"):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                assert main([what, "--pipeline", SHA[:12], "--json"]) == 0
            reads[what] = json.loads(buf.getvalue())
    return {"root": root, "bundle": root / "p.kit", "hashes": root / "h.kit", "reads": reads,
            "tsv": tsv}


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


def test_runs_of_ids_whose_file_is_not_here_are_not_exported_again(made, elsewhere, tmp_path,
                                                                   capsys):
    assert cli(capsys, "import", made["bundle"])[0] == 0
    out = tmp_path / "again.kit"
    code, _, err = cli(capsys, "export", "--pipeline", SHA[:12], "--out", out)
    assert code == 1 and "export them from the KIT_HOME that ran them" in err, err
    assert err.strip().count("\n") == 0 and not out.exists()


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


FORGED = {
    "bytes ids": (_ids(lambda a: a.astype("S")), None),  # ids as bytes are ids: accepted
    "2-d ids": (_ids(lambda a: a.reshape(1, -1)), "protein ids are 1-d"),
    "long ids": (_ids(lambda a: a.astype("<U300")), "over 256 characters"),
    "ids in the truth": (_stage("y_test", lambda a: a.astype(str)), "declares no protein ids there"),
    "no file": (_file(lambda p: {}), "declares no protein ids there"),
    "another file": (_file(lambda p: _source(PROTEINS.read_bytes() + b"#\n")),
                     "does not hash to its runs' pipeline"),
    "no run's file": (_file(lambda p: {**p, "f" * 64: p[SHA]}), "is no pipeline of its runs"),
    "a path for a name": (_file(lambda p: {SHA: {**p[SHA], "name": "../x.py"}}),
                          "not a plain .py file name"),
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


def test_an_object_array_of_ids_is_refused(made, elsewhere, tmp_path, capsys):
    def edit(doc, ms):
        for r in doc["runs"]:
            r["stages"]["ids"]["dtype"] = r["manifest"]["stages"]["ids"]["dtype"] = "|O"
    refused(capsys, forge(made["bundle"], tmp_path / "o.kit", edit), "is not a plain number type")
