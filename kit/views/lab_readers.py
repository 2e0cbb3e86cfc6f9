"""A lab pipeline's verdicts, advice and report as text, from kit.analysis.verdicts'
output_verdicts and kit.analysis.advice's output_advice (nothing computed here)."""

from __future__ import annotations

from ..core.numbers import fmt
from . import quoting
from .fit import para, table
from .lab import lab_budget_text, shape_line


def _head(d: dict) -> str:
    return f"pipeline {d['name']} ({d['pipeline'][:12]})"


def lab_verdicts_text(v: dict) -> str:
    """Per factor: each verdict's counts over the runs and the pairs that changed it; with one
    model, its accuracy's spread across the runs."""
    head = _head(v)
    if v["why"]:
        return f"{head}: {v['why']}"
    out = [head + f": models {', '.join(v['models'])}, scored against {v['truth']}"]
    for line in v["unfit"]:
        out.append(para(f"UNFIT: {line}; left out", "", ""))
    if not v["factors"]:
        out.append(f"no pairs with verdicts yet (kit run --pipeline {v['name']} --factor seed)")
        return "\n".join(out)
    if len(v["models"]) == 1:
        m = v["models"][0]
        rows = [[f, str(len(r["runs"])), fmt(r["spread"][m]["min"]), fmt(r["spread"][m]["max"]),
                 fmt(r["spread"][m]["sd"])] for f, r in v["factors"].items()]
        out.append(f"one model ({m}): no pair to compare; the spread of its accuracy per factor")
        out.append(table(rows, ["factor", "runs", "min accuracy", "max accuracy", "sd"]))
        return "\n".join(out)
    rows = []
    for f, r in v["factors"].items():
        for key, row in r["verdicts"].items():
            c = row["counts"]
            lo, hi = min(row["diff"].values()), max(row["diff"].values())
            rows.append([f, key, f"{c['>']}/{c['<']}/{c['=']}",
                         fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}..{fmt(hi)}",
                         "holds" if row["stable"] else f"CHANGES in {row['changed']} of "
                                                        f"{r['pairs']}"])
    out.append(table(rows, ["factor", "b-a metric", "runs >/</=", "difference", "across pairs"],
                     wrap=(1,)))
    moved = sorted({f for f, r in v["factors"].items()
                    for row in r["verdicts"].values() if not row["stable"]})
    out.append(para("a conclusion changes with " + ", ".join(moved) + ": it is a draw of that "
                    "factor, not a property of the models" if moved else
                    "every verdict holds across every factor's pairs", "", ""))
    return "\n".join(out)


def lab_advice_text(a: dict) -> str:
    """The steps of output_advice, first what to fix first."""
    out = [_head(a) + ": what to fix first"]
    n = 0
    for s in a["steps"]:
        n += 1
        if s["step"] == "loose":
            text = "seed the loose generator: " + s["line"]
        elif s["step"] == "null":
            text = (f"run the null experiment first (kit run --pipeline {a['name']} --factor "
                    f"repeat): until two runs with the same named seeds are identical, no other "
                    f"difference can be told from a loose generator")
        elif s["step"] == "shape":
            text = shape_line(s)
        elif s["step"] == "seed":
            text = (f"seed {s['seed']} reaches {', '.join(s['outputs'])} ({s['pairs']} pair(s) of "
                    f"{s['factor']})"
                    + (f" and changes the verdict(s) {', '.join(s['verdicts'])}" if s["verdicts"]
                       else "") + f": {s['rule']}")
        elif s["step"] == "inert":
            text = f"seed {s['seed']} reaches no output: what it seeds changes none of them"
        else:
            named = ",".join(f"seed:{x}" for x in s.get("seeds") or ["NAME"])
            text = (f"only every seed at once was varied (seed): kit run --pipeline {a['name']} "
                    f"--factor {named} varies each named seed alone, to see which one reaches "
                    f"what; {s['rule']}")
        out.append(para(f"{n}. {text}", "   ", ""))
    if n == 0:
        out.append("nothing to fix: no stored pair changed an output")
    return "\n".join(out)


