"""A lab pipeline's budget as text: per factor, the outputs its pairs changed and by how much."""

from __future__ import annotations

from ..core.numbers import fmt
from .fit import para, table


# each measure a kind gives, in the order a reader wants them
_MEASURES = (("flips", lambda w: f"{w['flips']} flips, max dp {fmt(w['max_dp'])}"),
             ("ari", lambda w: f"ARI {fmt(w['ari'])}"),
             ("jaccard", lambda w: f"Jaccard {fmt(w['jaccard'])}"),
             ("changed", lambda w: f"{w['changed']} changed"),
             ("nonfinite", lambda w: f"{w['nonfinite']} NaN/inf in one run only"),
             ("rel", lambda w: f"rel {fmt(w['rel'])}"),
             ("digits", lambda w: f"{fmt(w['digits'])} digits"),
             ("unmeasured", lambda w: "bits differ, by how much not measured: hashes only, "
                                      "export with --arrays"))


def measure(worst: dict) -> str:
    """The largest difference of one output, in its kind's own terms."""
    if "shape" in worst:
        return f"shape {worst['shape'][0]} vs {worst['shape'][1]}"
    parts = [say(worst) for key, say in _MEASURES if key in worst]
    return ", ".join(parts) or "differs"


def largest(o: dict) -> dict:
    """A budget row's output at each measure's largest difference over the factor's pairs
    (output_budget's ``most`` and ``least``): the worst pair alone may hold fewer flips."""
    out = {**o["worst"], **o.get("most", {}), **o.get("least", {})}
    if not o["worst"].get("unmeasured"):  # some pair was measured: its sizes are the row's
        out.pop("unmeasured", None)
    return out


# a pair's one number per output, the first its kind measures: (key, the header's word)
_HEADLINE = (("flips", "flips"), ("ari", "ARI"), ("jaccard", "Jaccard"), ("changed", "changed"),
             ("rel", "rel"))


def _cell(d: dict | None, key: str | None) -> str:
    """One output of one pair: its headline measure, "=" when bitwise identical."""
    if d is None or d["identical"]:
        return "-" if d is None else "="
    if "missing" in d:
        return f"in run {'b' if d['missing'] == 'a' else 'a'} only"
    if "shape" in d or "unmeasured" in d:
        return "shape differs" if "shape" in d else "bits differ"
    if key not in d:
        return "differs"
    return str(d[key]) if key in ("flips", "changed") else fmt(d[key])


def lab_pairs_text(name: str, sha: str, factor: str, rows: list) -> str:
    """`kit budget --pipeline FILE --factor F`: the pairs behind F's row, one line each."""
    outputs = list(dict.fromkeys(n for r in rows for n in r["outputs"]))
    keys = {n: next((k for k, _ in _HEADLINE if any(k in r["outputs"].get(n, {}) for r in rows)),
                    None) for n in outputs}
    # the measure below the output's name: six outputs then fit one line at 80 columns
    heads = [f"{n}\n{dict(_HEADLINE)[keys[n]]}" if keys[n] else n for n in outputs]
    cells = [[r["label"]] + [_cell(r["outputs"].get(n), keys[n]) for n in outputs] for r in rows]
    return "\n".join([f"pipeline {name} ({sha[:12]}), factor {factor}: {len(rows)} pair(s)",
                      table(cells, ["pair"] + heads),
                      para("(=: bitwise identical; every measure of each pair: --json)", "", "")])


def shape_line(s: dict) -> str:
    """One line for an output whose shape a factor changed (output_budget's ``shapes``)."""
    a, b = s["shapes"]
    return (f"SHAPE: {s['output']} ({s['kind']}) is {tuple(a)} in one run of {s['factor']} and "
            f"{tuple(b)} in the other (runs {s['a'][:12]}, {s['b'][:12]}): a {s['kind']} output "
            f"is compared element by element, so its shape must not depend on {s['factor']}; "
            f"not measured")


def lab_budget_text(b: dict) -> str:
    """kit.analysis.budget.output_budget's numbers: one row per factor, then the null experiment's line."""
    head = f"pipeline {b['name']} ({b['pipeline'][:12]})"
    unfit = [para(f"UNFIT: {line}; left out", "", "") for line in b.get("unfit", [])]
    if not b["factors"]:
        return "\n".join([f"{head}: no pairs stored yet (kit run --pipeline {b['name']} --factor "
                          f"repeat)", *unfit])
    rows = []
    for factor, r in b["factors"].items():
        moved = [f"{n} ({measure(largest(o))})" for n, o in r["outputs"].items() if o["changed"]]
        rows.append([factor, str(r["pairs"]), "\n".join(moved) or "none: every output identical"])
    out = [head, table(rows, ["factor", "pairs", "outputs that changed (largest difference)"],
                       wrap=(2,))]
    out += unfit
    for s in b.get("shapes", []):
        out.append(para(shape_line(s), "", ""))
    if b["loose_line"]:
        out.append(para("LOOSE GENERATOR: " + b["loose_line"], "", ""))
    elif "repeat" in b["factors"]:
        out.append("repeat: every output identical; the named seeds hold every generator measured")
    wide = b.get("not_in_dtype") or []
    if wide:
        out.append(para(f"precision: {', '.join(wide)} {'is' if len(wide) == 1 else 'are'} not "
                        f"float32 in the float32 runs (run returns {'it' if len(wide) == 1 else 'them'}"
                        f" in float64): what precision moves there comes from upstream", "", ""))
    for name in b["inert"]:
        out.append(para(f"seed:{name} changed no output: run reads seeds[{name!r}], but what "
                        f"it seeds reaches none of these outputs", "", ""))
    return "\n".join(out)


def lab_doctor_text(rep: dict) -> str:
    """kit.app.lab.lab_doctor's answer: pass, or the loose generator's line naming its outputs."""
    head = f"null experiment of {rep['name']} ({rep['pipeline'][:12]}), {rep['pairs']} repeated pair(s)"
    if rep["ok"]:
        return para(f"{head}: ok - every output ({', '.join(rep['outputs'])}) bitwise "
                    f"identical; the named seeds hold every generator measured", "", "")
    return para(f"{head}: FAILED - LOOSE GENERATOR: {rep['loose_line']}", "", "")
