"""What each stack really is and does: its fingerprint's surprises, its thread control.

`kit stacks doctor` and `kit doctor` ask these questions; nothing here plans or stores runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import NamedTuple

from ..core import processes
from ..core.atomic import write_bytes
from .kinds import names, stack_kind
from .kinds.catalogue import CatalogueStack
from .launch import fingerprint
from .platforms import Platform

# OpenBLAS kernels that mean "this build did not recognise the CPU" on a modern x86_64
_GENERIC_KERNELS = {"prescott", "generic", "core2", "atom"}


class Problem(NamedTuple):
    """A surprise: ``code`` says which (what kit acts on), ``message`` says it (what is shown)."""

    code: str  # no-threadpoolctl | blas-mismatch | generic-kernel | threads-ignored
    message: str


def problems(fp: dict, expected_blas: str | None, cpu_flags=frozenset()) -> list:
    """A Problem per surprise in a fingerprint."""
    out = []
    pools = [p for p in fp.get("threadpools") or [] if p.get("user_api") == "blas"]
    if fp.get("threadpools") is None:
        out.append(
            Problem(
                "no-threadpoolctl",
                "threadpoolctl is not installed: BLAS and thread counts cannot be measured",
            )
        )
    apis = {str(p.get("internal_api")).lower() for p in pools}
    if expected_blas and pools and expected_blas.lower() not in apis:
        out.append(
            Problem(
                "blas-mismatch",
                f"expected {expected_blas} but threadpoolctl sees {', '.join(sorted(apis))}",
            )
        )
    for p in pools:
        kernel = str(p.get("architecture") or "").lower()
        if (
            p.get("internal_api") == "openblas"
            and kernel in _GENERIC_KERNELS
            and "avx2" in cpu_flags
        ):
            out.append(
                Problem(
                    "generic-kernel",
                    f"{p.get('owner')}'s OpenBLAS {p.get('version')} runs the generic "
                    f"'{p.get('architecture')}' kernel on an AVX2 CPU (it does not "
                    "recognise this CPU): slower, and its bits differ from a newer "
                    "OpenBLAS",
                )
            )
    return out


def stack_doctor(names_: list, plat: Platform) -> list:
    """Import each stack (the catalogue's for this platform and the external ones) and record
    what it really has: versions, BLAS, problems."""
    out = []
    for name in names_ or [n for n in names() if _here(n, plat)]:
        kind = stack_kind(name)
        st, why = kind.status(plat)
        row = {
            "name": name,
            "status": st,
            "expected_blas": kind.expected_blas(plat),
            **({"external": True} if kind.kind == "external" else {}),
            **({"problems": [why]} if st in ("broken", "unavailable") and why else {}),
        }
        if st == "built":
            try:
                command = kind.runnable().command
                fp = fingerprint(command)
                found = problems(fp, row["expected_blas"], plat.cpu_flags)
                row.update(measured=fp, command=command, problems=[p.message for p in found])
                if isinstance(kind, CatalogueStack):
                    write_bytes(
                        kind.d.venv() / "kit-doctor.json", json.dumps(fp, indent=1).encode()
                    )
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                row.update(status="broken", problems=[f"the interpreter does not import: {e}"])
        out.append(row)
    return out


def _here(name: str, plat: Platform) -> bool:
    kind = stack_kind(name)
    return not isinstance(kind, CatalogueStack) or plat.key in kind.d.platforms


def busy_cores(seconds: float = 0.5) -> float:
    """How many cores other work keeps busy right now (Linux: /proc/stat; elsewhere: load)."""

    def sample():
        with open("/proc/stat") as f:
            vals = [int(x) for x in f.readline().split()[1:]]
        return sum(vals), vals[3] + (vals[4] if len(vals) > 4 else 0)  # total, idle + iowait

    try:
        t0, i0 = sample()
        time.sleep(seconds)
        t1, i1 = sample()
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    total = max(t1 - t0, 1)
    return processes.cores() * (1 - (i1 - i0) / total)


def thread_probe(command: tuple, cores: int, attempts: int = 3) -> dict:
    """CPU/wall of a matrix product at 1 and at all cores: is the thread setting honoured?

    A busy machine cannot show n threads using n cores, so a failed probe is repeated and, if
    other work kept the cores busy meanwhile, reported as inconclusive rather than blamed on
    the stack (``honoured`` is then None).
    """
    out = {}
    for attempt in range(attempts):
        busy = busy_cores()
        one = fingerprint(command, 1, "--probe-threads")
        many = fingerprint(command, cores, "--probe-threads")
        r1, rn = one["cpu_s"] / one["wall_s"], many["cpu_s"] / many["wall_s"]
        honoured, why = judge(r1, rn, cores, busy)
        out = {
            "threads": cores,
            "cpu_per_wall_1": r1,
            "cpu_per_wall_n": rn,
            "honoured": honoured,
            "not_judged": why,
            "busy_cores": round(busy, 2),
            "attempts": attempt + 1,
        }
        if honoured:
            return out
    return out


def judge(r1: float, rn: float, cores: int, busy: float) -> tuple:
    """(honoured: True, False or None, why not judged) from CPU per wall second at 1 and at
    ``cores`` threads. Honoured: n threads show at least half the ideal n-fold CPU of one
    (0.38 against 0.12 is not "yes": one thread that keeps no core busy says nothing)."""
    if cores < 2:
        return True, None
    if r1 < 0.5:  # the one-thread product did not keep one core busy: too short, or starved
        return None, f"CPU/wall at 1 thread only {r1:.2f}: the probe kept no core busy"
    if rn >= r1 * (1 + 0.5 * (cores - 1)):
        return True, None
    if busy >= 0.5:  # other work left too little room for n threads to show
        return None, f"busy: other work kept {busy:.1f} cores busy"
    return False, None
