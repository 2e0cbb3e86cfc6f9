"""A real container runtime for tests: whether one works here, and one KIT_HOME per test session
in which the stack images are built once (a Debian bootstrap is ~40 s; the images are the
machine's, in podman's store, and their records are copied into the homes that use them)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

STACK = "np1-sk152"
# `kit run` of the container factor on the stack, as several tests store its pair
CONTAINER_PAIR = [
    "run",
    "--factor",
    "container",
    "--stack",
    STACK,
    "--n",
    "120",
    "--threads",
    "1",
    "--yes",
]


def unavailable() -> str | None:
    """Why no container can be built and run here (None: podman and debootstrap work)."""
    if shutil.which("podman") is None:
        return "podman is not installed (.ci/run installs it)"
    if shutil.which("debootstrap") is None:
        return "debootstrap is not installed (.ci/run installs it)"
    if os.geteuid() != 0:
        return "debootstrap needs root"
    return None


def build_images(home: Path, bases=("container", "trixie")) -> None:
    """``STACK``'s venv and its images on each of ``bases`` in ``home`` (kit's own CLI)."""
    from kit.cli import main

    env = dict(os.environ, KIT_HOME=str(home))
    old = dict(os.environ)
    os.environ.update(env)
    try:
        for base in bases:
            argv = ["stacks", "build", STACK, "--container"]
            if base != "container":
                argv += ["--base", base]
            assert main(argv) == 0, f"kit {' '.join(argv)} failed"
    finally:
        os.environ.clear()
        os.environ.update(old)


def share(built: Path, home: Path) -> None:
    """The image records (and the runtime's probe) of ``built`` in another KIT_HOME ``home``."""
    shutil.copytree(
        built / "containers",
        home / "containers",
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("building-*"),
    )


def kit_containers(pid: int | None = None) -> list:
    """The names of the containers kit started that are still there (``pid``: those of the kit
    process ``pid``, named kit-PID-...)."""
    out = subprocess.run(
        [
            "podman",
            "ps",
            "-a",
            "--format",
            "{{.Names}}",
            "--filter",
            f"name=^kit-{'' if pid is None else f'{pid}-'}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return out.stdout.split()


def left_by(pid: int, seconds: float = 30) -> list:
    """The containers of kit process ``pid`` still there after ``seconds`` (a removal under
    way is let finish: another test's podman calls share the machine)."""
    import time

    end = time.monotonic() + seconds
    while (left := kit_containers(pid)) and time.monotonic() < end:
        time.sleep(0.5)
    return left
