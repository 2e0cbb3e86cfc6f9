"""bootstrap.sh puts `kit` on the user's PATH as uv and pipx do, without touching anything else."""

import os
import re
import subprocess

import pytest
from places import ROOT


def link(home, path="/usr/bin:/bin", shell="/bin/bash"):
    env = {"HOME": str(home), "PATH": path, "SHELL": shell}
    return subprocess.run(
        ["bash", str(ROOT / "bootstrap.sh"), "--only-link"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


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
        subprocess.run(
            ["bash", "-c", line],
            env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
            check=True,
            timeout=30,
        )


def _found(home, flags):
    return subprocess.run(
        ["env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin", "bash", flags, "command -v kit"],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("existing", [None, ".bash_profile", ".bash_login", ".profile"])
def test_following_the_bash_lines_finds_kit_in_a_login_and_an_interactive_shell(tmp_path, existing):
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
    assert 'on_path "$bin" "$USER_PATH"' in text and "Next: $KIT_CMD tui" in text


def _setup(home, *flags, catalogue=None):
    """A whole bootstrap in this checkout (its .venv synced as locked: quick once done), with
    its own KIT_HOME; nothing fetched, nothing linked."""
    env = dict(
        os.environ,
        KIT_HOME=str(home / "kit"),
        COLUMNS="1000",
        PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}",
    )
    if catalogue:
        env["KIT_STACKS_DIR"] = str(catalogue)
    proc = subprocess.run(
        ["bash", str(ROOT / "bootstrap.sh"), "--no-fetch", "--no-link", *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        stdin=subprocess.DEVNULL,
    )
    proc.stdout = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout)  # say()'s bold
    return proc


@pytest.mark.slow
def test_an_estimate_comes_before_the_stacks_and_a_failed_default_build_is_said(tmp_path):
    """#43: bootstrap said nothing of how long it would take, and with the default (every
    stack available) one stack that failed to build ended the setup before its dataset and
    link; stacks are an optional part of a working kit, so it goes on and says so (exit 0)."""
    import shutil

    cat = tmp_path / "catalogue"
    shutil.copytree(ROOT / "stacks" / "np1-sk152", cat / "broken")
    (cat / "broken" / "uv.lock").write_text("version = [not a lock\n")  # uv refuses it at once
    (cat / "stacks.toml").write_text(
        'reference = "broken"\n\n[stack.broken]\nlock = "broken"\npython = "3.12"\n'
        'numpy = "1.26.4"\nscikit-learn = "1.5.2"\n'
        'blas = { linux-x86_64 = "OpenBLAS", macos-arm64 = "OpenBLAS" }\n'
    )
    proc = _setup(tmp_path, "--no-audit", catalogue=cat)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert (
        out.index("==> estimate: the stacks to build")
        < out.index("1 stack to build: broken")
        < out.index("==> building the stacks available on this platform")
    )
    assert (
        "1 stack to build: broken (size unknown)\ntime not estimated: the size of broken is "
        "unknown (no readable uv.lock for this platform)\n" in out
    )
    assert "bootstrap: not every stack was built (the error above)" in proc.stderr
    assert "==> done, without every stack (above)." in out and "Traceback" not in proc.stderr
    # stacks it was asked for by name are what was asked: their failure ends it (exit 1)
    named = _setup(tmp_path, "--no-audit", "--stacks", "broken", catalogue=cat)
    assert named.returncode == 1 and "==> done" not in named.stdout


@pytest.mark.slow
def test_the_budget_it_prints_is_followed_by_how_to_read_it(tmp_path):
    proc = _setup(tmp_path, "--stacks", "none", "--n", "100")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert (
        "==> estimate: no stacks to build (--stacks none)\nthen the smoke audit: the null "
        "experiment and 4 seeds on 100 proteins; a bar shows its runs\n" in out
    )
    budget = out.index("1 seed unit = the median over the seed pairs")
    read = out.index("\nHow to read it: each row is a factor kit changed")
    done = out.index("==> done.")
    assert budget < read < done
    assert all(len(line) <= 80 for line in out[read:done].splitlines())  # one sentence, 80 wide


@pytest.mark.slow  # builds two real stacks (about a minute each from uv's warm cache)
def test_named_stacks_get_their_cross_stack_factors_and_what_could_not_run_is_said(tmp_path):
    """#56: `--stacks A,B` skipped every cross-stack factor (the loop ran with `all` only), so a
    first budget had no cross-stack row. A catalogue of three scikit-learn stacks, two built:
    sklearn runs its one built pair, and the pairs of the third are said, with why."""
    import shutil

    cat = tmp_path / "catalogue"
    names = ("np1-sk142", "np1-sk152", "np1-sk191")
    for n in names:
        shutil.copytree(ROOT / "stacks" / n, cat / n)
    entries = "".join(
        f'[stack.{n}]\nlock = "{n}"\npython = "3.12"\nnumpy = "1.26.4"\n'
        f'scikit-learn = "{n[-3]}.{n[-2]}.{n[-1]}"\n'
        'blas = { linux-x86_64 = "OpenBLAS", macos-arm64 = "OpenBLAS" }\n\n'
        for n in names
    )
    pairs = '[["np1-sk142", "np1-sk152"], ["np1-sk152", "np1-sk191"], ["np1-sk142", "np1-sk191"]]'
    (cat / "stacks.toml").write_text(
        f'reference = "np1-sk191"\n\n{entries}[pairs.sklearn]\n'
        f"linux-x86_64 = {pairs}\nmacos-arm64 = {pairs}\n"
    )
    proc = _setup(tmp_path, "--stacks", "np1-sk152,np1-sk191", "--n", "100", catalogue=cat)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "==> smoke audit: factor sklearn" in out
    assert "sklearn: 2 of its 3 pairs left out, stacks not built: np1-sk142" in out
    budget = out[out.index("==> smoke audit: cross-stack factors") : out.index("How to read it")]
    row = [ln for ln in budget.splitlines() if ln.startswith("sklearn ")]
    assert row and row[0].split()[1] == "1"  # its one pair of built stacks, in the budget
    assert not (tmp_path / "kit" / "stacks" / "np1-sk142").exists()  # nothing else was built


def test_run_built_with_no_pair_of_built_stacks_is_one_line_and_builds_nothing(kit_home, capsys):
    """What bootstrap's loop relies on: `kit run --built` never builds a stack."""
    from kit.cli import main

    assert main(["run", "--factor", "sklearn", "--built", "--n", "100", "--yes"]) == 1
    err = capsys.readouterr().err
    said = [ln for ln in err.splitlines() if ln.startswith("kit: ")]
    assert len(said) == 1 and "Traceback" not in err
    assert said[0].startswith("kit: error: factor 'sklearn': no pair of its stacks is built here (")
    assert said[0].endswith("np1-sk142, np1-sk191 not built)")
    assert not (kit_home / "stacks").exists() or not any((kit_home / "stacks").iterdir())
