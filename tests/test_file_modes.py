"""Reports, bundles and datasets get the mode the user's umask gives, not mkstemp's 0600."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from places import ROOT, SUPPORT

_WRITE = """
import sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from kit.app.bundle import export
from kit.data.dataset import load_dataset, stored_datasets
from kit.core.paths import subdir
from kit.app.verbs import report
from kit.core.subject import of_dataset
from kit.views.report import write
from stored import budget_store
out = Path({out!r})
st = budget_store(out, home=out / "home")
write(report(st, of_dataset("d" * 64, dict())), out / "rep")
export(st, [r.id for r in st.runs()], out / "lab.kit", arrays=True)
load_dataset("synthetic", 120)
print(subdir("datasets") / "synthetic-120.json")
"""


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_follow_the_umask(tmp_path, mask, mode):
    code = _WRITE.format(tests=str(SUPPORT), out=str(tmp_path))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KIT_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(mask),
    )
    assert proc.returncode == 0, proc.stderr
    dataset = Path(proc.stdout.strip().splitlines()[-1])
    files = [
        tmp_path / "rep" / "report.md",
        tmp_path / "rep" / "report.html",
        tmp_path / "lab.kit",
        dataset,
    ]
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == mode, (f, oct(f.stat().st_mode))
