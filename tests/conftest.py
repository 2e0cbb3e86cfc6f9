"""Shared fixtures: an isolated KIT_HOME per test and tiny deterministic datasets."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # paper_reference.py


@pytest.fixture(autouse=True)
def kit_home(tmp_path, monkeypatch):
    home = tmp_path / "kit-home"
    monkeypatch.setenv("KIT_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def tiny():
    """150 synthetic proteins: enough for 64 SVD components and 30 clusters."""
    from kit.data.dataset import make_dataset
    from kit.data.synthetic import generate

    ids, seqs, labels, orgs = generate(150)
    return make_dataset("tiny", "synthetic", ids, seqs, labels, orgs)


def one_thread_env():
    env = dict(os.environ)
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        env[v] = "1"
    return env
