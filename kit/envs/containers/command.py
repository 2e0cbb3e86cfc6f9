"""``InImage``: how a worker is started inside a stack image by podman, confined.

Every container kit starts runs with no network, a read-only root, every capability dropped, no
new privileges, the user who runs kit (never more), a private /tmp, and nothing of the host but
the folders a run needs, each at its own path (so a run's paths read the same inside): kit's
worker code and the datasets and pipeline files read-only, the runs' folders writable (the HPC
routes, Charliecloud and Apptainer, hold to the same: kit.envs.containers.routes).
Its answers come on kit's channel, passed as descriptor 3 (``--preserve-fds``); its host name is
the host's, so a fingerprint compares what the image changes, not the container's name.
"""

from __future__ import annotations

import os
import platform
import secrets
from dataclasses import dataclass

from .inside import passed
from .routes import InApptainer, InCharliecloud
from .runtime import Runtime


@dataclass(frozen=True)
class InImage:
    """A worker's interpreter inside an image: what a Stack's ``command`` is for a container
    stack (kit.envs.launch starts it)."""

    runtime: Runtime
    image: str  # the image id (sha256:...): what ran is exactly what was recorded
    python: str  # the interpreter inside the image

    route = "podman"

    def argv(self, name: str, env: dict, cwd, mounts, stdin: bool) -> list:
        """``runtime run`` of the worker's interpreter in the image; ``mounts``: [(path,
        writable)], each bound at its own path; ``env``: the worker's environment, of which
        what changes a result is passed in."""
        # --read-only keeps /tmp, /var/tmp and /run as private tmpfs (podman's default); no
        # --rm: the worker's tether removes it by name, the one remover (podman's own removal
        # racing the tether's left a container half-removed under load)
        opts = [
            "run",
            "--name",
            name,
            "--network=none",
            "--read-only",
            "--cap-drop=all",
            "--security-opt=no-new-privileges",
            "--pull=never",
            "--log-driver=none",
            f"--user={os.getuid()}:{os.getgid()}",
            f"--hostname={platform.node()}",
            "--preserve-fds=1",
        ]
        if stdin:
            opts.append("-i")
        if cwd is not None:
            opts += ["-w", str(cwd)]
        for path, writable in mounts:
            opts += ["-v", f"{path}:{path}:{'rw' if writable else 'ro'}"]
        for key, value in passed(env).items():
            opts += ["-e", f"{key}={value}"]
        return self.runtime.argv(*opts, self.image, self.python)

    def removal(self, name: str) -> list:
        """The command that removes the container ``name``, whatever state it is in."""
        return self.runtime.argv("rm", "-f", "--ignore", "--time", "0", name)

    def env(self) -> dict:
        """What the runtime's own command needs in its environment."""
        return self.runtime.env()


# every way a worker runs inside an image: podman's, and the HPC routes (kit.envs.containers.routes)
CONTAINED = (InImage, InCharliecloud, InApptainer)


def container_name() -> str:
    """A name that says whose container it is (kit's pid) and is unique."""
    return f"kit-{os.getpid()}-{secrets.token_hex(4)}"
