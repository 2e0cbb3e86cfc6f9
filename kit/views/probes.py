"""`kit stacks`'s section of probe stacks: the release scans' stacks under KIT_HOME."""

from __future__ import annotations


def probes_text(rows: list) -> str:
    """`kit stacks`'s section of probe stacks (rows marked "probe"): each with the stack it
    changes, the release it pins and its status; their folder named once (a path per row
    wraps into a column of fragments). "" when there is none."""
    import os

    from .fit import table

    probes = [r for r in rows if r.get("probe")]
    if not probes:
        return ""
    root = os.path.dirname(probes[0]["probe"]["folder"])
    return (f"\n\nprobe stacks (kit explain's release scans), each in {root}/NAME\n" + table(
        [[r["name"], r["probe"]["base"] or "?",
          f"{r['probe']['package']} {r['probe']['version']}" if r["probe"]["package"] else "?",
          r["status"] + (f": {r['reason']}" if r["reason"] else "")] for r in probes],
        ["probe", "of stack", "pins", "status"], wrap=(3,)))
