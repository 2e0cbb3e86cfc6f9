"""`kit stacks`'s sections of stacks under KIT_HOME: release scans' probes, pipelines' derived stacks."""

from __future__ import annotations

import os


def probes_text(rows: list) -> str:
    """`kit stacks`'s section of probe stacks (rows marked "probe"): each with the stack it
    changes, the release it pins and its status; their folder named once (a path per row
    wraps into a column of fragments). "" when there is none."""
    from .fit import table

    probes = [r for r in rows if r.get("probe")]
    if not probes:
        return ""
    root = os.path.dirname(probes[0]["probe"]["folder"])
    return f"\n\nprobe stacks (kit explain's release scans), each in {root}/NAME\n" + table(
        [
            [
                r["name"],
                r["probe"]["base"] or "?",
                f"{r['probe']['package']} {r['probe']['version']}"
                if r["probe"]["package"]
                else "?",
                r["status"] + (f": {r['reason']}" if r["reason"] else ""),
            ]
            for r in probes
        ],
        ["probe", "of stack", "pins", "status"],
        wrap=(3,),
    )


def derived_text(rows: list) -> str:
    """`kit stacks`'s section of derived stacks (rows marked "derived"): each with its base
    stack, the packages a pipeline's REQUIRES adds and its status; "" when there is none."""
    from .fit import table

    derived = [r for r in rows if r.get("derived")]
    if not derived:
        return ""
    root = os.path.dirname(derived[0]["derived"]["folder"])
    return (
        f"\n\nderived stacks (a pipeline's REQUIRES added to a stack), each in {root}/NAME\n"
        + table(
            [
                [
                    r["name"],
                    r["derived"]["base"] or "?",
                    ", ".join(r["derived"]["requires"]) or "?",
                    r["status"] + (f": {r['reason']}" if r["reason"] else ""),
                ]
                for r in derived
            ],
            ["derived", "of stack", "adds", "status"],
            wrap=(2, 3),
        )
    )
