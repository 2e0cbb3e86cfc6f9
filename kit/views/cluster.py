"""The cluster in words: its settings (`kit cluster show`) and one row per worker (`check`)."""

from __future__ import annotations

from .fit import para, table
from .tables import blas_text


def settings_text(path: str, exists: bool, conf: dict) -> str:
    head = (
        f"settings: {path}"
        if exists
        else f"settings: {path} does not exist; these are the defaults (`kit cluster init` writes "
        "the file to edit)"
    )
    rows = []
    for kind, values in conf.items():
        plain = {
            k: v
            for k, v in values.items()
            if not (isinstance(v, dict) and k != "extra" and k != "env")
        }
        rows += [[kind, key, repr(value)] for key, value in plain.items()]
        for name, table_ in values.items():  # [jobqueue.CLASS]: one node class's job template
            if name not in plain:
                rows += [[f"{kind}.{name}", key, repr(value)] for key, value in table_.items()]
    return para(head) + "\n" + table(rows, ["section", "setting", "value"], wrap=(2,))


def job_scripts_text(system: str, scripts: dict) -> str:
    """Each node class's job script under a header line (nothing was submitted)."""
    out = []
    for node_class, script in scripts.items():
        what = f"node class {node_class}" if node_class else "every job (no node classes)"
        out.append(f"# --- {system} job script of {what} ---\n{script.rstrip()}\n")
    return "\n".join(out).rstrip()


def check_text(rows: list, target: str) -> str:
    out = []
    for r in rows:
        pools = r["blas"]
        blas = (
            pools
            if isinstance(pools, str)
            else blas_text(pools["threadpools"], pools["blas_build"])
        )
        stacks = ", ".join(f"{n} {s}" for n, s in r["stacks"].items()) or "-"
        out.append([r["worker"], r["host"], r["class"], r["cores"], r["cpu"], blas, stacks])
    classes = sorted({r["class"] for r in rows})
    tail = (
        f"{len(rows)} worker(s) of {target} in {len(classes)} node class(es): "
        + ", ".join(classes)
        + ". Runs go to the largest class; --factor host --hosts "
        "A,B compares two."
    )
    return (
        table(
            out,
            [
                "worker",
                "host",
                "node class",
                "cores",
                "CPU",
                "BLAS (kit's Python)",
                "stacks (against this machine's)",
            ],
            wrap=(4, 5, 6),
        )
        + "\n"
        + para(tail)
    )
