"""kit.envs.stacks: the catalogue, and each stack's status from injected platform facts."""

import json
import sys
from pathlib import Path

import pytest

from kit.cli import main
from kit.core.errors import KitError
from kit.envs.catalogue import definitions, reference
from kit.envs.interpreters import _pyenv_candidates, find_python
from kit.envs.kinds import listing, stack_kind
from kit.envs.platforms import ROSETTA_HINT, Platform

LINUX = Platform("linux", "x86_64", cpu_flags=frozenset({"avx", "avx2"}), downloads=False)
MAC = Platform("darwin", "arm64", (14, 5), rosetta=True, downloads=True)
MAC_NO_ROSETTA = Platform("darwin", "arm64", (14, 5), rosetta=False, downloads=True)


def test_catalogue_has_the_papers_nine_and_linux_equivalents():
    defs = definitions()
    mac = [n for n, d in defs.items() if "macos-arm64" in d.platforms and d.kind == "pipeline"]
    linux = [n for n, d in defs.items() if "linux-x86_64" in d.platforms]
    assert len(mac) == 9 and reference() == "np2-sk191"
    assert {"py39-mkl-sk161", "py39-openblas-sk161", "py313-np2-sk191"} <= set(linux)
    assert defs["np1-sk191-x86"].lock == "np1-sk191" and defs["np1-sk191-x86"].arch == "x86_64"
    for d in defs.values():
        assert (d.lock_dir() / "uv.lock").exists() and len(d.lock_sha256()) == 64


def test_every_lock_covers_its_platforms():
    for d in definitions().values():
        text = (d.lock_dir() / "uv.lock").read_text()
        if "macos-arm64" in d.platforms:
            assert "macosx" in text and "arm64" in text, d.name
        if "linux-x86_64" in d.platforms:
            assert "manylinux" in text, d.name
        if d.arch == "x86_64":
            assert "macosx" in text and "x86_64.whl" in text, d.name


def test_status_on_macos_with_and_without_rosetta():
    x86 = stack_kind("np1-sk191-x86")
    assert x86.unavailable_reason(MAC, check_python=False) is None
    why = x86.unavailable_reason(MAC_NO_ROSETTA, check_python=False)
    assert "Rosetta 2" in why and ROSETTA_HINT in why
    assert x86.status(MAC_NO_ROSETTA)[0] == "unavailable"
    # with downloads allowed, uv fetches a missing interpreter when building
    assert stack_kind("py314-np2-sk191").status(MAC) == ("not built", None)


def test_status_on_linux():
    st, why = stack_kind("np2-sk161-x86").status(LINUX)
    assert st == "unavailable" and "macos-arm64 only" in why
    assert stack_kind("py39-mkl-sk161").status(MAC)[1].startswith("exists on linux-x86_64 only")


@pytest.mark.slow
def test_missing_interpreter_is_a_reason(tmp_path, monkeypatch):
    cat = tmp_path / "stacks"
    (cat / "future").mkdir(parents=True)
    (cat / "future" / "uv.lock").write_text("version = 1\n")
    (cat / "stacks.toml").write_text(
        '[stack.future]\nlock = "future"\npython = "3.99"\nblas = { linux-x86_64 = "OpenBLAS" }\n'
    )
    monkeypatch.setenv("KIT_STACKS_DIR", str(cat))
    st, why = stack_kind("future").status(LINUX)
    assert st == "unavailable" and "no Python 3.99 interpreter found" in why
    with pytest.raises(KitError, match="not built"):
        stack_kind("future").runnable()
    with pytest.raises(KitError, match="unknown stack"):
        stack_kind("nope")


@pytest.mark.slow
def test_pyenv_versions_are_found_but_shims_are_not(tmp_path, monkeypatch):
    minor = "{}.{}".format(*sys.version_info[:2])
    for patch in ("1", "10"):
        b = tmp_path / "versions" / f"{minor}.{patch}" / "bin"
        b.mkdir(parents=True)
        (b / f"python{minor}").symlink_to(sys.executable)
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    found = _pyenv_candidates(minor)
    assert [Path(p).parts[-3] for p in found] == [f"{minor}.10", f"{minor}.1"]  # newest first
    find_python.cache_clear()
    assert (
        find_python(
            minor, None, Platform("linux", __import__("platform").machine(), downloads=False)
        )
        is not None
    )
    assert find_python("3.99", None, LINUX) is None


def test_threads_asking_for_one_interpreter_at_once_wait_for_one_search(monkeypatch):
    """The TUI's Setup and Plan tabs read as it starts, each asking for the stacks'
    interpreters: each made every search (uv python find, then starting each candidate)."""
    import threading
    import time

    from kit.envs import interpreters

    searched = []

    def slow_find(request):
        searched.append(request)
        time.sleep(0.3)  # what starting uv takes: the other threads ask meanwhile
        return [sys.executable]

    minor = "{}.{}".format(*sys.version_info[:2])
    monkeypatch.setattr(interpreters, "_uv_find", slow_find)
    find_python.cache_clear()
    found = []
    asking = [
        threading.Thread(target=lambda: found.append(find_python(minor, None, LINUX)))
        for _ in range(3)
    ]
    for t in asking:
        t.start()
    for t in asking:
        t.join()
    find_python.cache_clear()
    assert searched == [minor] and found == [sys.executable] * 3


@pytest.mark.slow
def test_stacks_json_lists_macos_stacks_with_reasons(capsys):
    assert main(["stacks", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == set(definitions())
    for name in ("np1-sk191-x86", "np2-sk161-x86", "py314-np2-sk191"):
        if sys.platform == "linux":
            assert rows[name]["status"] == "unavailable" and rows[name]["reason"]
    r = rows["np2-sk191"]
    assert r["reference"] and r["attributes"]["scikit-learn"] == "1.9.1"
    assert set(r) >= {"name", "platforms", "attributes", "status", "reason"}


@pytest.mark.slow
def test_listing_on_an_injected_mac():
    rows = {r["name"]: r for r in listing(MAC_NO_ROSETTA)}
    assert rows["np2-sk191"]["attributes"]["blas"] == "Accelerate"
    assert rows["np1-sk191-x86"]["status"] == "unavailable"
    assert rows["py39-mkl-sk161"]["status"] == "unavailable"


@pytest.mark.slow
@pytest.mark.parametrize("plat", [LINUX, MAC_NO_ROSETTA], ids=["linux", "mac"])
def test_the_stack_table_reads_at_80_columns(plat):
    """Bootstrap's `kit stacks`, piped: an unavailable stack took 7 lines (its reason wrapped
    in a 12-column status). Now one row a stack, its reason whole on the line(s) under it."""
    from kit.views.fit import fitted
    from kit.views.tables import stacks_text

    rows = listing(plat)
    with fitted(80):
        text = stacks_text(rows)
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) <= 80 and "\n\n" not in text  # one table
    starts = [next(i for i, ln in enumerate(lines) if ln.split()[:1] == [r["name"]]) for r in rows]
    assert starts == sorted(starts)
    for r, at, end in zip(rows, starts, starts[1:] + [len(lines)], strict=True):
        assert lines[at].split()[-1] == r["status"].split()[-1]
        under = " ".join(" ".join(lines[at + 1 : end]).split())
        assert end - at <= 3 and (not r["reason"] or " ".join(r["reason"].split()) in under)
    assert any(r["status"] == "unavailable" for r in rows)
