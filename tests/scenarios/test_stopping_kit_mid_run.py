"""Real `kit run` processes killed, terminated and run side by side: no orphan, no half-run,
no spec run twice. A fresh worker process is found by its temporary folder in its arguments
(``kit-UID/run-<kit pid>-<run id>-...`` in TMPDIR), a warm one (``--serve``) by the kit pid it watches."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from procs import kit_workers, run_folder

pytestmark = pytest.mark.slow
KIT = str(Path(sys.executable).with_name("kit"))
PLAN = ["run", "--factor", "seed", "--n", "200", "--threads", "1", "--seeds", "0-3"]


def workers():
    """{worker pid: (kit pid, run id prefix)} of every kit worker running now."""
    out = {}
    for pid, args in kit_workers():
        if b"--serve" in args:  # a warm worker: which kit it serves, from its environment
            try:
                env = dict(
                    v.split(b"=", 1)
                    for v in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                    if b"=" in v
                )
                out[pid] = (int(env[b"KIT_PARENT_PID"]), None)
            except (OSError, KeyError, ValueError):
                pass
            continue
        name = run_folder(args).split("-")  # run-<pid>-<runid>-xxxx
        if len(name) >= 3:
            out[pid] = (int(name[1]), name[2])
    return out


def start(home, *extra):
    return subprocess.Popen(
        [KIT, *PLAN, *extra],
        env=dict(os.environ, KIT_HOME=str(home)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_worker(kit_pid, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        mine = [w for w, (k, _) in workers().items() if k == kit_pid]
        if mine:
            return mine
        time.sleep(0.05)
    raise AssertionError("no worker started")


def gone(pids, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not any(Path(f"/proc/{p}").exists() for p in pids):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.skipif(not Path("/proc").exists(), reason="reads /proc")
def test_kill_9_of_kit_takes_its_worker_along_and_the_next_run_sweeps_and_resumes(
    tmp_path, own_tmpdir
):
    """own_tmpdir: another test's kit would sweep the killed kit's run folder first."""
    from kit.core.scratch import root

    home = tmp_path / "h"
    kit = start(home)
    worker = wait_for_worker(kit.pid)
    os.kill(kit.pid, signal.SIGKILL)  # kit only, not its process group
    kit.wait()
    assert gone(worker), "the worker outlived kit"
    left = list(root().glob(f"run-{kit.pid}-*"))
    assert left  # its folder is left behind by the kill ...
    again = subprocess.run(
        [KIT, *PLAN],
        env=dict(os.environ, KIT_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode == 0
    assert not any(d.exists() for d in left)  # ... and swept by the next run
    assert list((home / "tmp").iterdir()) == []


@pytest.mark.skipif(not Path("/proc").exists(), reason="reads /proc")
def test_sigterm_ends_kit_with_143_a_message_and_no_worker(tmp_path):
    kit = start(tmp_path / "h")
    worker = wait_for_worker(kit.pid)
    kit.send_signal(signal.SIGTERM)
    err = kit.stderr.read()
    assert kit.wait(timeout=60) == 143
    assert "kit: terminated; finished runs are stored" in err and "Traceback" not in err
    assert gone(worker)


@pytest.mark.skipif(not Path("/proc").exists(), reason="reads /proc")
def test_overlapping_plans_never_run_the_same_spec_twice(tmp_path, monkeypatch, own_tmpdir):
    """Three `kit run`s of one plan at once: each of the 4 runs is made by exactly one of them.

    Every worker of this KIT_HOME starts by noting which kit started it for which run (a
    sitecustomize beside the worker code on its PYTHONPATH: this test's own, own_tmpdir), so
    no run goes unseen: the parent of its parent, its tether."""
    from kit.envs.launch import worker_root

    home, made = tmp_path / "h", tmp_path / "made"
    monkeypatch.setenv("KIT_HOME", str(home))
    (worker_root() / "sitecustomize.py").write_text(
        "import os, sys\n"
        "if '--spec' in sys.argv:\n"
        "    spec = sys.argv[sys.argv.index('--spec') + 1]\n"
        "    tether = open('/proc/%s/stat' % os.environ['KIT_PARENT_PID']).read()\n"
        "    kit = tether.rsplit(')', 1)[1].split()[1]\n"
        f"    with open({str(made)!r}, 'a') as f:\n"
        "        f.write(kit + ' ' + os.path.basename(os.path.dirname(spec)) + '\\n')\n"
    )
    kits = [start(home, "--fresh") for _ in range(3)]  # a worker process per run
    for k in kits:
        k.wait(timeout=600)
    assert all(k.returncode == 0 for k in kits), [k.stderr.read() for k in kits]
    seen = {}
    for line in made.read_text().splitlines():
        kit_pid, folder = line.split()
        assert folder.startswith(f"run-{kit_pid}-")  # the kit that started it made it
        seen.setdefault(folder.split("-")[2], []).append(int(kit_pid))
    assert len(seen) == 4 and all(len(pids) == 1 for pids in seen.values()), seen
    assert set().union(*seen.values()) <= {k.pid for k in kits}
