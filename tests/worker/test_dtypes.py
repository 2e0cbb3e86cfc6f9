"""One set of dtypes on the way in and out (kit.worker.dtypes): what a run returns, the store
takes in, export writes and import reads. An output of another dtype (longdouble and its
padding, complex, float16, datetime64, a record, void) is refused at run time in one line that
says what to cast it to, nothing stored; every dtype kit stores travels through a bundle; an
array is stored by its values (little-endian, a bool's bytes 0 or 1), so equal values hash
equal."""

import numpy as np
import pytest

from kit.worker import contract
from kit.worker.contract import ContractError
from kit.worker.dtypes import (
    MAX_TEXT_CHARS,
    NUMBERS,
    canonical,
    output_problem,
    recorded_problem,
    stored,
)
from tests.scenarios.test_running_a_pipeline_that_misbehaves import PIPES, error, kit, run_file

# KIT_TEST_DTYPE of tests/support/pipelines/dtypes.py: what its output 'x' is said to be
REFUSED = {
    "longdouble": "is longdouble",
    "complex128": "is complex128: return its real and imaginary parts as two float64 outputs",
    "float16": "is float16: cast it to float32 (np.asarray(x, dtype=np.float32))",
    "datetime64": "is datetime64[D]: cast it to int64 (x.astype(np.int64), its count of D units)",
    "structured": "is a structured array (fields score, flag): return each field as an output "
    "of its own (x['score'])",
    "void": "is void (8 bytes a value): return its bytes as uint8",
}
STORES = "kit stores " + stored(text=True)


# -- the one definition: fast ----------------------------------------------------------------


def test_the_set_is_plain_numbers_little_endian_and_a_lab_s_text():
    for name in NUMBERS:
        s = np.dtype(name).newbyteorder("<").str
        assert recorded_problem(s, text=False) is None and output_problem(np.dtype(name)) is None
    for s in ("<U1", "<U256", "|S1", "|S256"):
        assert recorded_problem(s, text=True) is None
        assert "plain number type" in recorded_problem(s, text=False)  # kit's own: numbers
    assert "over 256 characters" in recorded_problem("<U257", text=True)
    # forged strings are said, never handed to np.dtype (which raises on "<f1")
    for s in (
        "<f1",
        "<b2",
        "<f2",
        "<f16",
        "<c16",
        ">f8",
        ">U3",
        "<U0",
        "|V8",
        "<M8[D]",
        "|O",
        "x" * 10**6,
        7,
    ):
        why = recorded_problem(s, text=True)
        assert why and len(why) < 400, s  # the forged string is never echoed


def test_the_refusal_names_exactly_the_dtypes_the_check_takes():
    """The words come from the set itself: they said "bool, integers, float32 and float64"
    while a lab's fixed-width text was stored too."""
    import re

    for text, said in (
        (True, output_problem(np.dtype(np.complex128))),
        (True, recorded_problem("<c16", text=True)),
        (False, recorded_problem("<c16", text=False)),
    ):
        said = said.split("kit stores ", 1)[1]
        named = re.findall(r"\b[a-z]+\d*\b", said.split(" and fixed-width")[0])
        assert set(named) - {"and", "little", "endian"} == set(NUMBERS), said
        for name in named:  # every number type it names is one the check takes
            if name in NUMBERS:
                assert recorded_problem(np.dtype(name).newbyteorder("<").str, text) is None
        assert ("fixed-width text" in said) is text, said
        if text:
            assert f"1 to {MAX_TEXT_CHARS} characters" in said
            assert recorded_problem(f"<U{MAX_TEXT_CHARS}", text=True) is None
            assert recorded_problem(f"<U{MAX_TEXT_CHARS + 1}", text=True) is not None


def test_each_refused_output_names_its_dtype_and_what_to_cast_it_to():
    values = np.arange(3.0)
    for got in (
        values.astype(np.longdouble),
        values + 1j,
        values.astype(np.float16),
        np.array(["2026-01-01"], dtype="M8[D]"),
        np.zeros(2, dtype="m8[s]"),
        np.zeros(2, dtype=[("a", "f8"), ("b", "i1")]),
        values.view("V8"),
    ):
        with pytest.raises(ContractError) as e:
            contract.check_outputs("mine.py", {"x": got}, {})
        line = str(e.value)
        assert line.startswith("mine.py: output 'x' is ") and "\n" not in line, line
        assert STORES in line, line
    with pytest.raises(
        ContractError,
        match=r"^mine.py: output 'x' is longdouble.*: cast it to "
        r"float64 \(np.asarray\(x, dtype=np.float64\)\); " + STORES + "$",
    ):
        contract.check_outputs("mine.py", {"x": values.astype(np.longdouble)}, {})
    with pytest.raises(
        ContractError, match="text of 300 characters a value: kit stores text of at most 256"
    ):
        contract.check_outputs("mine.py", {"x": np.array(["a" * 300])}, {})


