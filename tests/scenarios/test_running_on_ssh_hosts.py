"""`--cluster ssh` through a real sshd on 127.0.0.1 (started by the test in a temp folder, with
its own host key and an authorized key), asyncssh and distributed's SSHCluster: `kit cluster
check` and a two-run plan, the scheduler bound to loopback by the interface setting."""

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
KIT = str(Path(sys.executable).with_name("kit"))
SSHD = "/usr/sbin/sshd"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def sshd(tmp_path):
    """An sshd on 127.0.0.1 that lets this user in with a key; yields the client's HOME."""
    if not Path(SSHD).exists() or not shutil.which("ssh-keygen"):
        pytest.skip("no sshd here (apt-get install openssh-server)")
    if importlib.util.find_spec("asyncssh") is None:
        pytest.skip("asyncssh is not installed in kit's environment (uv sync installs it)")
    if os.geteuid() != 0:
        pytest.skip("an sshd that logs a user in needs root")
    home, conf = tmp_path / "client", tmp_path / "sshd"
    (home / ".ssh").mkdir(parents=True)
    conf.mkdir()
    Path("/run/sshd").mkdir(exist_ok=True)  # Debian's sshd refuses to start without it
    for key in (conf / "host_key", home / ".ssh" / "id_ed25519"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    port = _free_port()
    (conf / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {conf / 'host_key'}\n"
        f"AuthorizedKeysFile {home / '.ssh' / 'id_ed25519.pub'}\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
    )
    proc = subprocess.Popen([SSHD, "-D", "-f", str(conf / "sshd_config"), "-E", str(conf / "log")])
    # asyncssh reads ~/.ssh (config, known_hosts, keys) under $HOME, as OpenSSH's client does
    (home / ".ssh" / "config").write_text(f"Host 127.0.0.1\n  Port {port}\n  User root\n")
    host_key = " ".join((conf / "host_key.pub").read_text().split()[:2])
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key}\n")
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    yield home
    proc.terminate()
    proc.wait(timeout=20)


def test_kit_runs_through_an_ssh_cluster(tmp_path, sshd):
    kit_home = tmp_path / "h"
    kit_home.mkdir()
    # the remote worker finds the same kit as the driver (a test may run a worktree's copy)
    (kit_home / "cluster.toml").write_text(
        f'[ssh]\nhosts = ["127.0.0.1"]\ncores = 2\npython = "{sys.executable}"\n'
        f'kit_home = "{kit_home}"\ninterface = "lo"\nport = 0\n'
        f'env = {{ PYTHONPATH = "{os.environ.get("PYTHONPATH", "")}" }}\nwait_s = 60\n'
    )
    env = dict(os.environ, KIT_HOME=str(kit_home), HOME=str(sshd))
    check = subprocess.run(
        [KIT, "cluster", "check", "--cluster", "ssh"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stderr
    assert "tcp://127.0.0.1:" in check.stdout and "host ok" in check.stdout
    # Dask's own INFO lines went to kit's log, not to stderr
    assert check.stderr.strip() == "kit: starting the lab machines 127.0.0.1 over SSH"
    assert "distributed.scheduler" in (kit_home / "logs" / "cluster.log").read_text()
    got = subprocess.run(
        [
            KIT,
            "run",
            "--factor",
            "seed",
            "--seeds",
            "0,1",
            "--threads",
            "1",
            "--n",
            "100",
            "--cluster",
            "ssh",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert got.returncode == 0, got.stderr
    assert "Traceback" not in got.stderr and "INFO" not in got.stderr
