"""Shared fixtures: an isolated KIT_HOME per test and tiny deterministic datasets."""

import os
import sys
from pathlib import Path

import pytest

# the helpers and data of tests/support (every_kind.py, stored.py, tiers.py, places.py ...) are
# imported by their names from any test folder
sys.path.insert(0, str(Path(__file__).parent / "support"))

from tiers import add_soak_option, fast_tier_guard, mark_slow_fixtures  # noqa: E402,F401


@pytest.fixture(autouse=True)
def kit_home(tmp_path, monkeypatch):
    home = tmp_path / "kit-home"
    monkeypatch.setenv("KIT_HOME", str(home))
    # piped output fits COLUMNS (80 without it): tests that read a phrase from an output read
    # whole lines; the tests of widths set or drop COLUMNS themselves (test_piped, test_readers)
    monkeypatch.setenv("COLUMNS", "1000")
    return home


@pytest.fixture
def own_tmpdir(tmp_path, monkeypatch):
    """A TMPDIR of this test's own: kit's workers stand there (kit.core.scratch), so worker
    code a test changes (a sitecustomize planted beside it) reaches this test's workers only."""
    import tempfile

    d = tmp_path / "t"
    d.mkdir()
    monkeypatch.setenv("TMPDIR", str(d))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    return d


@pytest.fixture
def slurm_env(tmp_path):
    """A real single-node Slurm for one test (tests/support/slurm.py); the environment that reaches
    it."""
    import slurm

    why = slurm.unavailable()
    if why:
        pytest.skip(f"no Slurm here: {why}")
    state = tmp_path / "slurm"
    env = slurm.start(state)
    yield {"SLURM_CONF": env["SLURM_CONF"]}
    slurm.stop(state)


@pytest.fixture
def port_8787_taken():
    """Port 8787, Dask's dashboard default, held by a listener while the test runs: this
    test's own when it is free, another program's when it is not (either way a Dask that asks
    for it is refused); skipped when it can be neither taken nor found taken."""
    import socket

    held = socket.socket()
    try:
        held.bind(("", 8787))
        held.listen()
    except OSError:
        held.close()
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", 8787)) != 0:
                pytest.skip("port 8787 can be neither taken nor found taken by a listener")
        yield 8787
        return
    with held:
        yield 8787


@pytest.fixture(scope="session")
def tiny():
    """150 synthetic proteins: enough for 64 SVD components and 30 clusters."""
    from kit.data.dataset import make_dataset
    from kit.data.synthetic import generate

    ids, seqs, labels, orgs = generate(150)
    return make_dataset("tiny", "synthetic", ids, seqs, labels, orgs)


def one_thread_env():
    env = dict(os.environ)
    for v in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
    ):
        env[v] = "1"
    return env


@pytest.fixture(scope="session")
def container_images(tmp_path_factory):
    """A KIT_HOME in which np1-sk152's images on bookworm and trixie are built (real podman,
    real debootstrap): its path, or None where containers do not work here (their tests skip;
    .ci/run installs podman, runc and debootstrap)."""
    import containers

    if containers.unavailable():
        return None
    home = tmp_path_factory.mktemp("container-images") / "home"
    containers.build_images(home)
    return home


@pytest.fixture
def images_home(container_images, kit_home):
    """This test's KIT_HOME with the session's stack images in it (their records)."""
    import containers

    if container_images is None:
        pytest.skip(f"no containers here: {containers.unavailable()}")
    containers.share(container_images, kit_home)
    yield kit_home
    # what kit did in this process (in-process commands) left no container behind
    assert containers.left_by(os.getpid()) == [], "a test left a container of kit's"


@pytest.fixture(scope="session")
def every_kind(tmp_path_factory, container_images):
    """A real store holding every kind of run and factor this platform can run (every_kind.py)."""
    from every_kind import build

    return build(tmp_path_factory.mktemp("every-kind"), container_images)


@pytest.fixture
def on_every_kind(every_kind, monkeypatch):
    """Point kit at the every-kind store (and its small stack catalogue) for one test."""
    monkeypatch.setenv("KIT_HOME", str(every_kind["home"]))
    monkeypatch.setenv("KIT_STACKS_DIR", str(every_kind["catalogue"]))
    return every_kind


# the two tiers (tests/support/tiers.py): slow fixtures mark their tests; the fast tier refuses a
# test that starts a slow process unmarked
pytest_collection_modifyitems = mark_slow_fixtures
pytest_addoption = add_soak_option
