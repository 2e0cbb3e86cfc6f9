"""kit.core.atomic's rules for what kit writes. `--out`, one rule for every command (#37 item 7,
#43): a regular file or a folder is written (missing folders above it made); a symbolic link, a
FIFO or a device there is refused in one line and left as it was, never replaced by a regular
file nor opened. Reports, bundles and datasets get the mode the user's umask gives, not
mkstemp's 0600."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from places import ROOT, SUPPORT
from stored import budget_store

# each command that takes --out, and what it writes there: a file, or a folder of files
COMMANDS = {
    "tolerances": (["tolerances", "--format", "json", "--out"], "file"),
    "report": (["report", "--out"], "folder"),
    "export": (["export", "--out"], "file"),
}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """One cheap store with runs and pairs (a threads pair among them), shared by the tests."""
    tmp = tmp_path_factory.mktemp("out-rule")
    budget_store(tmp, home=tmp / "home")
    return tmp / "home"


def kit(home, *args):
    """`kit ARGS` in its own process: a FIFO opened by mistake would hang it, and the timeout
    fails the test instead of the session."""
    return subprocess.run(
        [sys.executable, "-m", "kit", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, KIT_HOME=str(home)),
    )


def refused(proc, path, words):
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "internal" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kit: error: cannot write"), proc.stderr
    assert str(path) in lines[0] and words in lines[0]


@pytest.fixture
def device(tmp_path):
    """A character device like /dev/null: made beside the test as root (a kit that replaced it
    must never replace the machine's own /dev/null), else /dev/null itself (which a non-root
    kit cannot replace)."""
    if os.geteuid() != 0:
        return "/dev/null"
    path = tmp_path / "null"
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_a_symbolic_link_is_refused_and_left_a_link(home, tmp_path, command):
    target = tmp_path / "target.txt"
    target.write_text("mine")
    link = tmp_path / "link"
    link.symlink_to(target)
    args, _ = COMMANDS[command]
    refused(kit(home, *args, link), link, "symbolic link")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "mine"


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_a_fifo_is_refused_never_opened(home, tmp_path, command):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    args, _ = COMMANDS[command]
    refused(kit(home, *args, fifo), fifo, "FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_a_device_is_refused_and_stays_a_device(home, device, command):
    args, _ = COMMANDS[command]
    refused(kit(home, *args, device), device, "character device")
    assert stat.S_ISCHR(os.lstat(device).st_mode)


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_missing_folders_above_it_are_made_by_every_command(home, tmp_path, command):
    args, kind = COMMANDS[command]
    out = tmp_path / "a" / "b" / ("report" if kind == "folder" else "out.file")
    proc = kit(home, *args, out)
    assert proc.returncode == 0, proc.stderr
    assert (out / "report.md").is_file() if kind == "folder" else out.is_file()


@pytest.mark.slow
def test_a_link_inside_the_report_folder_is_refused_and_left(home, tmp_path):
    folder = tmp_path / "rep"
    folder.mkdir()
    target = tmp_path / "elsewhere.md"
    target.write_text("mine")
    (folder / "report.md").symlink_to(target)
    refused(kit(home, "report", "--out", folder), folder / "report.md", "symbolic link")
    assert (folder / "report.md").is_symlink() and target.read_text() == "mine"
    # a reviewer's: refused only at report.md, the plots before it were written already
    assert [p.name for p in folder.iterdir()] == ["report.md"]


@pytest.mark.slow
def test_a_file_where_a_folder_would_go_is_said_before_any_work(home, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for command in ("tolerances", "export"):
        proc = kit(home, *COMMANDS[command][0], blocker / "inside" / "out.file")
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1
        assert (
            f"cannot make the folder {blocker / 'inside'}: {blocker} is not a folder" in proc.stderr
        )
    assert blocker.read_text() == "not a folder"


@pytest.mark.slow
def test_a_link_at_the_last_file_of_a_report_refuses_before_the_first_is_written(home, tmp_path):
    """A reviewer's: the refusal came at the file it met, after the plots and report.md before
    it were written; every name is checked first now."""
    folder = tmp_path / "rep"
    folder.mkdir()
    (folder / "report.html").symlink_to(tmp_path / "elsewhere.html")
    refused(kit(home, "report", "--out", folder), folder / "report.html", "symbolic link")
    assert [p.name for p in folder.iterdir()] == ["report.html"]


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_an_existing_file_and_folder_each_meet_the_one_rule(home, tmp_path, command):
    """A FILE command replaces a file whole and refuses a folder; a FOLDER command writes into
    a folder (what else it holds is left) and refuses a file: each in one line, before any
    work, leaving what was there."""
    args, kind = COMMANDS[command]
    mine = tmp_path / "mine.txt"
    mine.write_text("mine")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "notes.txt").write_text("the user's")
    if kind == "file":
        assert kit(home, *args, mine).returncode == 0 and mine.read_bytes() != b"mine"
        refused(
            kit(home, *args, folder), folder, f"it is a folder: give a file's name, e.g. {folder}/"
        )
    else:
        assert kit(home, *args, folder).returncode == 0 and (folder / "report.md").is_file()
        refused(kit(home, *args, mine), mine, "it is a file: give a folder")
        assert mine.read_text() == "mine"
    assert (folder / "notes.txt").read_text() == "the user's"


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_s_name_or_an_empty_out_is_refused_by_every_command(home, tmp_path, command):
    """#43: `tolerances --out new/` wrote a file named new where an existing new/ was refused,
    and an empty --out (an unset shell variable) printed to the terminal, refused, or wrote a
    report into the current folder, by command."""
    args, kind = COMMANDS[command]
    empty = kit(home, *args, "")
    # a usage error (exit 2), as every empty path typed is (kit.cli.common.path)
    assert (
        empty.returncode == 2
        and empty.stderr.strip()
        == (
            f"kit {args[0]}: error: argument --out: an empty path names no file; give a path (see "
            f"`kit {args[0]} --help`)"
        )
        and not empty.stdout
    )
    if kind == "file":
        proc = kit(home, *args, f"{tmp_path / 'new'}/")
        refused(proc, f"{tmp_path / 'new'}/", "it is a folder's name (it ends in a slash)")
        assert not (tmp_path / "new").exists()


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_that_fails_before_writing_makes_no_folder(home, tmp_path, command):
    """`kit report --out DIR` made DIR and then failed (a FIFO or a missing file as --pipeline,
    a mistyped dataset, an empty store), leaving an empty folder; tolerances and export made
    nothing: now none of them makes a folder it has nothing to write into."""
    args, kind = COMMANDS[command]
    fifo = tmp_path / "f.py"
    os.mkfifo(fifo)
    out = tmp_path / "new" / ("report" if kind == "folder" else "out.file")
    for where, more in (
        (home, ["--pipeline", fifo]),
        (home, ["--dataset", "synthetik"]),
        (home, ["--pipeline", tmp_path / "nonexist.py"]),
        (tmp_path / "empty-home", []),
    ):
        proc = kit(where, *args, out, *more)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, (more, proc.stderr)
        assert proc.stderr.count("\n") == 1, proc.stderr
        assert not (tmp_path / "new").exists(), (more, proc.stderr)


# -- the mode of what is written ------------------------------------------------------------------

_WRITE = """
import sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from kit.app.bundle import export
from kit.data.dataset import load_dataset, stored_datasets
from kit.core.paths import subdir
from kit.app.verbs import report
from kit.core.subject import of_dataset
from kit.views.report import write
from stored import budget_store
out = Path({out!r})
st = budget_store(out, home=out / "home")
write(report(st, of_dataset("d" * 64, dict())), out / "rep")
export(st, [r.id for r in st.runs()], out / "lab.kit", arrays=True)
load_dataset("synthetic", 120)
print(subdir("datasets") / "synthetic-120.json")
"""


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_follow_the_umask(tmp_path, mask, mode):
    code = _WRITE.format(tests=str(SUPPORT), out=str(tmp_path))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KIT_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(mask),
    )
    assert proc.returncode == 0, proc.stderr
    dataset = Path(proc.stdout.strip().splitlines()[-1])
    files = [
        tmp_path / "rep" / "report.md",
        tmp_path / "rep" / "report.html",
        tmp_path / "lab.kit",
        dataset,
    ]
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == mode, (f, oct(f.stat().st_mode))
