"""Real stacks built with uv from the committed lock files, and a cross-stack factor end to end.

Builds two small stacks (numpy 1.26.4 with scikit-learn 1.5.2 and 1.9.1, Python 3.12); uv's
cache makes a second build quick. Skipped only where no Python 3.12 can be found or fetched.
"""

import json

import pytest
from catalogues import PAIR, sklearn_pair

from kit.cli import main
from kit.envs.catalogue import MARKER, definitions
from kit.envs.kinds import stack_kind
from kit.envs.platforms import detect

# one worker builds the module's stacks once (uv's cache makes that quick, not free); each test
# still makes sure of what it needs, so it passes alone or in any order
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("envs/kinds/test_catalogue")]


@pytest.fixture(scope="module")
def module_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("stacks-home")
    sklearn_pair(home)
    return home


@pytest.fixture(autouse=True)
def kit_home(module_home, monkeypatch):  # overrides conftest's per-test home: builds are shared
    monkeypatch.setenv("KIT_HOME", str(module_home / "kit"))
    monkeypatch.setenv("KIT_STACKS_DIR", str(module_home / "catalogue"))
    return module_home / "kit"


def test_build_two_real_stacks(capsys):
    plat = detect()
    defs = definitions()
    st, why = stack_kind(PAIR[0]).status(plat)
    if st == "unavailable":
        pytest.skip(why)
    assert main(["stacks", "build", *PAIR]) == 0
    rows = {r["name"]: r for r in _stacks_json(capsys)}
    assert all(rows[n]["status"] == "built" for n in PAIR)
    for n in PAIR:
        marker = json.loads((defs[n].venv() / MARKER).read_text())
        assert marker["lock_sha256"] == defs[n].lock_sha256() and marker["python"].startswith(
            "3.12"
        )
        # its size and time: the rate the next builds are estimated at (kit.envs.build_time)
        assert (
            marker["build_s"] > 0
            and marker["download_bytes"] == stack_kind(n).download_bytes(plat) > 0
        )
    capsys.readouterr()
    assert main(["stacks", "build", "--estimate", *PAIR]) == 0
    assert capsys.readouterr().out == "every stack available here is built: nothing to build\n"


def _built():
    """PAIR built (a no-op after test_build_two_real_stacks, on the same worker)."""
    plat = detect()
    if stack_kind(PAIR[0]).status(plat)[0] == "unavailable":
        pytest.skip(stack_kind(PAIR[0]).status(plat)[1])
    for n in PAIR:
        stack_kind(n).build(plat)


def test_the_next_builds_are_estimated_at_the_rate_of_those_before():
    """No network: the rate is the earlier builds' own (download, unpacking and compiling)."""
    from kit.envs.build_time import estimate, said

    _built()
    plat = detect()
    e = estimate([stack_kind(PAIR[0])], plat, measure=None)  # measuring now would fail
    assert (
        e.how == "the rate of this machine's 2 earlier builds (download, unpacking and compiling)"
    )
    records = [stack_kind(n).build_record() for n in PAIR]
    rate = sum(r["download_bytes"] for r in records) / sum(r["build_s"] for r in records)
    assert e.rate == pytest.approx(rate) and f"at {rate / 2**20:.1f} MB/s" in said(e)[1]


def test_building_again_is_a_no_op_and_a_half_built_venv_is_rebuilt():
    _built()
    kind = stack_kind(PAIR[0])
    assert kind.build(detect()) is False
    (kind.d.venv() / MARKER).unlink()  # as if interrupted before the end
    assert kind.built() is None and kind.status(detect())[0] == "not built"
    assert kind.build(detect()) is True and kind.built() is not None


def test_doctor_measures_what_each_stack_has(capsys):
    _built()
    assert main(["stacks", "doctor", "--json", *PAIR]) == 0
    report = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    for n, sk in zip(PAIR, ("1.5.2", "1.9.1"), strict=True):
        pk = report[n]["measured"]["packages"]
        assert pk["numpy"] == "1.26.4" and pk["scikit-learn"] == sk
        assert any(p["internal_api"] == "openblas" for p in report[n]["measured"]["threadpools"])


def test_sklearn_factor_end_to_end(capsys):
    assert main(["run", "--factor", "sklearn", "--n", "300", "--json", "--yes"]) == 0
    b = json.loads(capsys.readouterr().out)
    row = {r["factor"]: r for r in b["rows"]}["sklearn"]
    assert row["pairs"] == 1 and row["labels"] == [f"{PAIR[0]} vs {PAIR[1]}"]
    assert row["identical"]["kmer"] == 1  # exact integers never move
    # the planned difference is explained; anything else would be listed as a confound
    assert "package:scikit-learn" not in row["confounds"]
    assert all(not k.startswith("package:") for k in row["confounds"])
    pairs = json.loads(_run(capsys, ["budget", "--factor", "sklearn", "--json"]))
    assert pairs[0]["comparison"]["env_diff"]["package:scikit-learn"] == ["1.5.2", "1.9.1"]


def _run(capsys, argv):
    assert main(argv) == 0
    return capsys.readouterr().out


def _stacks_json(capsys):
    return json.loads(_run(capsys, ["stacks", "--json"]))


def test_stacks_lock_regenerates_the_same_lock(capsys):
    """`kit stacks lock` re-resolves a stack's pyproject.toml; pinned versions give the same lock."""
    d = definitions()[PAIR[0]]
    before = (d.lock_dir() / "uv.lock").read_text()
    (d.lock_dir() / "uv.lock").unlink()
    assert main(["stacks", "lock", PAIR[0]]) == 0
    after = (d.lock_dir() / "uv.lock").read_text()
    assert after == before


def test_a_damaged_stack_is_named_refused_and_repaired(capsys):
    """numpy's compiled core deleted: the stack said "built", the doctor found nothing, and runs
    failed with numpy's last line. Now it is "broken" everywhere, with the fix, and rebuilt."""
    _built()
    d = definitions()[PAIR[0]]
    core = next(d.venv().glob("lib/python*/site-packages/numpy/core/_multiarray_umath*.so"))
    core.unlink()
    from kit.envs.integrity import recheck

    recheck()  # as a new `kit` process would: this one checked the stack when it was whole
    rows = {r["name"]: r for r in _stacks_json(capsys)}
    assert rows[PAIR[0]]["status"] == "broken" and "_multiarray_umath" in rows[PAIR[0]]["reason"]
    assert main(["stacks", "doctor", "--json", PAIR[0]]) == 0
    assert json.loads(capsys.readouterr().out)[0]["status"] == "broken"
    from kit.core.errors import KitError

    with pytest.raises(
        KitError, match=f"stack '{PAIR[0]}' is damaged .*kit stacks build {PAIR[0]}"
    ):
        stack_kind(PAIR[0]).runnable()
    assert main(["stacks", "build", PAIR[0]]) == 0
    capsys.readouterr()
    assert {r["name"]: r for r in _stacks_json(capsys)}[PAIR[0]]["status"] == "built"
    # damaged again: `kit run` rebuilds the stacks its plan needs before it runs anything
    next(d.venv().glob("lib/python*/site-packages/numpy/core/_multiarray_umath*.so")).unlink()
    recheck()
    assert main(["run", "--factor", "sklearn", "--n", "300", "--yes"]) == 0
    assert f"built stack {PAIR[0]}" in capsys.readouterr().err
