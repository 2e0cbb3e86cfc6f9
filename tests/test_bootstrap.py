"""bootstrap.sh puts `kit` on the user's PATH as uv and pipx do, without touching anything else."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def link(home, path="/usr/bin:/bin", shell="/bin/bash"):
    env = {"HOME": str(home), "PATH": path, "SHELL": shell}
    return subprocess.run(["bash", str(ROOT / "bootstrap.sh"), "--only-link"], env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_kit_is_linked_into_the_users_bin_with_a_path_hint(tmp_path):
    proc = link(tmp_path)
    assert proc.returncode == 0, proc.stderr
    kit = tmp_path / ".local" / "bin" / "kit"
    assert kit.is_symlink() and kit.resolve() == (ROOT / ".venv" / "bin" / "kit").resolve()
    assert "is not on your PATH" in proc.stdout
    assert """echo 'export PATH="$HOME/.local/bin:$PATH"' >> ~/.bashrc""" in proc.stdout
    assert """echo 'export PATH="$HOME/.local/bin:$PATH"' >> ~/.profile""" in proc.stdout
    assert f"type {kit}" in proc.stdout
    again = link(tmp_path, path=f"{tmp_path / '.local' / 'bin'}:/usr/bin:/bin")
    assert again.returncode == 0 and "not on your PATH" not in again.stdout
    out = subprocess.run([str(kit), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "usage: kit" in out.stdout


def _follow(home, stdout):
    """Run the printed lines verbatim, as the user pastes them, in the user's home."""
    lines = [x.strip() for x in stdout.splitlines() if x.startswith("    echo ")]
    assert lines, stdout
    for line in lines:
        subprocess.run(["bash", "-c", line], env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
                       check=True, timeout=30)


def _found(home, flags):
    return subprocess.run(["env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin", "bash", flags,
                           "command -v kit"], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("existing", [None, ".bash_profile", ".bash_login", ".profile"])
def test_following_the_bash_lines_finds_kit_in_a_login_and_an_interactive_shell(tmp_path,
                                                                                 existing):
    """A login shell reads ~/.bash_profile, else ~/.bash_login, else ~/.profile, never ~/.bashrc
    (the line once went only there: on an empty home `bash -l` did not find kit)."""
    if existing:
        (tmp_path / existing).write_text("# the user's own\n")
    proc = link(tmp_path)
    assert proc.returncode == 0, proc.stderr
    _follow(tmp_path, proc.stdout)
    kit = str(tmp_path / ".local" / "bin" / "kit")
    assert _found(tmp_path, "-lc").stdout.strip() == kit  # a new terminal on macOS, ssh
    assert _found(tmp_path, "-ic").stdout.strip() == kit  # another terminal's bash
    if existing:
        assert (tmp_path / existing).read_text().startswith("# the user's own\n")


def test_someone_elses_kit_is_left_alone(tmp_path):
    bin_ = tmp_path / ".local" / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "kit").write_text("#!/bin/sh\necho another kit\n")
    proc = link(tmp_path)
    assert proc.returncode == 0 and "left as it is" in proc.stderr
    assert (bin_ / "kit").read_text().endswith("another kit\n")
    assert os.access(ROOT / ".venv" / "bin" / "kit", os.X_OK)


def test_the_path_hint_is_the_users_shells_line(tmp_path):
    """zsh and fish get their own line; a shell that cannot be asked falls back to the PATH."""
    zsh = link(tmp_path, shell="/nonexistent/zsh")
    assert """echo 'export PATH="$HOME/.local/bin:$PATH"' >> ~/.zshrc""" in zsh.stdout
    assert """echo 'export PATH="$HOME/.local/bin:$PATH"' >> ~/.zprofile""" in zsh.stdout
    fish = link(tmp_path, shell="/nonexistent/fish")
    assert "    fish_add_path $HOME/.local/bin\n" in fish.stdout and "export" not in fish.stdout


def test_a_new_login_shell_that_has_the_folder_is_named(tmp_path):
    """bootstrap's own PATH is not the user's: a login shell that adds ~/.local/bin (Debian's
    ~/.profile does) means 'open a new terminal', not a line to add."""
    (tmp_path / ".bash_profile").write_text('export PATH="$HOME/.local/bin:$PATH"\n')
    proc = link(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "open a new terminal" in proc.stdout and ">> ~/.bashrc" not in proc.stdout
    # on this shell's PATH but lost by a new login shell: say how to keep it
    (tmp_path / ".bash_profile").write_text('export PATH="/usr/bin:/bin"\n')
    on = link(tmp_path, path=f"{tmp_path / '.local' / 'bin'}:/usr/bin:/bin")
    assert "not on a new login shell's" in on.stdout and ">> ~/.bashrc" in on.stdout


def test_next_uses_a_command_that_works_now(tmp_path):
    """The last line of a bootstrap names `kit` only when the user's PATH finds it."""
    bin_ = tmp_path / ".local" / "bin"
    assert f"Next: {bin_ / 'kit'} tui" in link(tmp_path).stdout.splitlines()[-1]
    assert "Next: kit tui" in link(tmp_path, path=f"{bin_}:/usr/bin:/bin").stdout.splitlines()[-1]
    text = (ROOT / "bootstrap.sh").read_text()
    assert 'USER_PATH="$PATH"' in text.split("export PATH=")[0]  # saved before uv's folder is added
    assert 'on_path "$bin" "$USER_PATH"' in text and 'Next: $KIT_CMD tui' in text
