"""kit.cli: every bad input gets one line and the right exit status, never a traceback.

Usage errors exit 2 with one line that names where the fix is; other errors exit 1 with one
line; a closed pipe ends a command quietly; a bug prints one line and keeps the traceback in a
file. The table below holds every bad input found by trying the kit as a newcomer would.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from stored import budget_store
from usage import usage_error

from kit.cli import main
from kit.cli.common import int_list as _int_list
from kit.core.numbers import fmt

KIT = str(Path(sys.executable).with_name("kit"))
CORES = os.cpu_count() or 1


@pytest.mark.parametrize(
    "argv, says",
    [
        (["run", "--factor", "nope"], "unknown factor 'nope'"),
        (["run", "--factor", "thread"], "did you mean threads?"),
        (["run", "--factor", "seed", "--threads", "a"], "expected numbers like 0-9"),
        (["run", "--factor", "threads", "--threads", "0"], "0 is not allowed here"),
        (
            ["run", "--factor", "threads", "--threads", str(CORES + 62)],
            "would measure oversubscription",
        ),
        (["run", "--factor", "svd-iters", "--iters", "0"], "0 is not allowed here"),
        (["run", "--factor", "seed", "--seeds", "0-99999999"], "at most 1,000 in one list"),
        (["run", "--factor", "seed", "--n", "0"], "expected a positive integer"),
        (["run", "--factor", "seed", "--eps", "x"], "expected non-negative numbers"),
        (["tui", "--threads", "0"], "0 is not allowed here"),
        (["run"], "the following arguments are required: --factor"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["run", "--factor", "host", "--hosts", "a"], "name at least two"),
        (["data", "import", "x.tsv"], "the following arguments are required: --name"),
        # every command's --cluster through the one parser, before anything starts
        (["run", "--factor", "seed", "--cluster", "k8s"], "unknown cluster 'k8s'"),
        (
            ["run", "--factor", "seed", "--cluster", "tcp://localhost"],
            "names no port: use local[:N]",
        ),
        (["run", "--factor", "seed", "--cluster", "tcp://"], "'tcp://' names no host and port"),
        (["run", "--factor", "seed", "--cluster", "tcp://localhost:abc"], "has port 'abc'"),
        (["run", "--factor", "seed", "--cluster", "tcp://localhost:99999"], "from 1 to 65535"),
        (["run", "--factor", "seed", "--cluster", "tls://localhost:1"], "tls:// is not supported"),
        (
            [
                "run",
                "--factor",
                "seed",
                "--n",
                "120",
                "--threads",
                "1",
                "--seeds",
                "0-300",
                "--cluster",
                "",
            ],
            "argument --cluster: '' names no cluster",
        ),
        (["run", "--factor", "seed", "--cluster", "LOCAL:2"], "did you mean local:2?"),
        (["explain", "seed", "--cluster", ""], "'' names no cluster"),
        (["cluster", "show", "--cluster", "nope"], "unknown cluster 'nope'"),
        (["cluster", "check", "--cluster", "local:0"], "asks for 0 workers; the smallest is 1"),
        # an empty path is no path, for every command that takes one (it read as ".", and `kit run
        # --pipeline ""` ran kit's own pipeline)
        (["run", "--pipeline", "", "--factor", "repeat"], "argument --pipeline: an empty path"),
        (["import", ""], "argument file: an empty path"),
        (["compare", ""], "argument file: an empty path"),
        (["compare", "x.kit", "--pipeline", " "], "argument --pipeline: an empty path"),
        (["export", "--out", ""], "argument --out: an empty path"),
        (["report", "--out", ""], "argument --out: an empty path"),
        (["tolerances", "--out", ""], "argument --out: an empty path"),
        (["budget", "--pipeline", ""], "argument --pipeline: an empty path"),
        (["doctor", "--pipeline", ""], "argument --pipeline: an empty path"),
        (["data", "import", "", "--name", "x"], "argument file: an empty path"),
        (["stacks", "add", "x", ""], "argument python: an empty path"),
        # nothing typed is accepted and ignored
        (["doctor", "--timeout", "5"], "argument --timeout: bounds the runs of a --pipeline file"),
        (["--version", "extra"], "unrecognized arguments: extra"),
        (
            ["run", "--factor", "repeat", "--torch-stack", "torch-linux-cpx"],
            "unknown stack 'torch-linux-cpx': did you mean torch-linux-cpu",
        ),
    ],
    ids=lambda x: x if isinstance(x, str) else " ".join(x),
)
def test_usage_errors_exit_2_with_one_line(argv, says, capsys):
    err = usage_error(argv, capsys)
    assert says in err and err.count("\n") == 1 and "--help" in err


@pytest.mark.parametrize(
    "argv, says",
    [
        # a word the command does not take: its own help, not `kit --help` (issue 43)
        (
            ["verdicts", "--factor", "sed"],
            "kit verdicts: error: unrecognized arguments: --factor sed",
        ),
        (
            ["tolerances", "--pipeline", "X", "--timeout", "5"],
            "kit tolerances: error: unrecognized arguments: --timeout 5",
        ),
        (
            ["data", "info", "synthetic", "--bogus"],
            "kit data info: error: unrecognized arguments: --bogus",
        ),
        # an unknown stack, one rule whichever command names it: `kit run --stack` exited 1 as
        # "kit: error: ..." where `kit runs --stack` exited 2 as a usage error
        (
            ["run", "--factor", "threads", "--stack", "np2-sk19"],
            "kit run: error: argument --stack: unknown stack 'np2-sk19': did you mean np2-sk191?",
        ),
        (
            ["runs", "--stack", "hots"],
            "kit runs: error: argument --stack: unknown stack 'hots': did you mean host?",
        ),
        (
            ["stacks", "build", "hots"],
            "kit stacks build: error: unknown stack 'hots': did you mean host?",
        ),
        (
            ["run", "--factor", "seed", "--torch-stack", "zzzzzz"],
            "kit run: error: argument --torch-stack: unknown stack 'zzzzzz'; `kit stacks` lists them",
        ),
    ],
    ids=lambda x: x if isinstance(x, str) else " ".join(x),
)
def test_a_usage_error_points_at_the_command_s_own_help(argv, says, capsys):
    err = usage_error(argv, capsys)
    assert err == f"{says} (see `{says.split(':')[0]} --help`)\n", err


@pytest.mark.slow
def test_version_prints_one_line_and_exits_0():
    from kit.core.version import __version__

    r = subprocess.run([KIT, "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == f"kit {__version__}\n" and not r.stderr


@pytest.mark.slow
def test_store_help_names_the_action_there_is(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    line = next(x for x in capsys.readouterr().out.splitlines() if x.split()[:1] == ["store"])
    assert "check" in line and "verify" not in line, line
    for action in ("check", "verify"):  # what the help says, and what it once said
        r = subprocess.run(
            [KIT, "store", action],
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(os.environ, KIT_HOME=str(tmp_path)),
        )
        assert r.returncode == 0 and "invalid choice" not in r.stderr, r.stderr


def test_int_lists():
    assert _int_list("0-3") == (0, 1, 2, 3)
    assert _int_list("1,2,4") == (1, 2, 4)
    assert _int_list("1-2,8,2") == (1, 2, 8)


def test_empty_store_is_a_one_line_error(capsys):
    assert main(["budget"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kit: error: the store is empty") and err.count("\n") == 1
    assert main(["runs"]) == 0 and "no runs stored" in capsys.readouterr().out
    # a command about one factor names the run that makes its pairs, in one message: `kit
    # explain seed` said "--factor repeat", then, once that was run, "--factor seed" (#43)
    assert main(["explain", "seed"]) == 1
    assert "run `kit run --factor seed` first" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, says",
    [
        (["run", "--factor", "seed", "--dataset", "missing"], "no dataset 'missing'"),
        (["compare", "/nonexistent/lab.kit"], "no bundle at /nonexistent/lab.kit"),
        (["import", "/nonexistent/lab.kit"], "no bundle at /nonexistent/lab.kit"),
        (["data", "import", "/nonexistent.tsv", "--name", "x"], "cannot read /nonexistent.tsv"),
        (["data", "import", "/dev/zero", "--name", "x"], "is not a regular file"),
        (["data", "info", "nothing-here"], "no dataset 'nothing-here'"),
        # one check and one line for a dataset's name, read or made (#43: "invalid dataset name")
        (["data", "info", ""], "dataset name '': use letters, digits"),
        # the exact command that makes the built-in set at a size not made yet (#43)
        (
            ["budget", "--dataset", "synthetic", "--n", "3000"],
            "`kit run --factor repeat --dataset synthetic --n 3000` makes it",
        ),
        (["data", "import", "/etc/hostname", "--name", ""], "dataset name '': use letters, digits"),
        (["run", "--factor", "host", "--hosts", "a,b"], "--hosts names node classes of a cluster"),
        (["run", "--factor", "host", "--n", "120"], "name two node classes"),
        (["run", "--factor", "seed", "--n", "300000"], "generated up to 200,000"),
        (
            ["run", "--factor", "seed", "--n", "120", "--threads", "1", "--seeds", "0-300"],
            "needs --yes when there is no terminal",
        ),
    ],
)
def test_errors_exit_1_with_one_line(argv, says, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err  # `kit run` may have said what it planned before refusing
    last = err.splitlines()[-1]
    assert says in last and last.startswith("kit: error:") and "Traceback" not in err


def test_a_truncated_bundle_is_one_line(tmp_path, kit_home, capsys):
    budget_store(tmp_path, home=kit_home)
    assert main(["export", "--out", str(tmp_path / "lab.kit"), "--arrays"]) == 0
    data = (tmp_path / "lab.kit").read_bytes()
    cut = tmp_path / "t.kit"
    cut.write_bytes(data[: len(data) // 2])  # `head -c` of a bundle: the gzip stream ends early
    capsys.readouterr()
    assert main(["compare", str(cut)]) == 1
    err = capsys.readouterr().err
    assert "is damaged, cut short or not a kit bundle" in err and err.count("\n") == 1


def test_data_info_json(capsys):
    assert main(["data", "info", "synthetic", "--n", "120", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["rows"] == 120 and info["synthetic"] is True and len(info["sha256"]) == 64


def test_data_info_text_rounds_floats_as_kit_does_and_json_keeps_them(capsys):
    assert main(["data", "info", "synthetic", "--n", "120", "--json"]) == 0
    rate = json.loads(capsys.readouterr().out)["label_rate"]
    assert main(["data", "info", "synthetic", "--n", "120"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("label_rate"))
    assert line.split() == ["label_rate", fmt(rate)] and len(fmt(rate)) <= 6, line


def test_data_list_takes_json(capsys):
    assert main(["data", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["builtin"] == ["synthetic"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [["budget"], ["runs"], ["budget", "--json"], ["runs", "--json"], ["verdicts"], ["advise"]],
)
def test_a_closed_pipe_ends_the_command_quietly(tmp_path, kit_home, args):
    budget_store(tmp_path, home=kit_home)
    proc = subprocess.Popen(
        [KIT, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, KIT_HOME=str(kit_home)),
    )
    proc.stdout.close()  # `| head -0`: the reader is gone before the first line
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "Error" not in err and "Traceback" not in err and proc.returncode in (0, 141)
    assert err == "" or err.startswith("dataset ")  # JSON output names its dataset on stderr


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["budget", "--csv"], ["runs"]])
def test_a_full_disk_under_the_output_is_one_line(tmp_path, kit_home, args):
    budget_store(tmp_path, home=kit_home)
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [KIT, *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, KIT_HOME=str(kit_home)),
            timeout=120,
        )
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert last.startswith("kit: error: No space left on device") and "internal" not in proc.stderr


def _own_mounts() -> bool:
    """Whether this user may mount in a namespace of its own (unshare -rm: no root needed)."""
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0
    except OSError:
        return False


@pytest.mark.slow  # it starts kit (under unshare, which the fast tier's guard does not see)
@pytest.mark.skipif(not _own_mounts(), reason="needs unshare -rm (mounts of its own)")
def test_a_full_or_read_only_home_is_one_line_naming_it(tmp_path):
    """KIT_HOME on a real full disk (a 16 KiB tmpfs) and on a real read-only one, mounted in a
    namespace of the test's own: one line naming where, exit 1, never "a bug in kit". (As root
    a chmod 0o555 stops nothing: a read-only file system stops root too.)"""
    disk = tmp_path / "disk"
    disk.mkdir()
    script = f"""
    mount -t tmpfs -o size=16k none "$1"
    KIT_HOME="$1/home" {KIT} runs; echo "exit $?" >&2
    umount "$1"; mount -t tmpfs -o size=1m,ro none "$1"
    KIT_HOME="$1/home" {KIT} runs; echo "exit $?" >&2
    """
    proc = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, "sh", str(disk)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    home = disk / "home"
    assert proc.stderr.splitlines() == [
        f"kit: error: cannot write {home / 'store.sqlite'}: No space left on device; nothing "
        f"was changed: free space on {disk} and run the same command again",
        "exit 1",
        f"kit: error: KIT_HOME {home} cannot be used: Read-only file system",
        "exit 1",
    ], proc.stderr


@pytest.mark.parametrize(
    "args", [["report", "--out"], ["export", "--out"], ["tolerances", "--out"]]
)
def test_an_output_that_cannot_be_made_is_one_line(tmp_path, kit_home, capsys, args):
    budget_store(tmp_path, home=kit_home)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert main([*args, str(blocker / "inside" / "out.tar")]) == 1
    err = capsys.readouterr().err
    # a report, a bundle and tolerances alike make the folders above them and say why they
    # cannot in the same words (one --out rule, #43: the report said "Not a directory")
    assert err.startswith("kit: error: cannot make the folder") and err.count("\n") == 1
    assert err.rstrip().endswith(f"{blocker} is not a folder"), err


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_an_output_where_no_file_can_be_made_is_refused_before_the_work(tmp_path, kit_home, capsys):
    """`kit export --out /proc/x.kit` said "exporting 73 runs..." and then failed (#43)."""
    budget_store(tmp_path, home=kit_home)
    assert main(["export", "--out", "/proc/x.kit"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "kit: error: cannot write into /proc: it takes no new files or folders (a "
        "virtual file system such as /proc or /sys)\n"
    ), err
    # a folder under it: the same reason, never "No such file or directory" for one that is there
    assert main(["report", "--out", "/proc/x"]) == 1
    assert capsys.readouterr().err == (
        "kit: error: cannot make the folder /proc/x: /proc takes "
        "no new files or folders (a virtual file system such as "
        "/proc or /sys)\n"
    )


def test_export_into_a_folder_that_does_not_exist_makes_it_as_report_does(
    tmp_path, kit_home, capsys
):
    budget_store(tmp_path, home=kit_home)
    out = tmp_path / "no" / "such" / "x.kit"
    assert main(["export", "--out", str(out)]) == 0
    assert out.is_file() and f"wrote {out}" in capsys.readouterr().out


def test_an_output_of_the_wrong_kind_is_one_line_and_writes_nothing(tmp_path, kit_home, capsys):
    budget_store(tmp_path, home=kit_home)
    folder = tmp_path / "out"
    folder.mkdir()
    assert main(["export", "--out", str(folder)]) == 1  # a folder where a bundle file goes
    err = capsys.readouterr().err
    assert err == (
        f"kit: error: cannot write {folder}: it is a folder: give a file's name, "
        f"e.g. {folder / 'lab.kit'}\n"
    ) and not any(folder.iterdir())
    a_file = tmp_path / "report.txt"
    a_file.write_text("mine")
    assert main(["report", "--out", str(a_file)]) == 1  # a file where the report's folder goes
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "it is a file: give a folder" in err
    assert a_file.read_text() == "mine"
    assert main(["data", "import", str(folder), "--name", "x"]) == 1  # a folder as the proteins
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a regular file" in err and "internal" not in err


@pytest.mark.parametrize(
    "fmt, example",
    [
        ("text", "tolerances.txt"),
        ("json", "tolerances.json"),
        ("pytest-regressions", "tolerances.yml"),
        ("numpy", "tolerances.py"),
    ],
)
def test_a_folder_as_tolerances_out_is_refused_with_a_file_of_its_format(
    tmp_path, kit_home, capsys, fmt, example
):
    """The example named a .py whatever the format: a YAML file for pytest-regressions."""
    assert main(["tolerances", "--format", fmt, "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        f"kit: error: cannot write {tmp_path}: it is a folder: "
        f"give a file's name, e.g. {tmp_path / example}\n"
    )


def test_an_unknown_factor_is_named_with_the_closest(tmp_path, kit_home, capsys):
    # the same usage error (exit 2) as `kit run --factor`, on a store that holds every pair
    budget_store(tmp_path, home=kit_home)
    with pytest.raises(SystemExit) as usage:
        main(["budget", "--factor", "sed"])
    err = capsys.readouterr().err
    assert usage.value.code == 2
    assert err.strip() == (
        "kit budget: error: argument --factor: unknown factor 'sed': did you mean "
        "seed? (see `kit budget --help`)"
    )
    with pytest.raises(SystemExit) as usage:
        main(["budget", "--factor", "bogus"])
    err = capsys.readouterr().err
    assert (
        usage.value.code == 2
        and "unknown factor 'bogus'; choose from repeat, " in err
        and "no pairs" not in err
    )
    assert main(["budget", "--factor", "svd-iters"]) == 1  # a factor, none of its pairs stored
    assert "no pairs of factor 'svd-iters'" in capsys.readouterr().err


def test_a_bug_prints_one_line_and_keeps_the_traceback(monkeypatch, capsys, kit_home):
    import kit.views.tables as tables

    def broken(*a, **k):
        raise RuntimeError("something kit did not expect")

    monkeypatch.setattr(tables, "runs_text", broken)
    budget_store(kit_home.parent, home=kit_home)
    assert main(["runs"]) == 1
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1 and "internal error: RuntimeError: something kit did not expect" in err
    )
    log = Path(err.split("the traceback is in ")[1].rstrip(")\n"))
    assert "Traceback" in log.read_text() and "broken" in log.read_text()


def test_read_commands_say_which_dataset_and_why(tmp_path, kit_home, capsys):
    """The dataset shown by default is the most recent run's, and every output says so."""
    from kit.data import load_dataset

    budget_store(tmp_path, dataset=load_dataset("synthetic", 120), home=kit_home)
    for cmd in (["budget"], ["verdicts"], ["advise"], ["amplify"]):
        assert main(cmd) == 0
        first = capsys.readouterr().out.splitlines()[0]
        assert (
            first.startswith("dataset synthetic-120 [SYNTHETIC]") and "most recent run's" in first
        )
    assert main(["budget", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["dataset"]["rows"] == 120 and "most recent run's" in out.err
    # --n without --dataset means the most recent run's dataset at that size; a reading command
    # never makes one: a size never run is said, with the ones stored
    assert main(["budget", "--n", "150"]) == 1
    err = capsys.readouterr().err
    assert "no dataset synthetic at --n 150 (stored: synthetic-120)" in err
    from kit.data.dataset import stored_datasets

    assert not [d for d in stored_datasets() if d.endswith("-150")]


def test_an_unusable_kit_home_is_one_line(tmp_path, monkeypatch, capsys):
    afile = tmp_path / "a-file"
    afile.write_text("not a folder")
    for home in (afile, afile / "below"):
        monkeypatch.setenv("KIT_HOME", str(home))
        assert main(["runs"]) == 1
        err = capsys.readouterr().err
        assert (
            err.startswith(f"kit: error: KIT_HOME {home} cannot be used") and err.count("\n") == 1
        )


def test_the_tui_opens_on_the_most_recent_runs_dataset(tmp_path, monkeypatch):
    """`kit run --n 300` then `kit tui`: the Budget tab shows those runs, as `kit budget` does."""
    from kit.app.selection import opening_dataset
    from kit.data.dataset import load_dataset
    from kit.runs.store import Store

    monkeypatch.setenv("KIT_HOME", str(tmp_path))
    store = Store()
    assert opening_dataset(store, 1000) == ("synthetic", 1000)  # nothing stored yet
    store.note_dataset(load_dataset("synthetic", 300).summary())
    from kit.core.spec import RunSpec

    run = RunSpec(dataset=load_dataset("synthetic", 300).sha256, stack="host", stack_id="s")
    store.db.execute(
        "INSERT INTO runs VALUES (?,?,?,?,?,?,?)",  # a row whose spec is its id's
        (run.run_id, run.to_json(), run.dataset, "host", "now", "{}", "dataset"),
    )
    assert opening_dataset(store, 1000) == ("synthetic", 300)


def test_homology_without_a_clustering_says_how_to_make_one(tmp_path, kit_home, capsys):
    """A reader never runs MMseqs2: without a stored clustering `kit homology` names the
    command that makes one, for the very dataset it shows, and exits 1."""
    from kit.data import load_dataset

    budget_store(tmp_path, dataset=load_dataset("synthetic", 150, save=False), home=kit_home)
    assert main(["homology"]) == 1
    err = capsys.readouterr().err
    assert (
        "no homology clustering of this dataset yet: `kit data homology synthetic --n 150`" in err
    )
    assert err.count("\n") == 1
    assert main(["homology", "--identity", "0.5"]) == 1
    assert "at --identity 0.5 yet" in capsys.readouterr().err
    assert main(["budget", "--json"]) == 0
    assert "homology" not in json.loads(capsys.readouterr().out)  # nothing changes without one


@pytest.mark.parametrize(
    "args", [["data", "info", "synthetic", "--n", "130"], ["data", "verify", "synthetic"]]
)
def test_data_reading_commands_store_no_dataset(kit_home, capsys, args):
    """`kit data info synthetic --n N` generated and stored synthetic-N: a reading command
    shows the built-in set (made in memory) and leaves the datasets folder as it was."""
    from kit.data.dataset import stored_datasets

    before = stored_datasets()
    assert main(args) == 0
    assert stored_datasets() == before


def test_run_without_a_terminal_builds_no_stack_unasked(kit_home, capsys):
    """`kit run --factor sklearn` in a script built ~1 GB of stacks without a word; like `kit
    compare` it names them and their size, and without a terminal refuses unless --yes."""
    assert main(["run", "--factor", "sklearn", "--n", "120"]) == 1
    err = capsys.readouterr().err
    assert "needs stacks that are not built yet: " in err and "np1-sk152 (~" in err, err
    assert "without a terminal to ask: add --yes" in err and "Traceback" not in err
    assert not (kit_home / "stacks").exists() or not any((kit_home / "stacks").iterdir())
    from kit.data.dataset import stored_datasets

    assert stored_datasets() == []  # a plan refused stores no dataset either


def test_a_library_scan_asked_for_and_not_made_is_a_failure(tmp_path, kit_home, capsys):
    """`kit explain seed --library numpy A B` explained, scanned nothing and exited 0 (#43):
    what was asked was not done."""
    budget_store(tmp_path, home=kit_home)
    assert main(["explain", "seed", "--library", "numpy", "1.26.0", "1.26.4"]) == 1
    err = capsys.readouterr().err
    assert "--library numpy 1.26.0 1.26.4: no pair of seed was scanned" in err
