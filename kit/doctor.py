"""What each built stack really has: import it, read its fingerprint, flag surprises."""

from __future__ import annotations

import json
import subprocess

from .atomic import write_bytes
from .platforms import Platform
from .runner import worker_env
from .spec import RunSpec
from .stacks import built_stack, definitions

# OpenBLAS kernels that mean "this build did not recognise the CPU" on a modern x86_64
_GENERIC_KERNELS = {"prescott", "generic", "core2", "atom"}


def fingerprint(command: tuple, threads: int = 1) -> dict:
    """Run the worker's --fingerprint in an interpreter, with the worker's environment."""
    spec = RunSpec(dataset="", stack="", stack_id="", threads=threads)
    proc = subprocess.run([*command, "-m", "kit.worker", "--fingerprint"], env=worker_env(spec),
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(last)
    return json.loads(proc.stdout)


def problems(fp: dict, expected_blas: str | None, cpu_flags=frozenset()) -> list:
    """One line per surprise in a fingerprint, each with what to do about it."""
    out = []
    pools = [p for p in fp.get("threadpools") or [] if p.get("user_api") == "blas"]
    if fp.get("threadpools") is None:
        out.append("threadpoolctl is not installed: BLAS and thread counts cannot be measured")
    apis = {str(p.get("internal_api")).lower() for p in pools}
    if expected_blas and pools and expected_blas.lower() not in apis:
        out.append(f"expected {expected_blas} but threadpoolctl sees {', '.join(sorted(apis))}")
    for p in pools:
        kernel = str(p.get("architecture") or "").lower()
        if p.get("internal_api") == "openblas" and kernel in _GENERIC_KERNELS and "avx2" in cpu_flags:
            out.append(f"{p.get('owner')}'s OpenBLAS {p.get('version')} runs the generic "
                       f"'{p.get('architecture')}' kernel on an AVX2 CPU (it does not recognise "
                       "this CPU): slower, and its bits differ from a newer OpenBLAS")
    return out


def stack_doctor(names, plat: Platform) -> list:
    defs = definitions()
    out = []
    for name in names or [n for n, d in defs.items() if plat.key in d.platforms]:
        d = defs[name]
        stack = built_stack(d, plat)
        row = {"name": name, "status": "built" if stack else "not built",
               "expected_blas": d.blas.get(plat.key)}
        if stack:
            try:
                fp = fingerprint(stack.command)
                row.update(measured=fp, problems=problems(fp, row["expected_blas"], plat.cpu_flags))
                write_bytes(d.venv() / "kit-doctor.json", json.dumps(fp, indent=1).encode())
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                row.update(status="broken", problems=[f"the interpreter does not import: {e}"])
        out.append(row)
    return out
