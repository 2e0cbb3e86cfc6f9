"""What a worker's environment is inside any container: its channel, a HOME, what changes a result."""

from __future__ import annotations

CHANNEL_FD = 3  # the first descriptor a runtime passes on (podman's --preserve-fds=1)
# variables that change a numeric result and pass from kit's worker environment into the
# container (every one the worker's fingerprint records, and its own)
_PASSED = ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHASHSEED", "CUBLAS_WORKSPACE_CONFIG")


def passed(env: dict) -> dict:
    """The environment a worker gets inside any container: its channel, a HOME it may write,
    and the variables of the worker's environment that change a numeric result."""
    from ...worker.fingerprint import ENV_VARS

    out = {"KIT_CHANNEL": str(CHANNEL_FD), "HOME": "/tmp"}
    out.update({k: env[k] for k in (*ENV_VARS, *_PASSED) if k in env})
    return out
