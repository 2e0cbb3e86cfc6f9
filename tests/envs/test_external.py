"""kit.envs.external: interpreters a user brings, registered by name and probed on every use.

The interpreters are real: kit's own (numpy, scipy, scikit-learn: a pipeline stack) and a bare
venv made here (no numpy: refused). The torch case is in test_torch.py, which builds a torch stack.
"""

import json
import subprocess
import sys

import pytest

from kit.cli import main
from kit.core.errors import KitError
from kit.envs import external
from kit.envs.catalogue import HOST
from kit.envs.kinds import listing, stack_kind
from kit.envs.platforms import detect
from kit.runs.planning.options import PlanOptions
from kit.runs.planning.plan import plan, required_stacks

D = "d" * 64


@pytest.fixture
def mine():
    """kit's own interpreter, registered as the external stack 'mine'."""
    external.add("mine", sys.executable)
    return "mine"


@pytest.mark.slow
def test_add_probes_and_registers_a_pipeline_interpreter(mine):
    e = external.registry()[mine]
    assert e["python"] == sys.executable and e["facts"]["torch"] is None
    assert e["facts"]["packages"]["scikit-learn"] and e["facts"]["devices"] == ["cpu"]
    kind = stack_kind(mine)
    assert kind.kind == "external" and kind.uses() == ["pipeline"] and kind.devices() == []
    assert kind.status(detect()) == ("built", None)
    row = next(r for r in listing() if r["name"] == mine)
    assert row["kind"] == "external" and row["uses"] == ["pipeline"] and row["status"] == "built"


@pytest.mark.slow
def test_identity_is_what_the_interpreter_holds(mine):
    st = stack_kind(mine).runnable()
    assert st.command == (sys.executable,) and st.identity == external.identity(
        external.probe(mine)
    )
    host = stack_kind(HOST).runnable()
    assert st.identity != host.identity  # same interpreter, but a different kind of stack
    external._probe_python.cache_clear()
    again = stack_kind(mine).runnable()
    assert again.identity == st.identity  # probed again: nothing changed, same identity
    p = plan("seed", D, PlanOptions(seeds=(0, 1), threads=(1,)), stack=mine, plat=detect())
    assert {s.stack_id for pr in p for s in (pr.a, pr.b)} == {st.identity}


@pytest.mark.slow
def test_bad_registrations_are_refused_and_write_nothing(tmp_path, mine):
    before = external.registry_path().read_bytes()
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    cases = [
        ("host", sys.executable, "is taken"),
        ("np2-sk191", sys.executable, "is taken"),
        ("a b", sys.executable, "use letters"),
        ("x\n", sys.executable, "use letters"),
        ("x", str(tmp_path / "nope"), "not an executable"),
        ("x", str(bare / "bin" / "python"), "with numpy"),
    ]
    for name, python, why in cases:
        with pytest.raises(KitError, match=why):
            external.add(name, python)
    assert external.registry_path().read_bytes() == before


@pytest.mark.slow
def test_remove_and_a_vanished_interpreter(tmp_path, mine, capsys):
    external.remove(mine)
    assert mine not in external.registry()
    with pytest.raises(KitError, match="no external stack"):
        external.remove(mine)
    # an interpreter that disappears after it was added is unavailable, with the fix
    py = tmp_path / "python-wrapper"  # a wrapper script: clusters' module pythons often are
    py.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    py.chmod(0o755)
    external.add("gone", str(py))
    py.unlink()
    st, why = stack_kind("gone").status(detect())
    assert st == "unavailable" and "no longer exists" in why
    with pytest.raises(KitError, match="no longer exists"):
        stack_kind("gone").runnable()


def test_a_corrupt_registry_is_a_clear_error():
    external.registry_path().write_text("{not json")
    with pytest.raises(
        KitError, match="external.json is not JSON .*kit store check --repair. moves it aside"
    ):
        external.registry()


@pytest.mark.slow
def test_wrong_kind_of_stack_for_a_factor(mine):
    with pytest.raises(KitError, match="stack mine has no torch"):
        required_stacks(["torch-seed"], detect(), opts=PlanOptions(torch_stack=mine))
    with pytest.raises(KitError, match="stack torch-linux-cpu has no scikit-learn"):
        required_stacks(["seed"], detect(), stack="torch-linux-cpu")
    with pytest.raises(KitError, match="unknown stack 'nope'"):
        required_stacks(["seed"], detect(), stack="nope")
    assert required_stacks(["seed", "repeat"], detect(), stack=mine) == [mine]


@pytest.mark.slow
def test_cli_add_list_doctor_remove(capsys, tmp_path):
    assert main(["stacks", "add", "mine", sys.executable]) == 0
    out = capsys.readouterr().out
    assert "added external stack mine" in out and "--stack mine" in out
    assert main(["stacks", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["mine"]["venv"] == sys.executable
    assert main(["stacks", "doctor", "mine", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["status"] == "built" and row["measured"]["executable"] == sys.executable
    assert main(["stacks", "build", "mine"]) == 1  # kit never builds an interpreter it was given
    assert "is external: kit runs it as it is" in capsys.readouterr().err
    assert main(["stacks", "remove", "mine"]) == 0
    assert main(["stacks", "remove", "mine"]) == 1


@pytest.mark.slow
def test_a_run_in_an_external_stack_matches_the_same_interpreter_as_host(capsys, mine):
    """kit's own interpreter under another name: other stack ids, identical bits at every stage."""
    argv = ["run", "--factor", "seed", "--seeds", "0-1", "--threads", "1", "--n", "150", "--json"]
    assert main(argv) == 0 and main(argv + ["--stack", mine]) == 0
    capsys.readouterr()
    assert main(["runs", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    by = {}
    for r in runs:
        by.setdefault(r["spec"]["stack"], {})[json.dumps(r["spec"]["seeds"])] = r["manifest"][
            "stages"
        ]
    assert set(by) == {"host", mine} and by["host"].keys() == by[mine].keys()
    for seeds, stages in by["host"].items():
        assert {k: v["sha256"] for k, v in stages.items()} == {
            k: v["sha256"] for k, v in by[mine][seeds].items()
        }
