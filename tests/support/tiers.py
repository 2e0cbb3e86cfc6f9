"""The test tiers: what makes a test slow, the guard that keeps the fast tier fast, and the
soaks (long kill loops, README's walk) that only `--soak` runs."""

from __future__ import annotations

import os

import pytest

# Tests that use these fixtures build a real store of every kind of run or start a real Slurm:
# minutes each, so they are the slow tier whatever their own marks say (pytest -m "not slow").
SLOW_FIXTURES = ("every_kind", "on_every_kind", "slurm_env", "container_images")

# What makes a test slow: a process that runs the pipeline, builds a stack or drives a terminal.
# `python -m kit` (the CLI in a fresh interpreter) imports numpy and friends, about a second.
_SLOW_COMMANDS = (
    "kit.worker",
    "kit",
    "uv",
    "mmseqs",
    "tmux",
    "sshd",
    "slurmctld",
    "slurmd",
    "sbatch",
    "srun",
    "tui_smoke.sh",
)
_SLOW_UV = {"sync", "lock", "venv", "pip", "run", "install", "build", "tool", "export"}


# The tests of the every-kind store run on one xdist worker (`--dist loadgroup`), so that its
# session fixture is built once, not once per worker (minutes each).
EVERY_KIND_GROUP = "every-kind"


def add_soak_option(parser):
    """``--soak``: run the soaks too (CI does; the README's test command leaves them out)."""
    parser.addoption(
        "--soak",
        action="store_true",
        help="run the soaks too: tests marked soak (kill loops, README's walk)",
    )


# first among the collection hooks: xdist's own (which appends a test's group to its node id for
# --dist loadgroup) reads the markers added here, and ran before them without this, so the
# every-kind store was built on both workers, three times in all
@pytest.hookimpl(tryfirst=True)
def mark_slow_fixtures(config, items):
    """The collection hook: a test that uses one of SLOW_FIXTURES is marked slow (and the
    every-kind store's tests grouped on one worker); without --soak, the soaks are deselected
    (a soak is slow too)."""
    soaks = []
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if set(SLOW_FIXTURES) & used:
            item.add_marker(pytest.mark.slow)
        # the stack images are built once too, on the worker that builds the every-kind store
        if used & {"every_kind", "on_every_kind", "container_images"}:
            item.add_marker(pytest.mark.xdist_group(EVERY_KIND_GROUP))
        if item.get_closest_marker("soak"):
            item.add_marker(pytest.mark.slow)
            soaks.append(item)
    if soaks and not config.getoption("--soak", False):
        config.hook.pytest_deselected(items=soaks)
        items[:] = [i for i in items if not i.get_closest_marker("soak")]


def slow_command(argv) -> str | None:
    """The slow program ``argv`` starts (a name of _SLOW_COMMANDS), or None."""
    words = [str(argv)] if isinstance(argv, (str, bytes, os.PathLike)) else [str(a) for a in argv]
    if len(words) == 1:
        words = words[0].split()
    for i, w in enumerate(words):
        if w == "-c":  # python -c CODE: what follows is the code's argv, not a module
            return None
        name = os.path.basename(w)
        if name == "uv":  # a query (uv python find, uv --version) takes milliseconds
            if not set(words[i + 1 : i + 3]) & _SLOW_UV:
                return None
            return name
        if name in _SLOW_COMMANDS and name != "kit":
            return name
        if w == "-m" and i + 1 < len(words) and words[i + 1].split(".")[0] == "kit":
            return f"python -m {words[i + 1]}"
        if name == "kit" and i == 0:
            return "kit"
    return None


@pytest.fixture(autouse=True)
def fast_tier_guard(request, monkeypatch):
    """In the fast tier (-m "not slow"), a test not marked slow that starts a slow process fails,
    naming it: the fast tier stays fast because a test cannot slip into it unmarked. The process
    is not started (the caller sees a missing program, as on a machine without it), and the test
    fails at its end: raising inside the test could land in a worker thread the test waits on."""
    expr = request.config.getoption("markexpr", "") or ""
    if "not slow" not in expr or request.node.get_closest_marker("slow"):
        yield
        return
    import subprocess

    real, started = subprocess.Popen._execute_child, []

    def guarded(self, args, *rest, **kw):
        what = slow_command(args)
        if what:
            started.append(what)
            raise FileNotFoundError(
                f"{what}: not started in the fast tier (tests/support/tiers.py)"
            )
        return real(self, args, *rest, **kw)

    monkeypatch.setattr(subprocess.Popen, "_execute_child", guarded)
    yield
    if started:
        pytest.fail(
            f"this test starts {started[0]}: mark it @pytest.mark.slow "
            "(tests/support/tiers.py, the fast tier)",
            pytrace=False,
        )
