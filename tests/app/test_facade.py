"""kit.Kit, the facade the CLI, the TUI and the notebook call: one home, every verb a method, and
the rules of where runs go met by every front end alike (kit.app.verbs.run_at)."""

import pytest

import kit
from kit.app.facade import Where
from kit.app.verbs import BadOption, Clash, check_where
from kit.cli import main
from kit.core import processes
from kit.core.errors import NotFound
from kit.runs.planning.options import PlanOptions


def _refused(capsys, words, rules) -> tuple:
    """The CLI's line for ``words`` (`kit run ...`), checked to be the verb's for ``rules``."""
    code = main(["run", "--factor", "repeat", "--n", "100", *words])
    said = capsys.readouterr().err.strip().splitlines()[-1]
    k = kit.Kit()
    target = k.to_run(("repeat",), "synthetic", 100)
    with pytest.raises((Clash, BadOption)) as e:
        k.run(target, rules[0], rules[1])
    return code, said, e.value


def test_a_cluster_s_jobs_take_no_timeout_whoever_asks(capsys):
    code, said, e = _refused(
        capsys, ["--cluster", "local:1", "--timeout", "5"], (PlanOptions(), Where("local:1", (), 5))
    )
    assert isinstance(e, Clash) and e.options == ("--timeout", "--cluster")
    assert code == 1 and said == f"kit: error: {e}"
    assert "a cluster's jobs have their own walltime" in said


def test_hosts_name_a_cluster_s_classes_whoever_asks(capsys):
    code, said, e = _refused(capsys, ["--hosts", "a,b"], (PlanOptions(), Where(hosts=("a", "b"))))
    assert isinstance(e, Clash) and code == 1 and said == f"kit: error: {e}"


def test_threads_are_held_to_this_machine_s_cores_whoever_asks(capsys):
    many = processes.cores() + 1
    with pytest.raises(SystemExit) as ended:
        main(["run", "--factor", "threads", "--n", "100", "--threads", str(many)])
    said = capsys.readouterr().err.strip().splitlines()[-1]
    k = kit.Kit()
    target = k.to_run(("threads",), "synthetic", 100)
    with pytest.raises(BadOption) as e:
        k.options(threads=(many,))
    assert ended.value.code == 2 and e.value.option == "--threads"
    assert f"argument --threads: {e.value}" in said
    # on a cluster the counts are its workers': planned, not refused here
    check_where(Where("local:1"), (many,))
    assert k.options(Where("local:1"), threads=(many,)).cores == 1
    del target


def test_the_store_is_opened_on_first_use_and_read_as_the_cli_reads_it(capsys, kit_home):
    k = kit.Kit()
    assert "(not opened)" in repr(k) and not kit_home.exists()  # the words are checked first
    with pytest.raises(NotFound) as e:
        k.subject()
    assert main(["budget"]) == 1
    assert capsys.readouterr().err.strip() == f"kit: error: {e.value}"
    assert k.runs().runs == () and str(kit_home) in repr(k)
