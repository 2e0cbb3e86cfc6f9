"""bootstrap.sh puts `kit` on the user's PATH as uv and pipx do, without touching anything else."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def link(home, path="/usr/bin:/bin"):
    env = {"HOME": str(home), "PATH": path}
    return subprocess.run(["bash", str(ROOT / "bootstrap.sh"), "--only-link"], env=env,
                          capture_output=True, text=True, timeout=60)


def test_kit_is_linked_into_the_users_bin_with_a_path_hint(tmp_path):
    proc = link(tmp_path)
    assert proc.returncode == 0, proc.stderr
    kit = tmp_path / ".local" / "bin" / "kit"
    assert kit.is_symlink() and kit.resolve() == (ROOT / ".venv" / "bin" / "kit").resolve()
    assert "is not on your PATH" in proc.stdout and 'export PATH="' in proc.stdout
    again = link(tmp_path, path=f"{tmp_path / '.local' / 'bin'}:/usr/bin:/bin")
    assert again.returncode == 0 and "not on your PATH" not in again.stdout
    out = subprocess.run([str(kit), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "usage: kit" in out.stdout


def test_someone_elses_kit_is_left_alone(tmp_path):
    bin_ = tmp_path / ".local" / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "kit").write_text("#!/bin/sh\necho another kit\n")
    proc = link(tmp_path)
    assert proc.returncode == 0 and "left as it is" in proc.stderr
    assert (bin_ / "kit").read_text().endswith("another kit\n")
    assert os.access(ROOT / ".venv" / "bin" / "kit", os.X_OK)
