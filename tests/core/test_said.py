"""kit.core.said.translate: the one line a user reads for any exception, the CLI's and the TUI's."""

import argparse
import errno
import os
from pathlib import Path

import pytest

import kit.cli
from kit.core.errors import KitError, WrongAnswer
from kit.core.said import translate


def _raised(action) -> BaseException:
    try:
        action()
    except BaseException as e:  # noqa: BLE001 - the real exception, whatever it is
        return e
    raise AssertionError("it did not raise")


def test_a_real_missing_file_or_a_file_for_a_folder_is_one_line_naming_it(tmp_path):
    (tmp_path / "a-file").write_text("")
    missing = translate(_raised(lambda: (tmp_path / "gone").read_text()))
    assert (missing.text, missing.exit_code, missing.bug) == (
        f"No such file or directory: {tmp_path / 'gone'}",
        1,
        False,
    )
    assert missing.line == f"kit: error: {missing.text}"
    wrong = translate(_raised(lambda: (tmp_path / "a-file" / "x").write_text("")))
    assert wrong.text.startswith(f"Not a directory: {tmp_path / 'a-file' / 'x'} (a file is where")
    folder = translate(_raised(tmp_path.read_text))
    assert folder.text == f"Is a directory: {tmp_path} (a folder is where kit needs a file)"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_real_full_disk_names_where_to_free_space(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_HOME", str(tmp_path))

    def write():
        with open("/dev/full", "wb", buffering=0) as full:
            full.write(b"x")

    said = translate(_raised(write))  # a write that names no file: KIT_HOME's disk
    assert said.text.startswith("No space left on device; free space on ") and not said.bug
    assert "(where KIT_HOME and the temporary folder are)" in said.text
    named = translate(_raised(write), output="/dev/full")  # the CLI's output, named
    assert named.text.startswith("No space left on device (/dev/full); free space on /")


def test_errors_keep_their_exit_status_and_a_bug_names_its_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_HOME", str(tmp_path))
    assert translate(KitError("no such dataset")).line == "kit: error: no such dataset"
    assert translate(WrongAnswer("an id twice")).exit_code == 3
    stopped = translate(KeyboardInterrupt())
    assert (stopped.line, stopped.exit_code) == (
        "kit: interrupted; finished runs are stored, run the same command to resume",
        130,
    )
    memory = translate(_raised(lambda: bytearray(2**62)))  # a real MemoryError
    assert memory.text.startswith("out of memory: ") and not memory.bug
    bug = translate(_raised(lambda: {}["key"]))
    assert bug.bug and bug.line.startswith("kit: internal error: KeyError: 'key' (a bug in kit")
    log = bug.text.rsplit("the traceback is in ", 1)[1].rstrip(")")
    assert log.startswith(str(tmp_path / "logs")) and "KeyError" in Path(log).read_text()
    # an errno kit does not know as the machine's state stays a bug (its traceback kept)
    assert translate(OSError(errno.EBADF, "Bad file descriptor")).bug


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (lambda p: (p / "gone").read_text(), "kit: error: No such file or directory: {p}/gone"),
        (lambda p: bytearray(2**62), "kit: error: out of memory: "),
        (lambda p: {}["key"], "kit: internal error: KeyError: 'key' (a bug in kit"),
    ],
)
def test_the_cli_says_what_translate_says(tmp_path, monkeypatch, capsys, error, line):
    """A command whose work raises: its one line on stderr, exit 1, no traceback."""
    monkeypatch.setenv("KIT_HOME", str(tmp_path))

    def parser():
        ap = argparse.ArgumentParser(prog="kit")
        ap.set_defaults(func=lambda args: error(tmp_path))
        return ap

    monkeypatch.setattr(kit.cli, "parser", parser)
    assert kit.cli.main([]) == 1
    err = capsys.readouterr().err
    assert err.startswith(line.format(p=tmp_path)) and err.count("\n") == 1, err
