"""kit.runs.executing.answers: what a node answers is checked before anything of it is written."""

import numpy as np
import pytest

from kit.core.spec import RunSpec
from kit.runs.executing.answers import unpacked
from kit.runs.executing.runner import RunFailed

SPEC = RunSpec(dataset="d" * 64, stack="host", stack_id="s", host="a")
NODE = {"host": "ws1", "class": "a"}


def test_a_nodes_failure_is_a_failed_run_naming_the_node_and_its_stderr(tmp_path):
    with pytest.raises(RunFailed, match=r"failed on node ws1 \(a\): boom") as e:
        unpacked({"error": "boom", "tail": "line 1\nline 2", "node": NODE}, SPEC, tmp_path)
    assert "line 2" in str(e.value)


@pytest.mark.parametrize(
    "answer",
    [
        None,
        "a string",
        {"node": NODE},
        {"manifest": {}, "arrays": [], "node": NODE},
        {"manifest": {}, "arrays": {"../escape.npy": b"x"}, "node": NODE},
        {"manifest": {}, "arrays": {".hidden.npy": b"x"}},
        {"manifest": {}, "arrays": {"manifest.json": b"x"}},
        {"manifest": {}, "arrays": {"kmer.npy": "not bytes"}},
        {"manifest": "no", "arrays": {}},
        {"manifest": {}, "arrays": {}},  # no stages: a run of nothing
        {"manifest": {"stages": {}}, "arrays": {}},
        {
            "manifest": {"stages": {"../x": {"sha256": "0" * 64, "dtype": "<f8", "shape": [1]}}},
            "arrays": {},
        },  # a stage outside the folder
        {
            "manifest": {"stages": {"kmer": {"sha256": "0" * 64, "dtype": "<f8", "shape": [1]}}},
            "arrays": {"kmer.npy": b"x", "extra.npy": b"y"},
        },  # an array no stage names
        {
            "manifest": {"stages": {"kmer": {"sha256": "zz", "dtype": "<f8", "shape": [1]}}},
            "arrays": {"kmer.npy": b"x"},
        },
        {
            "manifest": {"stages": {"kmer": {"sha256": "0" * 64, "dtype": "<f8", "shape": ["1"]}}},
            "arrays": {"kmer.npy": b"x"},
        },
    ],
)
def test_an_answer_that_is_not_a_run_is_refused_and_writes_nothing(tmp_path, answer):
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(RunFailed, match="not a run"):
        unpacked(answer, SPEC, out)
    assert not list(out.iterdir()) and not (tmp_path / "escape.npy").exists()


def test_a_runs_arrays_land_in_the_folder_and_its_manifest_is_handed_on(tmp_path):
    import io

    buf = io.BytesIO()
    np.save(buf, np.arange(3))
    entry = {
        "sha256": "0" * 64,
        "dtype": "<i8",
        "shape": [3],
    }  # the store checks it against the array
    manifest = {
        "stages": {"kmer": entry},
        "wall_s": 1.0,
        "node": NODE,
        "env": {"python": "3.12.1", "machine": "x86_64", "os": "linux", "cpu": "x"},
    }
    got = unpacked(
        {"manifest": manifest, "arrays": {"kmer.npy": buf.getvalue()}, "node": NODE}, SPEC, tmp_path
    )
    assert got == manifest and np.load(tmp_path / "kmer.npy").tolist() == [0, 1, 2]


def test_a_manifest_not_by_the_schema_is_refused_naming_the_field(tmp_path):
    """A node's manifest is parsed by kit.core.documents: an emptied env, or a field no
    worker writes, is no run (the readers' KeyError of an emptied manifest)."""
    entry = {"sha256": "0" * 64, "dtype": "<i8", "shape": [3]}
    for manifest, says in [
        ({"stages": {"kmer": entry}, "wall_s": 1.0, "env": {}}, "python"),
        (
            {
                "stages": {"kmer": entry},
                "wall_s": 1.0,
                "planted": 1,
                "env": {"python": "3.12.1", "machine": "x", "os": "l", "cpu": "c"},
            },
            "planted",
        ),
    ]:
        with pytest.raises(RunFailed, match=f"not a run.*{says}"):
            unpacked({"manifest": manifest, "arrays": {"kmer.npy": b"x"}}, SPEC, tmp_path)


def test_an_array_left_out_must_be_one_the_task_said_the_store_holds(tmp_path):
    """A node sends back only what the driver's store lacks: an answer may leave out an array
    whose blob key the task named as held, and no other (forged or buggy: not a run)."""
    import io

    from kit.runs.store import array_sha256
    from kit.runs.store.blobs import blob_key

    buf = io.BytesIO()
    np.save(buf, np.arange(3))
    kmer = {"sha256": array_sha256(np.arange(3)), "dtype": "<i8", "shape": [3]}
    tfidf = {"sha256": "1" * 64, "dtype": "<f8", "shape": [2]}
    manifest = {
        "stages": {"kmer": kmer, "tfidf": tfidf},
        "wall_s": 1.0,
        "node": NODE,
        "env": {"python": "3.12.1", "machine": "x86_64", "os": "linux", "cpu": "x"},
    }
    answer = {"manifest": manifest, "arrays": {"kmer.npy": buf.getvalue()}, "node": NODE}
    held = frozenset({blob_key(tfidf["sha256"], tfidf["dtype"], tfidf["shape"])})
    assert unpacked(answer, SPEC, tmp_path, held) == manifest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kmer.npy"]
    out = tmp_path / "out"
    out.mkdir()
    for wrong in (frozenset(), frozenset({blob_key(tfidf["sha256"], tfidf["dtype"], [3])})):
        with pytest.raises(RunFailed, match="not a run"):
            unpacked(answer, SPEC, out, wrong)
        assert not list(out.iterdir())
