"""kit.cli: usage errors exit 2, user errors exit 1 with one line, JSON on stdout."""

import json

import pytest

from kit.cli import _int_list, main


@pytest.mark.parametrize("argv", [
    ["run", "--factor", "nope"],
    ["run", "--factor", "seed", "--threads", "a"],
    ["run", "--factor", "seed", "--n", "0"],
    ["run"],
    ["frobnicate"],
])
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_int_lists():
    assert _int_list("0-3") == (0, 1, 2, 3)
    assert _int_list("1,2,4") == (1, 2, 4)
    assert _int_list("1-2,8,2") == (1, 2, 8)


def test_empty_store_is_a_one_line_error(capsys):
    assert main(["budget"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kit: error: the store is empty") and err.count("\n") == 1
    assert main(["runs"]) == 0 and "no runs stored" in capsys.readouterr().out


def test_unknown_dataset_exits_1(capsys):
    assert main(["run", "--factor", "seed", "--dataset", "missing"]) == 1
    assert "no dataset 'missing'" in capsys.readouterr().err


def test_data_info_json(capsys):
    assert main(["data", "info", "synthetic", "--n", "120", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["rows"] == 120 and info["synthetic"] is True and len(info["sha256"]) == 64
