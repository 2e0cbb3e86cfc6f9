"""What the worker's interpreter really is: versions, BLAS, CPU, OS and thread settings."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

# Every environment variable that can change how many threads run or which kernels they use.
ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "OPENBLAS_VERBOSE",
    "MKL_CBWR",
    "MKL_ENABLE_INSTRUCTIONS",
    "MKL_THREADING_LAYER",
    "NPY_DISABLE_CPU_FEATURES",
    "KMP_DETERMINISTIC_REDUCTION",
    "PYTHONHASHSEED",
    "CUBLAS_WORKSPACE_CONFIG",
)


def _os_release():
    """The operating system's own name for its release (/etc/os-release's PRETTY_NAME; on
    macOS its product version), "" where it says none."""
    if sys.platform == "darwin":
        return "macOS " + platform.mac_ver()[0]
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f.read(65536).splitlines():
                    if line.startswith("PRETTY_NAME="):
                        return line.split("=", 1)[1].strip().strip('"')[:200]
        except OSError:
            continue
    return ""


def cpu_model():
    """The CPU's model name as the OS reports it (shared with kit.runs.executing.on_node)."""
    if sys.platform == "darwin":
        try:
            return subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _rosetta():
    """True when this process is an x86_64 binary translated by Rosetta 2 on Apple silicon."""
    if sys.platform != "darwin":
        return False
    try:
        out = subprocess.run(
            ["sysctl", "-n", "sysctl.proc_translated"], capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return False
    return out == "1"


def _version(module):
    mod = sys.modules.get(module)
    if mod is None:
        try:
            mod = __import__(module)
        except ImportError:
            return None
    return getattr(mod, "__version__", None)


def _owner(filepath):
    """The package a runtime library ships with (numpy.libs -> numpy), or its directory."""
    parts = os.path.normpath(filepath or "?").split(os.sep)
    for name in reversed(parts[:-1]):
        name = name.lstrip(".")
        if name and name != "libs":
            return name[:-5] if name.endswith(".libs") else name
    return "?"


def _threadpools():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    keep = (
        "user_api",
        "internal_api",
        "prefix",
        "version",
        "num_threads",
        "threading_layer",
        "architecture",
        "filepath",
    )
    pools = [
        dict({k: p.get(k) for k in keep}, owner=_owner(p.get("filepath")))
        for p in threadpool_info()
    ]
    # load order varies between processes; sort so manifests compare attribute by attribute
    return sorted(pools, key=lambda p: (str(p["user_api"]), p["owner"], str(p["filepath"])))


def _blas_build():
    """The BLAS numpy was built against, from numpy's own build information: it names the BLAS
    where threadpoolctl cannot see one (Apple's Accelerate is no library threadpoolctl knows)."""
    import numpy

    try:  # numpy >= 1.25
        blas = numpy.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
        if blas.get("name"):
            return {
                "name": blas.get("name"),
                "version": blas.get("version"),
                "source": "numpy.show_config",
            }
    except (TypeError, AttributeError, ValueError):  # older numpy: no mode="dicts"
        cfg = getattr(numpy, "__config__", None)
        for key in (
            "blas_ilp64_opt_info",
            "blas_opt_info",
            "openblas_info",
            "blas_mkl_info",
            "accelerate_info",
        ):
            info = getattr(cfg, key, None)
            if info:
                libs = info.get("libraries") or [key.replace("_info", "")]
                return {"name": ",".join(libs), "version": None, "source": "numpy.__config__"}
    return None


def installed(names):
    """{name: its installed version, None where it is not} of distribution ``names``, read
    from their metadata (importlib.metadata: the standard library on Python 3.8 and later)."""
    from importlib import metadata

    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def fingerprint(include_torch=False):
    import numpy  # noqa: F401  (loads the BLAS so threadpoolctl can see it)

    for optional in ("scipy.linalg", "sklearn"):  # torch stacks have neither
        try:
            __import__(optional)
        except ImportError:
            pass

    pkgs = {
        name: _version(mod)
        for name, mod in (
            ("numpy", "numpy"),
            ("scipy", "scipy"),
            ("scikit-learn", "sklearn"),
            ("threadpoolctl", "threadpoolctl"),
        )
    }
    torch = None
    if include_torch and "torch" not in sys.modules:
        try:
            import torch  # noqa: F401
        except ImportError:
            pass
    if "torch" in sys.modules:
        from .torch_mlp import torch_facts

        pkgs["torch"] = _version("torch")
        torch = torch_facts()
    return {
        "torch": torch,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "machine": platform.machine(),
        "rosetta": _rosetta(),
        "os": sys.platform,
        "platform": platform.platform(),
        "os_release": _os_release(),
        "libc": " ".join(platform.libc_ver()).strip(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "host": platform.node(),
        "packages": pkgs,
        "threadpools": _threadpools(),
        "blas_build": _blas_build(),
        "env": {k: os.environ[k] for k in ENV_VARS if k in os.environ},
    }
