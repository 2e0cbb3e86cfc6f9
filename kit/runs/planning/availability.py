"""Which factors and torch devices can run here, why not, and whether their stacks are built."""

from __future__ import annotations

from ...core import factors
from ...core.errors import KitError
from ...envs.catalogue import HOST
from ...envs.descriptions import descriptions
from ...envs.kinds import stack_kind
from ...envs.platforms import Platform, detect
from .options import PlanOptions, default_threads
from .plan import required_stacks
from .stack_pairs import stack_pairs, unbuilt_of


def availability(
    plat: Platform | None = None, device: str | None = None, torch_stack: str | None = None
) -> list:
    """Every factor with whether it can run here, why not, and whether its stacks are built."""
    plat = plat or detect()
    out = []
    for f, what in descriptions().items():
        row = {
            "factor": f,
            "description": what,
            "stacks": [],
            "available": True,
            "reason": None,
            "built": True,
        }
        if f == "threads" and len(default_threads()) < 2:
            row.update(available=False, reason="this machine has one core")
        if factors.FACTORS[f].planned == factors.HOSTS:
            row.update(
                available=False,
                reason="needs a cluster of two node types: kit run "
                "--factor host --cluster ... --hosts A,B (docs/cluster.md)",
            )
        if factors.FACTORS[f].planned in (factors.STACKS, factors.TORCH):
            try:
                opts = PlanOptions(device=device, torch_stack=torch_stack)
                row["stacks"] = [s for s in required_stacks([f], plat, opts=opts) if s != HOST]
            except KitError as e:
                row.update(available=False, reason=str(e), built=False)
            for name in row["stacks"]:
                st, why = stack_kind(name).status(plat)
                if st == "unavailable" and row["available"]:
                    row.update(available=False, reason=f"stack {name}: {why}")
                row["built"] = row["built"] and st == "built"
            if factors.FACTORS[f].planned == factors.STACKS and row["stacks"]:
                # which of its pairs `kit run --built` runs: those whose two stacks are built
                row["pairs"] = [
                    {"label": p[4], "not_built": unbuilt_of(p, plat)} for p in stack_pairs(f, plat)
                ]
        out.append(row)
    return out


def devices(plat: Platform | None = None) -> dict:
    """torch devices: None where usable here, else the one-line reason (for the CLI and TUI)."""
    plat = plat or detect()
    return {d: plat.device_reason(d) for d in ("cpu", "mps", "cuda")}
