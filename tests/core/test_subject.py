"""A Subject is one frozen record of what an audit is of, for kit's own pipeline and a lab's."""

import pytest

from kit.core.subject import DATASET, PIPELINE, Subject, of_dataset, of_pipeline
from kit.worker.pipeline import KINDS, SEED_NAMES


def test_kit_s_own_pipeline_declares_its_seeds_and_kinds_as_a_lab_file_does():
    s = of_dataset("a" * 64, {"name": "synthetic-1000", "rows": 1000}, why="as asked")
    assert s.kind == DATASET and not s.is_pipeline and s.name == "synthetic-1000"
    assert s.seeds == SEED_NAMES and dict(s.kinds) == KINDS and s.kind_of("knn") == "neighbours"
    assert s.kind_of("not-an-output") == "array" and s.label() == "dataset synthetic-1000"


def test_a_lab_pipeline_is_the_same_record_from_its_declaration():
    info = {
        "sha256": "b" * 64,
        "name": "digits.py",
        "seeds": ["split", "init"],
        "kinds": {"labels": "labels"},
        "dtype": False,
    }
    s = of_pipeline(info, why="its file")
    assert s.kind == PIPELINE and s.is_pipeline and s.seeds == ("split", "init")
    assert s.dtype is False and s.kind_of("labels") == "labels"
    assert s.label() == f"pipeline digits.py ({'b' * 12})"
    info["kinds"]["labels"] = "array"  # the record is its own copy
    assert s.kind_of("labels") == "labels"


def test_a_subject_cannot_be_changed_or_misnamed():
    s = of_dataset("c" * 64, {"name": "x"})
    with pytest.raises(AttributeError):  # dataclasses.FrozenInstanceError
        s.name = "y"
    with pytest.raises(TypeError):
        s.kinds["knn"] = "array"
    with pytest.raises(ValueError, match="64 hex"):
        Subject(DATASET, "c" * 12, "x")
    with pytest.raises(ValueError, match="not 'run'"):
        Subject("run", "c" * 64, "x")
    assert {s, of_dataset("c" * 64, {"name": "x"})} == {s}  # one subject, however it was read
