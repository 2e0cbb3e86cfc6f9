"""The home's own files are input (issue 54, item 3): each file kit keeps in KIT_HOME, replaced by
a link to /dev/zero, a FIFO, a link that points outside, garbage, an empty file, a file cut short
or a folder, against every reader, `kit store check` and `--repair`. No reader hangs, runs out of
memory or ends in an internal error; one that exits 0 prints what it printed before the damage;
one that refuses says so in one line naming the file; `store check` names it and exits 1;
`--repair` moves it aside and the store checks clean after."""

import os
import shutil
import signal
from pathlib import Path

import pytest
from places import KIT
from stored import budget_store

from kit.cli import main
from kit.core import home_files
from kit.data import load_dataset
from kit.data.dataset import dataset_path

READERS = (("runs",), ("budget",), ("verdicts",), ("advise",), ("tolerances",))
CHECK, REPAIR = ("store", "check"), ("store", "check", "--repair")
NOTE = "writes/999999-abcd.note"


def _damage(path: Path, how: str, outside: Path) -> None:
    original = path.read_bytes() if path.is_file() else b"{}"
    if path.is_file() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if how == "zero":
        path.symlink_to("/dev/zero")
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "outside":
        outside.write_bytes(original)  # the same bytes, through a link: still refused
        path.symlink_to(outside)
    elif how == "garbage":
        path.write_bytes(bytes(range(256)) * 8)
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "cut":
        path.write_bytes(original[: len(original) // 2])
    elif how == "folder":
        path.mkdir()


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A home with runs on a real synthetic dataset (its named file and the file workers read),
    and what each reader printed of it."""
    root = tmp_path_factory.mktemp("home-damage")
    home = root / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_HOME", str(home))
        mp.setenv("COLUMNS", "1000")
        ds = load_dataset("synthetic", 120)
        dataset_path(ds)
        budget_store(root, dataset=ds, home=home)
        (home / NOTE).parent.mkdir(exist_ok=True)
        (home / NOTE).write_bytes(os.fsencode(root / "elsewhere" / "keep.txt"))
        before = {r: _read(r) for r in READERS}
    files = [
        "host.json",
        "datasets/synthetic-120.json",
        f"datasets/by-hash/{ds.sha256}.json",
        NOTE,
        "store.json",
    ]
    return {"home": home, "before": before, "files": files}


class Hung(BaseException):
    """A reader still waiting after 20 s."""


def _read(argv):
    """(exit status, stdout, stderr) of ``kit ARGV`` in this process, never waiting past 20 s (a
    FIFO opened for reading blocks until a writer comes)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()

    def hung(*_):  # no `except OSError` or `except Exception` of kit's catches it
        raise Hung(f"kit {' '.join(argv)} hung")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return code, out.getvalue(), err.getvalue()


def _fine(code, err, report=False):
    """No internal error; a refusal is one `kit: error:` line (a check's report is its output)."""
    assert "internal error" not in err and "Traceback" not in err, err
    if code and not report:
        assert err.strip().splitlines()[-1].startswith("kit: error: "), err


@pytest.mark.parametrize("how", ["zero", "fifo", "outside", "garbage", "empty", "cut", "folder"])
@pytest.mark.parametrize("which", range(5))
def test_a_damaged_home_file_is_one_line_in_every_reader_and_repair_sets_it_aside(
    made, tmp_path, monkeypatch, which, how
):
    rel = made["files"][which]
    home = tmp_path / "home"
    shutil.copytree(made["home"], home, symlinks=True)
    monkeypatch.setenv("KIT_HOME", str(home))
    _damage(home / rel, how, tmp_path / "outside.json")
    for argv in READERS:
        code, out, err = _read(argv)
        _fine(code, err)
        if code:
            assert rel in err, err  # the line names the file
        else:  # a reader that does not need the file prints what it printed before
            assert out == made["before"][argv][1], argv
    code, out, err = _read(CHECK)
    _fine(code, err, report=True)
    if not (rel == NOTE and how in ("garbage", "empty", "cut")):  # a note is any path: see below
        assert code == 1 and (rel in out + err or Path(rel).name[:12] in out), (out, err)
    code, out, err = _read(REPAIR)
    assert code == 0, (out, err)
    _fine(code, err)
    assert _read(CHECK)[0] == 0
    assert (
        not os.path.lexists(home / rel) or (home / rel).is_file() and not (home / rel).is_symlink()
    )
    assert (tmp_path / "outside.json").exists() or how != "outside"  # nothing outside touched


def test_every_file_kit_reads_from_its_home_is_read_through_the_one_helper():
    """The places that read a file from KIT_HOME, listed: each goes through kit.core.small_files
    (bounded, no link followed, no FIFO opened); a new reader elsewhere would not."""
    root = KIT
    readers = {
        "kit/core/hosts.py",
        "kit/data/dataset.py",
        "kit/data/pipelines.py",
        "kit/data/homology.py",
        "kit/data/homology_edges.py",
        "kit/envs/external.py",
        "kit/runs/executing/cluster_settings.py",
        "kit/envs/releases.py",
        "kit/core/atomic.py",
        "kit/envs/containers/runtime.py",
        "kit/envs/containers/images.py",
        "kit/envs/containers/bases.py",
        "kit/runs/store/identity.py",
        "kit/runs/store/kept.py",
    }
    for rel in readers:
        text = (root.parent / rel).read_text()
        assert "read_home" in text or "read_small" in text, rel
    # and the patterns store check looks at cover the files these readers keep
    kept = {p for p, _ in home_files.KEPT}
    assert {
        "host.json",
        "datasets/*.json",
        "datasets/by-hash/*.json",
        "writes/*.note",
        "pipelines/by-hash/*.json",
        "pipelines/by-hash/*.py",
        "cluster.toml",
        "store.json",
    } <= kept


def test_a_record_that_is_not_json_is_named_by_store_check_and_set_aside(tmp_path, monkeypatch):
    """The small records (the external stacks' registry, a pipeline's record) are parsed by the
    check, so the repair their readers point at really moves them aside."""
    home = tmp_path / "home"
    monkeypatch.setenv("KIT_HOME", str(home))
    budget_store(tmp_path, home=home)
    (home / "stacks").mkdir(exist_ok=True)
    (home / "stacks" / "external.json").write_text("{not json")
    code, out, _ = _read(CHECK)
    assert code == 1 and "external.json is not JSON" in out, out
    assert _read(REPAIR)[0] == 0 and _read(CHECK)[0] == 0
    assert list((home / "stacks").glob("external.json.damaged-*"))