def lab_report_md(b: dict, v: dict, a: dict) -> str:
    """report.md of a lab pipeline: its budget, verdicts and advice, as the commands print them
    (each in a code block no name in it can end; the heading's name quoted for Markdown)."""
    return (f"# kit report: pipeline {quoting.markdown(b['name'])}\n\nsha256 "
            f"{quoting.markdown(b['pipeline'])}\n\n"
            + "".join(f"## {t}\n\n{quoting.markdown_block(text)}\n\n" for t, text in (
                ("Budget", lab_budget_text(b)), ("Verdicts", lab_verdicts_text(v)),
                ("What to fix first", lab_advice_text(a)))))


def lab_compare_text(rep: dict) -> str:
    """`kit compare` of a pipeline's bundle: the answer, then per run the outputs that differ."""
    from .lab import measure

    out = [f"Bundle from {rep['bundle_host']['name']} compared on {rep['this_host']['name']}:",
           para(rep["answer"], "  "), ""]
    rows = [[r["label"], "identical" if r["identical"] else "\n".join(
        f"{n} ({measure(d)})" for n, d in r["outputs"].items() if not d["identical"])]
        for r in rep["per_run"]]
    if rows:
        out.append(table(rows, ["run (theirs vs here)", "outputs that differ"], wrap=(0, 1)))
    if rep["not_compared"]:
        out += ["", "Not compared here:"] + [para(f"{x['run'][:12]}: {x['reason']}", "      ", "  ")
                                             for x in rep["not_compared"]]
    return "\n".join(out)


def write_lab_report(store, subject, out_dir) -> dict:
    """report.md and report.html of pipeline ``subject`` (a Subject) into ``out_dir`` (made if need be), as
    `kit report --pipeline` and the TUI's Advice tab write them: {"md", "html"} paths."""
    from ..analysis.advice import output_advice
    from ..analysis.budget import output_budget
    from ..analysis.verdicts import output_verdicts
    from ..core.atomic import out_folder, write_bytes

    from .labplots import figures_html, figures_md, lab_plots

    b, v = output_budget(store, subject), output_verdicts(store, subject)
    plots = lab_plots(store, subject, b, v)
    md = (lab_report_md(b, v, output_advice(b, v)) + homology_section(store, subject)
          + figures_md(plots))
    out = out_folder(out_dir, [*plots, "report.md", "report.html"])
    for name, data in plots.items():  # beside the report, as kit's own report writes them
        if data:
            write_bytes(out / name, data)
    write_bytes(out / "report.md", md.encode())
    page = (f"<!doctype html><meta charset=utf-8><title>kit report: {quoting.html(subject.name)}"
            f"</title><pre>{quoting.html(md)}</pre>\n" + figures_html(plots))
    write_bytes(out / "report.html", page.encode())
    return {"md": str(out / "report.md"), "html": str(out / "report.html"),
            "plots": [str(out / n) for n, d in plots.items() if d]}


def homology_section(store, subject) -> str:
    """The report's "Under homology" section, as `kit homology --pipeline` prints it: only for
    a pipeline with protein ids whose runs a stored clustering holds ("" otherwise)."""
    from ..analysis.homology import find_clustering, output_homology, protein_outputs
    from ..core.errors import KitError
    from .lab_homology import lab_homology_text

    if protein_outputs(subject.kinds)[0] is None:
        return ""
    try:
        r = output_homology(store, subject, *find_clustering(store, subject))
    except KitError:  # no clustering holds the runs' ids: `kit homology --pipeline` says why
        return ""
    if not r["summary"].runs:
        return ""
    return f"## Under homology\n\n{quoting.markdown_block(lab_homology_text(r))}\n\n"
