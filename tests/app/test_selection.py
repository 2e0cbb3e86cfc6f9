"""Commands without --dataset/--n use the dataset of the user's most recent runs; reading
commands and a `kit run` that fails before any run never store a new dataset."""

import pytest

from kit.cli import main
from kit.core.paths import subdir


def _stored():
    return sorted(p.name for p in subdir("datasets").glob("*.json"))


@pytest.mark.slow
def test_a_reading_command_never_makes_a_dataset(capsys):
    assert main(["run", "--factor", "repeat", "--n", "150", "--threads", "1"]) == 0
    capsys.readouterr()
    for cmd in (["budget"], ["advise"], ["verdicts"], ["runs"], ["amplify"]):
        assert main(cmd + ["--dataset", "synthetic", "--n", "777"]) == 1, cmd
        err = capsys.readouterr().err
        assert "no dataset synthetic at --n 777 (stored: synthetic-150)" in err, (cmd, err)
    assert main(["budget", "--n", "777"]) == 1
    assert "no dataset synthetic at --n 777" in capsys.readouterr().err
    assert _stored() == ["synthetic-150.json"]
    # the next run without --dataset/--n is on the same 150 proteins, and says so
    assert main(["run", "--factor", "repeat", "--threads", "1"]) == 0
    out = capsys.readouterr()
    assert "synthetic-150" in out.err and "as your most recent runs" in out.err
    assert "2 stored, 0 to run" in out.err and _stored() == ["synthetic-150.json"]
    assert main(["budget"]) == 0 and "synthetic-150" in capsys.readouterr().out


def test_a_run_that_fails_before_running_stores_no_dataset(capsys):
    with pytest.raises(SystemExit) as usage:  # a usage error, as every unknown stack's
        main(["run", "--factor", "seed", "--stack", "nosuch", "--n", "160"])
    assert usage.value.code == 2 and "unknown stack 'nosuch'" in capsys.readouterr().err
    from kit.envs.platforms import detect

    absent = [d for d in ("cuda", "mps") if detect().device_reason(d)]
    for device in absent:  # the issue's `--device cuda` on a machine without CUDA
        assert main(["run", "--factor", "torch-device", "--device", device, "--n", "170"]) == 1
        assert f"device {device} is not available here" in capsys.readouterr().err
    assert not subdir("datasets").exists() or _stored() == []


@pytest.mark.slow
def test_kit_runs_dataset_line_fits_80_columns(capsys, monkeypatch):
    """It was one line of 124 columns piped: fitted as the read commands' dataset line is."""
    assert main(["run", "--factor", "repeat", "--n", "150", "--threads", "1"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["run", "--factor", "repeat", "--threads", "1"]) == 0
    err = capsys.readouterr().err
    assert "synthetic-150" in err and "as your most recent runs" in " ".join(err.split())
    lines = err.splitlines()
    first = lines[: next(i for i, x in enumerate(lines) if "chooses" in x) + 1]
    assert len(first) >= 2 and all(len(x) <= 80 for x in first), first
