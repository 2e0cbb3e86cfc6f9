"""The container runtime of this machine: found, its working options probed once and remembered.

A runtime is podman (or docker, found but said unusable for runs: it cannot pass kit's answer
channel, an inherited descriptor, into a container). Machines differ in what a plain
``podman run`` needs (this project's Linux machines: a containers.conf without default ulimits,
since runc may not raise RLIMIT_NOFILE there), so kit tries a short list of option sets on a
throwaway root made of ``/bin/true`` and remembers the first that starts a container, keyed by
the runtime's path and version, in ``$KIT_HOME/containers/runtime.json``. Where none works,
``runtime()`` says why in one line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ...core import children
from ...core.atomic import write_bytes
from ...core.errors import Failed, one_line
from ...core.paths import subdir
from ...core.processes import alive
from ...core.small_files import read_small

_NO_ULIMITS = "[containers]\ndefault_ulimits = []\n"
# option sets tried in order: (podman's global options, whether kit's containers.conf is used)
_CANDIDATES = (
    ((), False),
    ((), True),
    (("--runtime", "runc"), True),
    (("--cgroup-manager=cgroupfs",), True),
    (("--runtime", "runc", "--cgroup-manager=cgroupfs"), True),
)
PROBE_SECONDS = 60


class NoRuntime(Failed):
    """No container runtime that starts a container here; the one line says why."""


@dataclass(frozen=True)
class Runtime:
    """A container runtime with the options that work on this machine."""

    name: str  # "podman"
    binary: str  # its absolute path
    version: str
    options: tuple  # global options before the subcommand
    conf: str | None  # the CONTAINERS_CONF kit wrote for it, if it needs one

    def argv(self, *args) -> list:
        return [self.binary, *self.options, *(str(a) for a in args)]

    def env(self) -> dict:
        env = dict(os.environ)
        if self.conf:
            env["CONTAINERS_CONF"] = self.conf
        return env

    def call(
        self, *args, timeout: float | None = None, stdout=subprocess.PIPE, text=True
    ) -> subprocess.CompletedProcess:
        """The runtime's command ``args``, tethered (it ends with kit)."""
        return children.run(
            self.argv(*args),
            env=self.env(),
            stdout=stdout,
            text=text,
            errors="replace" if text else None,
            timeout=timeout,
        )

    def check(self, *args, what: str, timeout: float | None = None) -> str:
        """``call`` that raises Failed with ``what`` and the runtime's last line on an error."""
        try:
            proc = self.call(*args, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Failed(f"{what}: {self.name} took more than {timeout:g} s") from None
        if proc.returncode != 0:
            raise Failed(f"{what}: {last_line(proc.stderr)}", reason=last_line(proc.stderr))
        return proc.stdout

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "binary": self.binary,
            "version": self.version,
            "options": list(self.options),
            "conf": self.conf,
        }


def last_line(text: str) -> str:
    """The last line a tool said, made one line (its error, as podman and uv end with it)."""
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return one_line(lines[-1] if lines else "no output", 300)


_found: Runtime | None = None
_NO_PODMAN = (
    "podman is not installed (Debian: apt-get install podman runc; macOS: brew install "
    "podman, then podman machine init && podman machine start)"
)


def missing() -> str | None:
    """Why no runtime can be here, without starting anything (None: podman is on PATH; whether
    it starts a container is probed when one is first built or run)."""
    if sys.platform == "win32":
        return "containers: kit runs containers on Linux and macOS only"
    if shutil.which("podman") is None:
        docker = (
            " (docker is there, but kit's runs need podman's --preserve-fds)"
            if shutil.which("docker")
            else ""
        )
        return f"no container runtime works here: {_NO_PODMAN}{docker}"
    return None


def runtime() -> Runtime:
    """The runtime that starts containers here (probed once per runtime version, remembered);
    NoRuntime with the reason each candidate failed otherwise."""
    global _found
    if _found is not None:
        return _found
    if sys.platform == "win32":
        raise NoRuntime("containers: kit runs containers on Linux and macOS only")
    why = []
    podman = shutil.which("podman")
    if podman:
        try:
            found = _podman(podman)
            sweep_containers(found)  # once a process: what a crashed kit left
            _found = found
            return _found
        except NoRuntime as e:
            why.append(str(e))
    else:
        why.append(_NO_PODMAN)
    docker = shutil.which("docker")
    if docker:
        why.append(_docker_reason(docker))
    raise NoRuntime("no container runtime works here: " + "; ".join(why))


def _version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NoRuntime(f"{binary} does not start: {one_line(e)}") from None
    if out.returncode != 0:
        raise NoRuntime(f"{binary} --version failed: {last_line(out.stderr)}")
    return out.stdout.strip().split()[-1] if out.stdout.strip() else "unknown"


def _remembered() -> Path:
    return subdir("containers") / "runtime.json"


