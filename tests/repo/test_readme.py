"""README.md's commands, block by block and in order, on a fresh home right after its bootstrap.

A newcomer pastes them as they are: `./bootstrap.sh`, then every line of the bash blocks below
it, with `kit` found through the link bootstrap made. The walk runs each one verbatim in a
fresh HOME (no KIT_HOME: kit's default data folder) and a folder holding the files the README
names as the user's own (`my.tsv`, `my_pipeline.py`). A command passes when it exits 0 with no
traceback; the few that need what this kind of machine lacks (a GPU, UniProt, a running Slurm)
are listed in ``_CANNOT_HERE``, and those the walk's small catalogue lacks in
``_SMALL_CATALOGUE``, each with the one line it must end with instead. `kit compare lab.kit`
runs where the README says, on a collaborator's machine: another HOME, bootstrapped first. A
README line the walk does not know runs like any other, so a new command that fails after
bootstrap fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import tomllib
from pathlib import Path

import pytest
from places import ROOT

# the commands that cannot do their work on this kind of machine, the line each must end with
# instead (a regular expression), and why; everything else must exit 0
_CANNOT_HERE = {
    "kit stacks add site-torch /path/to/python": (r"/path/to/python", "a placeholder path"),
    "kit run --factor torch-device --device cuda --torch-stack site-torch": (
        r"site-torch",
        "the line before added no stack (and there is no GPU here)",
    ),
    "kit data fetch": (r"UniProt", "no internet here but the package registries"),
    "kit run --factor seed --cluster slurm": (
        r"(?i)slurm|sbatch",
        "no Slurm is running for the walk",
    ),
}
# and those the walk's small catalogue (two OpenBLAS stacks: sklearn and arch pairs, no torch)
# cannot run; KIT_README_WALK=full walks with the whole catalogue instead (1 GB of wheels)
_SMALL_CATALOGUE = {
    "kit run --factor blas": (r"'blas' has no stack pairs", "no BLAS pair"),
    "kit run --factor sklearn,numpy,blas,python,arch": (
        r"'numpy' has no stack pairs",
        "no numpy, blas or python pair",
    ),
    "kit run --factor torch-seed,torch-threads,torch-deterministic": (r"torch", "no torch"),
}
FULL = os.environ.get("KIT_README_WALK") == "full"
_INTERACTIVE = {
    "kit tui"
}  # driven in tmux where it is installed (tests/support/tui_smoke.sh does more)
_NOT_HERE = {".venv/bin/python -m pytest -n 2"}  # the walk is part of that command
# run as the README says, by a collaborator on another machine: a new HOME, set up by the same
# first line of the README
_COLLABORATORS = "kit compare lab.kit"


def readme_commands(text: str) -> list[str]:
    """Every command of README.md's bash blocks in order, comments and blank lines left out."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            cmd = re.sub(r"\s+#.*$", "", line).strip()
            if cmd and not cmd.startswith("#"):
                out.append(cmd)
    return out


def _catalogue(folder: Path) -> Path:
    """The walk's stacks: the two small OpenBLAS stacks of the every-kind store and their pairs
    (sklearn, and arch as BLAS code paths), so that bootstrap builds every stack it lists."""
    from every_kind import catalogue

    catalogue(folder)
    text = (folder / "stacks.toml").read_text()
    text = text[: text.index("[stack.torch-linux-cpu]")]  # no torch: its wheel is this disk's
    (folder / "stacks.toml").write_text(text)
    shutil.rmtree(folder / "torch-linux-cpu")
    return folder


def _users_files(work: Path) -> None:
    """`my.tsv` (a UniProt TSV export, as the README's import reads) and `my_pipeline.py`."""
    from kit.data.synthetic import generate

    ids, seqs, labels, orgs = generate(400, seed=7)
    tm = 'TRANSMEM 5..25; /note="Helical"'
    rows = [f"{a}\t{s}\t9606\t{tm if y else ''}" for a, s, y in zip(ids, seqs, labels, strict=True)]
    (work / "my.tsv").write_text(
        "Entry\tSequence\tOrganism (ID)\tTransmembrane\n" + "\n".join(rows) + "\n"
    )
    shutil.copy(ROOT / "docs" / "examples" / "digits.py", work / "my_pipeline.py")


def _env(home: Path, catalogue: Path | None) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KIT_", "SLURM_", "PYTEST", "COLUMNS"))
    }
    uv_cache = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "uv"), "cache", "dir"], capture_output=True, text=True
    ).stdout.strip()
    env.update(
        HOME=str(home),
        UV_PYTHON_DOWNLOADS="never",
        PATH=f"{home / '.local' / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}",
    )
    if catalogue:
        env["KIT_STACKS_DIR"] = str(catalogue)
    if uv_cache:  # the machine's uv cache, as a newcomer's second bootstrap would have it
        env["UV_CACHE_DIR"] = uv_cache
    env.pop("XDG_DATA_HOME", None)
    return env


