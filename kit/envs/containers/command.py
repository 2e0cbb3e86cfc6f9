"""``InImage``: how a worker is started inside a stack image, confined.

Every container kit starts runs with no network, a read-only root, every capability dropped, no
new privileges, the user who runs kit (never more), a private /tmp, and nothing of the host but
the folders a run needs, each at its own path (so a run's paths read the same inside): kit's
worker code and the datasets and pipeline files read-only, the runs' folders and logs writable.
Its answers come on kit's channel, passed as descriptor 3 (``--preserve-fds``); its host name is
the host's, so a fingerprint compares what the image changes, not the container's name.
"""

from __future__ import annotations

import os
import platform
import secrets
from dataclasses import dataclass

from .runtime import Runtime

CHANNEL_FD = 3  # the first descriptor a runtime passes on (--preserve-fds=1)
# variables that change a numeric result and pass from kit's worker environment into the
# container (every one the worker's fingerprint records, and its own)
_PASSED = ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHASHSEED", "CUBLAS_WORKSPACE_CONFIG")


@dataclass(frozen=True)
class InImage:
    """A worker's interpreter inside an image: what a Stack's ``command`` is for a container
    stack (kit.envs.launch starts it)."""

    runtime: Runtime
    image: str       # the image id (sha256:...): what ran is exactly what was recorded
    python: str      # the interpreter inside the image

    def argv(self, name: str, env: dict, cwd, mounts, stdin: bool) -> list:
        """``runtime run`` of the worker's interpreter in the image; ``mounts``: [(path,
        writable)], each bound at its own path; ``env``: the worker's environment, of which
        what changes a result is passed in."""
        from ...worker.fingerprint import ENV_VARS

        # --read-only keeps /tmp, /var/tmp and /run as private tmpfs (podman's default); no
        # --rm: the worker's tether removes it by name, the one remover (podman's own removal
        # racing the tether's left a container half-removed under load)
        opts = ["run", "--name", name, "--network=none", "--read-only", "--cap-drop=all",
                "--security-opt=no-new-privileges", "--pull=never",
                "--log-driver=none", f"--user={os.getuid()}:{os.getgid()}",
                f"--hostname={platform.node()}", "--preserve-fds=1",
                "-e", f"KIT_CHANNEL={CHANNEL_FD}", "-e", "HOME=/tmp"]
        if stdin:
            opts.append("-i")
        if cwd is not None:
            opts += ["-w", str(cwd)]
        for path, writable in mounts:
            opts += ["-v", f"{path}:{path}:{'rw' if writable else 'ro'}"]
        for key in (*ENV_VARS, *_PASSED):
            if key in env:
                opts += ["-e", f"{key}={env[key]}"]
        return self.runtime.argv(*opts, self.image, self.python)

    def removal(self, name: str) -> list:
        """The command that removes the container ``name``, whatever state it is in."""
        return self.runtime.argv("rm", "-f", "--ignore", "--time", "0", name)


def container_name() -> str:
    """A name that says whose container it is (kit's pid) and is unique."""
    return f"kit-{os.getpid()}-{secrets.token_hex(4)}"
