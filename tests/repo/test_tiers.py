"""tests/support/tiers.py: which commands make a test slow, and the fast tier refusing one
unmarked."""

import sys

import pytest
from tiers import SLOW_FIXTURES, slow_command

pytest_plugins = ["pytester"]
# the inner runs share this process: the snapshot plugin's session end would clean the outer's
_ALONE = ("-p", "no:cacheprovider", "-p", "no:textual-snapshot")


@pytest.mark.parametrize(
    "argv, what",
    [
        ([sys.executable, "-m", "kit.worker", "--serve"], "python -m kit.worker"),
        ([sys.executable, "-m", "kit", "run"], "python -m kit"),
        (["/root/.local/bin/uv", "sync"], "uv"),
        (["uv", "python", "install", "3.13"], "uv"),
        (["uv", "python", "find", "3.13"], None),  # a query: milliseconds
        ("tmux new-session -d", "tmux"),
        (["/usr/sbin/sshd", "-D"], "sshd"),
        (["kit", "budget"], "kit"),
        ([sys.executable, "-c", "import sys; print(sys.argv)", "-m", "kit.worker"], None),
        (["git", "log", "kit"], None),  # a word named kit that is not the program
        ([sys.executable, "-m", "pip", "--version"], None),
    ],
)
def test_a_command_is_slow_by_the_program_it_starts(argv, what):
    assert slow_command(argv) == what


_SUITE = """
import subprocess, sys
import pytest

def test_unmarked_starts_the_cli():
    subprocess.run([sys.executable, "-m", "kit", "--version"])

@pytest.mark.slow
def test_marked_starts_the_cli():
    subprocess.run([sys.executable, "-m", "kit", "--version"], check=True)

def test_unmarked_runs_python_c():
    assert subprocess.run([sys.executable, "-c", "print(1)"]).returncode == 0

@pytest.fixture
def every_kind():
    return {}

def test_uses_a_slow_fixture(every_kind):
    pass
"""


def _suite(pytester):
    pytester.makeconftest(
        "from tiers import fast_tier_guard, mark_slow_fixtures\n"
        "pytest_collection_modifyitems = mark_slow_fixtures\n"
    )
    pytester.makepyfile(test_suite=_SUITE)
    pytester.makeini("[pytest]\nmarkers = slow: slow\n")


def test_the_fast_tier_fails_an_unmarked_test_that_starts_kit_and_names_it(pytester):
    _suite(pytester)
    res = pytester.runpytest_inprocess("-m", "not slow", *_ALONE)
    res.assert_outcomes(passed=1, failed=1, errors=1, deselected=2)  # its call, then its end
    res.stdout.fnmatch_lines(["*this test starts python -m kit: mark it @pytest.mark.slow*"])


@pytest.mark.slow  # its inner tests start the CLI, which the outer fast tier would refuse
def test_the_whole_suite_runs_every_test_unguarded(pytester):
    _suite(pytester)
    res = pytester.runpytest_inprocess(*_ALONE)
    res.assert_outcomes(passed=4)


def test_a_slow_fixture_marks_its_tests(pytester):
    _suite(pytester)
    res = pytester.runpytest_inprocess(
        "-m", "slow", *_ALONE, "test_suite.py::test_uses_a_slow_fixture"
    )
    res.assert_outcomes(passed=1)
    assert "every_kind" in SLOW_FIXTURES
