"""kit.core.documents: a run's spec and manifest parse strictly, or fail in one line."""

import json

import pytest

from kit.core.documents import DocumentError, control_free, decode_manifest, spec_from_json
from kit.core.spec import RunSpec

SPEC = RunSpec(
    dataset="d" * 64, stack="host", stack_id="s" * 64, env=(("OPENBLAS_CORETYPE", "Haswell"),)
)
MANIFEST = {
    "stages": {"lr": {"sha256": "a" * 64, "dtype": "<f8", "shape": [66]}},
    "timings": {"lr": {"wall_s": 0.5, "cpu_s": 0.4}},
    "wall_s": 1.5,
    "started": 1.0,
    "finished": 2.5,
    "seeds": {"svd": 0},
    "runs_before": 0,
    "env": {
        "python": "3.12.1",
        "machine": "x86_64",
        "os": "linux",
        "cpu": "AMD EPYC",
        "packages": {"numpy": "2.5.5"},
        "threadpools": [{"user_api": "blas", "num_threads": 2}],
        "env": {"OMP_NUM_THREADS": "2"},
        "torch": None,
    },
}


def test_a_spec_round_trips_with_its_id():
    got = spec_from_json(SPEC.to_json())
    assert got == SPEC and got.run_id == SPEC.run_id


@pytest.mark.parametrize(
    "edit, says",
    [
        (lambda t: t.replace('"threads":1', '"threads":"1"'), "threads"),
        (lambda t: t.replace('"threads":1', '"threads":true'), "threads"),
        (lambda t: t.replace('"threads":1', '"threads":1,"extra":0'), "unknown field"),
        (lambda t: t.replace('"replicate":0,', ""), "replicate"),
        (lambda t: t.replace('"Haswell"', '"Haswell; touch x"'), "not a value kit writes"),
        (lambda t: t.replace("OPENBLAS_CORETYPE", "PYTHONWARNINGS"), "PYTHONWARNINGS"),
        (lambda t: t.replace('"svd",0', '"s\\nvd",0'), "control character"),
        (lambda t: t[:-5], "not JSON"),
        (lambda t: t.replace('"d' + "d" * 63 + '"', '"' + "d" * 64 + '\\n"'), "dataset"),
        (lambda t: "[" * 100_000, "spec"),
    ],
)
def test_a_spec_not_as_kit_writes_it_is_one_line(edit, says):
    with pytest.raises(DocumentError, match=says) as e:
        spec_from_json(edit(SPEC.to_json()))
    assert "\n" not in str(e.value)


def test_a_manifest_parses_to_what_readers_read():
    assert decode_manifest(json.dumps(MANIFEST)) == MANIFEST
    assert decode_manifest(MANIFEST) == MANIFEST


@pytest.mark.parametrize(
    "edit, says",
    [
        (lambda m: {}, "stages"),  # an emptied manifest
        (lambda m: {**m, "env": {}}, "python"),
        (lambda m: {**m, "wall_s": -1}, "wall_s"),
        (lambda m: {**m, "wall_s": float("inf")}, "wall"),
        (lambda m: {**m, "planted": 1}, "unknown field"),
        (lambda m: {**m, "stages": {"x\ny": m["stages"]["lr"]}}, "control character"),
        (
            lambda m: {**m, "env": {**m["env"], "packages": {f"p{i}": "1" for i in range(5000)}}},
            "packages",
        ),
        # a reviewer's: every string of the environment reaches the budget's confounds and compare
        (lambda m: {**m, "env": {**m["env"], "host": "box\x1b]0;pwned\x07"}}, "control character"),
        (
            lambda m: {**m, "env": {**m["env"], "threadpools": [{"architecture": "Zen\x1b[8m"}]}},
            "control character",
        ),
        (
            lambda m: {**m, "env": {**m["env"], "env": {"OMP_NUM_THREADS": "2\x1b[31m"}}},
            "control character",
        ),
        # msgspec searches a pattern: $ let a final newline through into the store's hashes
        (
            lambda m: {**m, "stages": {"lr": {**m["stages"]["lr"], "sha256": "a" * 64 + "\n"}}},
            "sha256",
        ),
        (lambda m: {**m, "stages": {"lr": {**m["stages"]["lr"], "dtype": "<f8\n"}}}, "dtype"),
    ],
)
def test_a_manifest_not_as_kit_writes_it_is_one_line(edit, says):
    with pytest.raises(DocumentError, match=says):
        decode_manifest(edit(dict(MANIFEST)))


def test_control_characters():
    assert control_free("kmer.data") and control_free("Überblick")
    for bad in ["a\nb", "a\rb", "\x1b[31m", "a\u202eb", "a\x00", "a\u200bb", "\x85"]:
        assert not control_free(bad)
