"""Facts about the machine that decide which stacks and factors can run here.

Everything platform-specific is read once into a ``Platform`` value, so tests can inject the
facts of a Mac with or without Rosetta, or of a machine that lacks an interpreter.
"""

from __future__ import annotations

import os
import platform as _platform
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

ROSETTA_HINT = "softwareupdate --install-rosetta --agree-to-license"


@dataclass(frozen=True)
class Platform:
    system: str  # "darwin" | "linux" | ...
    machine: str  # "arm64" | "x86_64" | ...
    macos_version: tuple = ()  # (14, 5) on macOS
    rosetta: bool = False  # Rosetta 2 can run x86_64 binaries here
    cpu_flags: frozenset = field(default_factory=frozenset)
    downloads: bool = True  # uv may download interpreters
    cuda_devices: tuple = ()  # NVIDIA GPUs nvidia-smi lists

    @property
    def key(self) -> str:
        """The catalogue's platform name: macos-arm64, linux-x86_64, ..."""
        system = {"darwin": "macos"}.get(self.system, self.system)
        machine = {"aarch64": "arm64", "amd64": "x86_64"}.get(self.machine, self.machine)
        return f"{system}-{machine}"

    @property
    def apple_silicon(self) -> bool:
        return self.key == "macos-arm64"

    def device_reason(self, device: str) -> str | None:
        """Why a torch device cannot run here, in one line; None if it can."""
        if device == "mps" and not (self.apple_silicon and self.macos_version >= (12, 3)):
            return (
                f"MPS needs Apple silicon and macOS 12.3 or later (this is {self.key}"
                + (
                    f", macOS {'.'.join(map(str, self.macos_version))}"
                    if self.macos_version
                    else ""
                )
                + ")"
            )
        if device == "cuda" and not self.cuda_devices:
            return (
                "no CUDA device visible (nvidia-smi and /proc/driver/nvidia list none, or "
                "CUDA_VISIBLE_DEVICES hides them)"
            )
        if device not in ("cpu", "mps", "cuda"):
            return f"unknown device {device!r}"
        return None


def _rosetta_available() -> bool:
    # arch(1) fails at once when Rosetta 2 is not installed
    try:
        return (
            subprocess.run(
                ["/usr/bin/arch", "-x86_64", "/usr/bin/true"], capture_output=True, timeout=20
            ).returncode
            == 0
        )
    except (OSError, subprocess.SubprocessError):
        return False


def _cpu_flags() -> frozenset:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def _native_machine() -> str:
    machine = _platform.machine()
    # an x86_64 Python under Rosetta reports x86_64; the hardware is still Apple silicon
    if sys.platform == "darwin" and machine == "x86_64":
        try:
            out = subprocess.run(
                ["sysctl", "-n", "sysctl.proc_translated"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.strip()
            if out == "1":
                return "arm64"
        except (OSError, subprocess.SubprocessError):
            pass
    return machine


def detect() -> Platform:
    system = sys.platform
    macos: tuple[int, ...] = ()
    if system == "darwin":
        macos = tuple(int(x) for x in _platform.mac_ver()[0].split(".")[:2] if x.isdigit())
    machine = _native_machine()
    downloads = os.environ.get("UV_PYTHON_DOWNLOADS", "automatic") not in ("never", "manual")
    return Platform(
        system,
        machine,
        macos,
        rosetta=system == "darwin" and machine == "arm64" and _rosetta_available(),
        cpu_flags=_cpu_flags(),
        downloads=downloads,
        cuda_devices=_cuda_devices(),
    )


def _cuda_devices(proc: str = "/proc/driver/nvidia/gpus") -> tuple:
    """The NVIDIA GPUs this process may use: nvidia-smi's list, else the driver's /proc listing
    (containers often lack nvidia-smi); none when CUDA_VISIBLE_DEVICES hides them all."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", "x").strip() in ("", "-1"):
        return ()
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
            found = tuple(ln.strip() for ln in out.stdout.splitlines() if ln.startswith("GPU "))
            if found:
                return found
        except (OSError, subprocess.SubprocessError):
            pass
    return _proc_gpus(proc)


def _proc_gpus(proc: str) -> tuple:
    out = []
    try:
        entries = sorted(os.listdir(proc))
    except OSError:
        return ()
    for i, bus in enumerate(entries):
        model = "NVIDIA GPU"
        try:
            with open(os.path.join(proc, bus, "information")) as f:
                for line in f:
                    if line.startswith("Model:"):
                        model = line.split(":", 1)[1].strip()
        except OSError:
            pass
        out.append(f"GPU {i}: {model} (PCI {bus}, from the driver's /proc listing)")
    return tuple(out)