def test_an_output_is_stored_by_its_values_whatever_its_byte_order_or_bool_bytes():
    values = np.random.default_rng(0).random(5)
    big, little = contract.check_outputs(
        "m.py", {"a": values.astype(">f8"), "b": values}, {}
    ).values()
    assert big.dtype.str == "<f8" and contract.stages({"x": big}) == contract.stages({"x": little})
    odd = np.array([0, 2, 1, 255], dtype=np.uint8).view(bool)
    plain = np.array([False, True, True, True])
    assert contract.stages({"x": canonical(odd)}) == contract.stages({"x": plain})


def test_the_store_refuses_a_manifest_dtype_outside_the_set(tmp_path):
    """What an older worker (or a forged folder) hands the store is held to the same set."""
    from kit.core.errors import KitError
    from kit.core.spec import RunSpec
    from kit.runs.store import Store
    from kit.runs.store.blobs import array_sha256

    a = np.arange(4).astype(np.longdouble)
    np.save(tmp_path / "x.npy", a)
    manifest = {"stages": {"x": {"sha256": array_sha256(a), "dtype": a.dtype.str, "shape": [4]}}}
    spec = RunSpec(dataset="d" * 64, stack="host", stack_id="s" * 64)
    with pytest.raises(KitError, match=r"stage x: dtype '<f16' is not a plain number type"):
        Store().put_run(spec, tmp_path, manifest)
    assert not Store().has_run(spec.run_id)


# -- real runs: slow -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("dtype", sorted(REFUSED))
def test_an_output_kit_cannot_store_is_refused_at_run_time_in_one_line(dtype):
    pipe = str(PIPES / "dtypes.py")
    line = error(run_file("dtypes.py", KIT_TEST_DTYPE=dtype))
    assert f"dtypes.py: output 'x' {REFUSED[dtype]}" in line and line.endswith(STORES), line
    res = kit("runs", "--pipeline", pipe)
    assert res.returncode == 0 and "no runs of pipeline dtypes.py" in res.stdout + res.stderr


@pytest.mark.slow
def test_a_longdouble_output_is_no_loose_generator_in_the_doctor():
    """Its padding bytes differed from run to run: the null experiment called that a loose
    generator. Refused at run time, the doctor says the one line instead."""
    res = kit("doctor", "--pipeline", str(PIPES / "dtypes.py"), KIT_TEST_DTYPE="longdouble")
    line = error(res)
    assert "output 'x' is longdouble" in line and "cast it to float64" in line
    assert "LOOSE GENERATOR" not in res.stdout + res.stderr


@pytest.mark.slow
def test_every_dtype_kit_stores_travels_through_export_and_import(tmp_path, kit_home):
    pipe = str(PIPES / "every_dtype.py")
    res = run_file("every_dtype.py")
    assert res.returncode == 1 and "a generator is loose" in res.stderr, res.stderr  # noise
    bundle = tmp_path / "every.kit"
    res = kit("export", "--pipeline", pipe, "--arrays", "--out", str(bundle))
    assert res.returncode == 0, res.stderr
    other = tmp_path / "other"
    res = kit("import", str(bundle), KIT_HOME=str(other))
    assert res.returncode == 0 and "imported 4 new of 4 runs" in res.stdout, res.stderr
    res = kit("budget", "--pipeline", pipe, KIT_HOME=str(other))
    assert res.returncode == 0 and "noise" in res.stdout, res.stderr

    from kit.runs.store import Store

    there = Store(other)
    runs = there.runs()
    stored = {st: i.dtype for st, i in runs[0].stages.items()}
    assert stored == {
        **{n: np.dtype(n).newbyteorder("<").str for n in NUMBERS},
        "ids": "<U6",
        "tags": "|S3",
        "big": "<f8",
        "flags": "|b1",
        "score": "<f8",
        "noise": "<f8",
    }
    flags = there.array(runs[0].id, "flags")
    assert flags.view(np.uint8).tolist() == [0, 1, 1, 1, 0, 1]  # stored by its values


def test_export_refuses_a_stored_run_no_import_would_read(tmp_path, monkeypatch):
    """A run an older kit stored with a longdouble stage is said at export, not at the other end."""
    import stored

    from kit.app.bundle import export
    from kit.core.errors import KitError
    from kit.runs.store import Store, moving

    spec = stored.spec()
    with monkeypatch.context() as m:  # as an older kit took it in
        m.setattr(moving, "recorded_problem", lambda dtype, text: None)
        stored.put(
            Store(),
            tmp_path,
            spec,
            {**stored.arrays(), "y_test": np.arange(20.0).astype(np.longdouble)},
        )
    out = tmp_path / "old.kit"
    with pytest.raises(
        KitError,
        match=rf"run {spec.run_id[:12]} stage 'y_test': dtype '<f16' is "
        r"not a plain number type .*so no `kit import` would read",
    ):
        export(Store(), [spec.run_id], out, arrays=True)
    assert not out.exists()