def _run(cmd: str, cwd: Path, env: dict, timeout=1800) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", cmd],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _bootstrap(env: dict) -> None:
    """README's first line, in the checkout, for the user whose HOME ``env`` names."""
    began = time.monotonic()
    proc = _run(str(ROOT / "bootstrap.sh"), ROOT, env)
    print(f"{time.monotonic() - began:6.1f} s  exit {proc.returncode}  ./bootstrap.sh", flush=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "SYNTHETIC" in proc.stdout  # offline here: it says it fell back
    assert (Path(env["HOME"]) / ".local" / "bin" / "kit").is_symlink()


def _tui(cwd: Path, env: dict) -> None:
    """`kit tui` in a real 80x24 terminal: it paints its tabs and quits on q."""
    if not shutil.which("tmux"):
        return
    sock = f"kit-readme-{os.getpid()}"
    tmux = ["tmux", "-L", sock]
    subprocess.run(
        [
            *tmux,
            "new-session",
            "-d",
            "-x",
            "80",
            "-y",
            "24",
            "-c",
            str(cwd),
            "env",
            *[f"{k}={v}" for k, v in env.items()],
            "kit",
            "tui",
        ],
        check=True,
    )
    try:
        screen = ""
        for _ in range(120):
            time.sleep(0.5)
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p"], capture_output=True, text=True
            ).stdout
            if "Budget" in screen and "Plan" in screen:
                break
        assert "Budget" in screen and "Plan" in screen, screen
        subprocess.run([*tmux, "send-keys", "q"], check=True)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def test_readme_lists_the_walks_exceptions_verbatim():
    """Every command the walk expects to fail is still in README.md, word for word (a renamed
    line would otherwise be walked as a new one, or an exception kept for a line long gone)."""
    cmds = set(readme_commands((ROOT / "README.md").read_text()))
    for cmd in [
        *_CANNOT_HERE,
        *_SMALL_CATALOGUE,
        *_INTERACTIVE,
        *_NOT_HERE,
        "./bootstrap.sh",
        _COLLABORATORS,
    ]:
        assert cmd in cmds, cmd


@pytest.mark.soak
@pytest.mark.timeout(3600)
def test_every_readme_command_works_in_order_after_bootstrap(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    catalogue = None if FULL else _catalogue(tmp_path / "catalogue")
    cannot = {**_CANNOT_HERE, **({} if FULL else _SMALL_CATALOGUE)}
    _users_files(work)
    env = _env(home, catalogue)
    # the collaborator: another machine, here another HOME, with kit found the same way
    theirs = dict(env, HOME=str(tmp_path / "collaborator"))
    (tmp_path / "collaborator").mkdir()
    failures = []
    for cmd in readme_commands((ROOT / "README.md").read_text()):
        if cmd in _NOT_HERE:
            continue
        if cmd in _INTERACTIVE:
            _tui(work, env)
            continue
        if cmd == "./bootstrap.sh":  # the first line: from the checkout, as cloned
            _bootstrap(env)
            continue
        if cmd == _COLLABORATORS:
            _bootstrap(theirs)
        began = time.monotonic()
        proc = _run(cmd, work, theirs if cmd == _COLLABORATORS else env)
        print(f"{time.monotonic() - began:6.1f} s  exit {proc.returncode}  {cmd}", flush=True)
        said = proc.stdout + proc.stderr
        if "Traceback" in said:
            failures.append(f"{cmd}: a traceback\n{said[-2000:]}")
        elif cmd in cannot:
            pattern, _why = cannot[cmd]
            last = [x for x in proc.stderr.splitlines() if x.strip()][-1:] or [""]
            if proc.returncode == 0 or not re.search(pattern, last[0]):
                failures.append(
                    f"{cmd}: expected a non-zero exit and a line matching {pattern!r}"
                    f", got exit {proc.returncode}: {last[0]!r}"
                )
        elif proc.returncode != 0:
            failures.append(f"{cmd}: exit {proc.returncode}\n{said[-1500:]}")
    assert not failures, "\n\n".join(failures)


# the README says what is true: its sklearn row names the stacks the catalogue pairs (issue 26,
# item 8)
def test_the_readme_sklearn_row_is_the_catalogue():
    cat = tomllib.loads((ROOT / "stacks" / "stacks.toml").read_text())
    stacks = {s for pair in cat["pairs"]["sklearn"]["linux-x86_64"] for s in pair}
    versions = sorted({cat["stack"][s]["scikit-learn"] for s in stacks})
    row = next(
        ln for ln in (ROOT / "README.md").read_text().splitlines() if ln.startswith("| `sklearn` |")
    )
    assert re.findall(r"1\.\d+\.\d+", row.split("at numpy")[0]) == versions
    words = {2: "two", 3: "three", 4: "four"}
    assert f"({words[len(stacks)]} stacks" in row
