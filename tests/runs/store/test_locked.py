"""A store this user cannot write is read: runs, budget, verdicts, advice computed without caching,
nothing written; a command that writes says so in one line (issue 26, item 7).

The condition is made for real: the store's folders lose their write bits (chmod -R a-w), and
the command runs as a user the kernel holds to them. As root (whom file modes do not stop) the
command runs in a child that has become `nobody` (setuid), after a warm-up on a writable copy
has imported everything (nobody cannot read this interpreter's standard library under /root).
"""

import contextlib
import io
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from stored import every_kind_store

from kit.cli import main


def as_reader(home: Path, argv: list, warm: Path) -> tuple:
    """(exit status, stdout and stderr) of `kit ARGV` on ``home`` by a user who cannot write it."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        os.environ["KIT_HOME"] = str(warm)
        main(argv)  # imports all the command needs while the interpreter is readable
    os.environ["KIT_HOME"] = str(home)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 70
        try:
            os.close(r)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
                try:
                    code = main(argv)
                except SystemExit as e:
                    code = e.code
            os.write(w, buf.getvalue().encode())
        finally:
            os._exit(code if isinstance(code, int) else 70)
    os.close(w)
    out = b""
    while chunk := os.read(r, 1 << 16):
        out += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode()


def files(root: Path) -> dict:
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


@pytest.fixture
def read_only(tmp_path, monkeypatch):
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwuid(65534)
        except (ImportError, KeyError):
            pytest.skip("root without a `nobody` user: file modes cannot be made to hold")
    top = Path(
        tempfile.mkdtemp(prefix="kit-ro-")
    )  # not under pytest's 0700 folder: nobody reads it
    os.chmod(top, 0o755)
    home, warm = top / "home", top / "warm"
    every_kind_store(tmp_path, home=home).close()
    shutil.copytree(home, warm)
    for p in [home, *home.rglob("*")]:
        mode = p.stat().st_mode
        os.chmod(
            p,
            (mode | stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH | (0o111 if p.is_dir() else 0))
            & ~0o222,
        )  # readable by all, writable by none
    monkeypatch.setenv("KIT_HOME", str(home))
    yield home, warm
    for p in [home, *home.rglob("*")]:
        os.chmod(p, p.stat().st_mode | stat.S_IWUSR)
    shutil.rmtree(top)


@pytest.mark.parametrize(
    "argv",
    [["runs"], ["budget"], ["budget", "--factor", "seed"], ["verdicts"], ["advise"], ["amplify"]],
    ids=" ".join,
)
def test_a_read_only_store_is_read_and_left_as_it_was(read_only, argv):
    home, warm = read_only
    before = files(home)
    code, out = as_reader(home, argv, warm)
    assert code == 0, out
    assert "not writable" not in out and "Traceback" not in out
    assert files(home) == before  # nothing cached, no WAL, no host.json: not one byte written


@pytest.mark.slow
def test_a_command_that_writes_says_why_in_one_line(read_only):
    home, warm = read_only
    code, out = as_reader(home, ["stacks", "build", "np1-sk152"], warm)
    assert code == 1 and len(out.strip().splitlines()) == 1, out
    assert "kit: error:" in out and "internal" not in out and "KIT_HOME" in out


def test_store_check_of_a_read_only_store_reads_it_and_writes_nothing(read_only):
    """`kit store check` only reads (issue 54): it opened the store for writing, and on a store
    this user cannot write ended at its lock file (made read-write: "cannot open the store's
    lock file ...: Permission denied"), as on a full disk at SQLite's first write."""
    home, warm = read_only
    before = files(home)
    code, out = as_reader(home, ["store", "check"], warm)
    assert code == 0, out
    assert "every array and dataset file is what its runs recorded" in " ".join(out.split())
    assert files(home) == before