def _podman(binary: str) -> Runtime:
    version = _version(binary)
    try:
        kept = json.loads(read_small(_remembered()) or b"null")
        options, conf = tuple(kept["options"]), kept.get("conf")
        # what it remembers is one of kit's own option sets, and kit's own containers.conf:
        # a planted file never puts its own options on podman's command line
        if (
            kept.get("binary") == binary
            and kept.get("version") == version
            and (options, conf is not None) in _CANDIDATES
            and conf in (None, str(subdir("containers") / "containers.conf"))
            and (conf is None or read_small(conf) == _NO_ULIMITS.encode())
        ):
            return Runtime("podman", binary, version, options, conf)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # nothing remembered, or not what kit writes: probed again
    conf = _conf_file()
    errors = []
    with tempfile.TemporaryDirectory(dir=subdir("tmp"), prefix=f"ctr-{os.getpid()}-") as tmp:
        root = _probe_root(Path(tmp))
        for options, with_conf in _CANDIDATES:
            rt = Runtime("podman", binary, version, options, str(conf) if with_conf else None)
            err = _starts(rt, root)
            if err is None:
                write_bytes(_remembered(), json.dumps(rt.as_dict(), indent=1).encode())
                return rt
            errors.append(err)
    # the first option set's error is the plain runtime's; the last the most tailored one's
    raise NoRuntime(f"podman {version} cannot start a container here: {errors[-1]}")


def _conf_file() -> Path:
    path = subdir("containers") / "containers.conf"
    if read_small(path) == _NO_ULIMITS.encode():
        return path
    write_bytes(path, _NO_ULIMITS.encode())
    return path


def _probe_root(folder: Path) -> Path:
    """A root file system holding /bin/true and the libraries it loads: enough to start a
    container with no image (``--rootfs``), before any base exists."""
    root = folder / "root"
    true = Path(shutil.which("true") or "/bin/true").resolve()
    for d in ("bin", "proc", "sys", "dev", "etc", "tmp"):
        (root / d).mkdir(parents=True, exist_ok=True)
    shutil.copy2(true, root / "bin" / "true")
    try:
        ldd = subprocess.run(["ldd", str(true)], capture_output=True, text=True, timeout=30)
        libs = [w for w in ldd.stdout.split() if w.startswith("/")]
    except (OSError, subprocess.TimeoutExpired):
        libs = []
    for lib in libs:
        dest = root / lib.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(lib, dest)
    return root


def _starts(rt: Runtime, root: Path) -> str | None:
    """None when ``rt`` starts a container from ``root``; else the runtime's last line."""
    try:
        proc = rt.call(
            "run",
            "--rm",
            "--network=none",
            "--read-only",
            "--rootfs",
            str(root),
            "/bin/true",
            timeout=PROBE_SECONDS,
        )
    except subprocess.TimeoutExpired:
        return f"a container did not start within {PROBE_SECONDS} s"
    except OSError as e:
        return one_line(e)
    return None if proc.returncode == 0 else last_line(proc.stderr)


def _build_containers(rt: Runtime) -> list:
    """[(id, created, name)] of the runtime's build containers (buildah's, "external")."""
    proc = rt.call(
        "ps", "-a", "--external", "--format", "{{.ID}} {{.Created.Unix}} {{.Names}}", timeout=60
    )
    out = []
    for line in proc.stdout.splitlines() if proc.returncode == 0 else ():
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit() and parts[2].endswith("working-container"):
            out.append((parts[0], int(parts[1]), parts[2]))
    return out


@contextmanager
def building(rt: Runtime):
    """A build under way, noted with the build containers there before it: a kit killed
    midway leaves buildah's working container, which the next command removes (``sweep``),
    and no other (a user's own buildah work is never touched)."""
    note = subdir("containers") / f"building-{os.getpid()}-{threading.get_ident()}.json"
    write_bytes(
        note,
        json.dumps(
            {"started": int(time.time()) - 1, "before": [c[0] for c in _build_containers(rt)]}
        ).encode(),
    )
    try:
        yield
    finally:
        note.unlink(missing_ok=True)


def sweep_containers(rt: Runtime) -> int:
    """Remove kit's containers (named kit-PID-...) whose kit process is gone, what a machine's
    crash left that no tether lived to remove, and the build containers of builds whose kit
    was killed (their notes). Returns how many."""
    removed = 0
    for note in subdir("containers").glob("building-*.json"):
        parts = note.name.split("-")
        if len(parts) < 3 or not parts[1].isdigit() or alive(int(parts[1])):
            continue
        try:
            doc = json.loads(read_small(note) or b"null")
            started, before = int(doc["started"]), set(doc["before"])
        except (ValueError, KeyError, TypeError):
            note.unlink(missing_ok=True)
            continue
        left = [c[0] for c in _build_containers(rt) if c[1] >= started and c[0] not in before]
        if left:
            rt.call("rm", "-f", *left, timeout=300)  # a storage-only container too
            removed += len(left)
        note.unlink(missing_ok=True)
    proc = rt.call("ps", "-a", "--format", "{{.Names}}", "--filter", "name=^kit-", timeout=60)
    gone = []
    for name in proc.stdout.split() if proc.returncode == 0 else ():
        parts = name.split("-")
        if len(parts) == 3 and parts[1].isdigit() and not alive(int(parts[1])):
            gone.append(name)
    if gone:
        rt.call("rm", "-f", "--ignore", "--time", "0", *gone, timeout=300)
    return removed + len(gone)


def _docker_reason(binary: str) -> str:
    try:
        proc = subprocess.run(
            [binary, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"docker does not answer ({one_line(e)})"
    if proc.returncode != 0:
        return f"docker has no daemon to talk to ({last_line(proc.stderr)})"
    return (
        "docker is there, but kit's runs need podman: docker cannot pass kit's answer "
        "channel (an inherited descriptor, podman's --preserve-fds) into a container"
    )
