"""What `kit doctor` and `kit store check` print: the health of the stacks and of the store."""

from __future__ import annotations

from .fit import para, table
from .tables import blas_note


def doctor_text(rep: dict) -> str:
    n = rep["null_experiment"]
    # its title lines fitted as paragraphs are: 77 columns at COLUMNS=60 before
    out = [
        para(
            f"null experiment ({n['dataset']}): {'ok' if n['ok'] else 'FAILED'} - "
            f"{n['identical']} of {n['pairs']} repeated pairs bitwise identical",
            "  ",
            "",
        )
    ]
    w = rep.get("warm_workers")
    if w:
        out.append(
            para(
                f"warm workers: {'ok' if w['ok'] else 'FAILED'} - {w['identical']} of "
                f"{w['pairs']} fresh/warm pairs bitwise identical",
                "  ",
                "",
            )
        )
    out.append("")
    rows, notes = [], []
    for s in rep["stacks"]:
        t = s["threads"]
        rows.append(
            [
                s["name"],
                f"{t['cpu_per_wall_1']:.2f}",
                f"{t['cpu_per_wall_n']:.2f}",
                {True: "yes", False: "NO", None: "not judged"}[t["honoured"]],
            ]
        )
        notes.append(blas_note(s["blas"], s.get("blas_build")))
    # each stack's BLAS libraries on lines of their own under its row: in a column of their
    # own they were squeezed to ~12 characters at 80 columns (about 80 lines of table)
    out.append(
        table(
            rows,
            [
                "stack",
                "CPU/wall 1 thread",
                f"CPU/wall {rep['stacks'][0]['threads']['threads']} threads",
                "threads honoured",
            ],
            notes=notes,
        )
    )
    unjudged = [s for s in rep["stacks"] if s["threads"]["honoured"] is None]
    if unjudged:
        why = "; ".join(sorted({s["threads"].get("not_judged") or "busy" for s in unjudged}))
        out += [
            "",
            para(
                f"Thread control was not judged for {', '.join(s['name'] for s in unjudged)} "
                f"({why}); run `kit doctor` again when the machine is idle."
            ),
        ]
    if rep["problems"]:
        out += ["", "Problems and remedies:"]
        out += [
            para(f"{p.get('stack', 'machine')}: {p['problem']}", "  ", "- ")
            + "\n"
            + para(f"remedy: {p['remedy']}", "    ", "  ")
            for p in rep["problems"]
        ]
    else:  # what was not judged is not called fine
        out += ["", "No problems found" + (" in what was judged." if unjudged else ".")]
    return "\n".join(out)


def store_check_text(rep: dict) -> str:
    out = [f"{rep['arrays']} arrays recorded, {rep['files']} files checked"]
    if rep["ok"]:
        return para(out[0] + ": every array and dataset file is what its runs recorded.")
    for d in rep["damaged"]:
        out.append(f"damaged array {d['blob'][:12]} ({d['why']}), used by {len(d['runs'])} run(s)")
    for m in rep["missing"]:
        out.append(f"missing array {m['blob'][:12]} of {len(m['runs'])} run(s) made here")
    for line in rep.get("set_aside", ()):
        out.append(line)
    for n in rep.get("outside", ()):
        out.append(
            f"{n['note']}: a killed write left {', '.join(n['left'][:3])} outside KIT_HOME; "
            "kit removes nothing there on a note's word: remove it if it is yours (repair "
            "forgets the note)"
        )
    for f in rep.get("home_files", ()):
        out.append(
            f"{f['path']} {f['why']}, not the file kit writes there: repair moves it aside (kept)"
        )
    for d in rep.get("damaged_runs", ()):
        out.append(f"damaged run {d['run']}: {d['why']}")
    for d in rep.get("damaged_records", ()):
        out.append(f"damaged record of dataset {d['dataset']}: {d['why']}")
    lacks = rep.get("index_lacks") or {}
    if any(lacks.get(k) for k in ("runs", "pairs", "datasets")):
        runs = ", ".join(r[:12] for r in lacks["runs"][:5]) + (
            ", ..." if len(lacks["runs"]) > 5 else ""
        )
        out.append(
            f"the index lacks what the records beside the arrays hold: "
            f"{len(lacks['runs'])} run(s){f' ({runs})' if runs else ''}, "
            f"{len(lacks['pairs'])} pair(s), {len(lacks['datasets'])} dataset record(s): "
            "repair puts them back"
        )
    for d in rep.get("damaged_kept", ()):
        out.append(f"{d['path']} {d['why']}: repair removes it (the index keeps its rows)")
    if rep.get("damaged_runs") or rep["damaged"] or rep["missing"]:
        n = rep.get("dependents", {})
        out.append(
            f"what depends on them goes with them: {len(rep['runs_affected'])} run(s) "
            f"(with those trained on them), {n.get('pairs', 0)} pair(s), "
            f"{n.get('comparisons', 0) + n.get('verdicts', 0)} cached comparison(s) and "
            "verdict(s)"
        )
    if rep["orphans"]:
        out.append(f"{rep['orphans']} array file(s) that no run refers to")
    if rep.get("unindexed"):
        out.append(
            f"{rep['unindexed']} array file(s) older than the index that no run refers to: "
            f"repair moves them to {rep['unindexed_dir']} (kept, never deleted)"
        )
    for name, why in rep["datasets"].items():
        out.append(f"dataset file {name[:12]}: {why}")
    if rep["repaired"]:
        out.append(
            f"repaired: dropped {len(rep['runs_affected'])} run(s) and the damaged files"
            + (
                f"; run these factors again: {', '.join(rep['factors_to_rerun'])}"
                if rep["factors_to_rerun"]
                else ""
            )
        )
    else:
        out.append("`kit store check --repair` drops them; the next `kit run` makes them again")
    return "\n".join(out)


def file_doctor_text(rep: dict) -> str:
    """kit.app.doctor.file_doctor's answer: pass, or the loose generator's line naming its outputs."""
    head = f"null experiment of {rep['name']} ({rep['pipeline'][:12]}), {rep['pairs']} repeated pair(s)"
    if rep["ok"]:
        return para(
            f"{head}: ok - every output ({', '.join(rep['outputs'])}) bitwise "
            f"identical; the named seeds hold every generator measured",
            "",
            "",
        )
    return para(f"{head}: FAILED - LOOSE GENERATOR: {rep['loose_line']}", "", "")
