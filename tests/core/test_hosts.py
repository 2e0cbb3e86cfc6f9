"""The host id: made once per KIT_HOME, shared by every process that races to make it."""

import json
import multiprocessing as mp

import pytest

from kit.core.atomic import create_once
from kit.core.errors import KitError
from kit.runs.store import hosts


def _host_id(home, q):
    import os

    os.environ["KIT_HOME"] = home
    q.put(hosts.host_id())


def test_processes_starting_together_on_a_fresh_home_share_one_id(tmp_path):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_host_id, args=(str(tmp_path), q)) for _ in range(8)]
    for p in procs:
        p.start()
    ids = {q.get(timeout=60) for _ in procs}
    for p in procs:
        p.join()
    assert len(ids) == 1
    assert json.loads((tmp_path / "host.json").read_text())["id"] in ids
    assert [p.name for p in tmp_path.iterdir()] == ["host.json"]  # no temporary file left


def test_create_once_keeps_the_first_content(tmp_path):
    assert create_once(tmp_path / "f", b"one") == b"one"
    assert create_once(tmp_path / "f", b"two") == b"one"


def test_a_damaged_host_file_is_a_one_line_error_not_a_new_identity(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_HOME", str(tmp_path))
    (tmp_path / "host.json").write_text("{not json")
    with pytest.raises(
        KitError, match="host.json is not JSON .*kit store check --repair. moves it aside"
    ):
        hosts.host_id()
