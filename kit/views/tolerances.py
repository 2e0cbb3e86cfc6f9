"""kit.analysis.tolerances written out: a table, JSON, a pytest-regressions file, numpy asserts."""

from __future__ import annotations

import json

from ..core.numbers import fmt
from .fit import para, table

FORMATS = ("text", "json", "pytest-regressions", "numpy")


def up(x: float | None) -> str:
    """A tolerance as 3 significant digits rounded up (never below the measured need), written
    so that YAML and Python both read it as a float ("0.0", "6.01e-14")."""
    if not x:
        return "0.0"
    s = f"{x:.2e}"
    if float(s) < x:
        m, e = s.split("e")
        s = f"{float(m) + 0.01:.2f}e{e}"
    return s


def _source(t: dict) -> str:
    return (f"pipeline {t['name']} ({t['pipeline'][:12]})" if "pipeline" in t
            else f"dataset {t['name']} ({t['dataset'][:12]})")


def _head(t: dict) -> list:
    return [f"kit tolerances for {_source(t)}: from {', '.join(t['factors']) or 'no factor'}; "
            f"rtol/atol = {t['headroom']:g} x the largest |a-b|/|a| and |a-b| measured.",
            "Outputs that reach predictions or conclusions are compared exactly: pin the "
            "environment, don't tolerate"]


def _cell(r: dict) -> str:
    if r.get("loose"):
        return "PIN: seed it first"
    if r["pin"]:
        return "PIN: don't tolerate"
    return "exact" if r["level"] in ("nothing", "bits") else f"{up(r['rtol'])} / {up(r['atol'])}"


def text(t: dict) -> str:
    if not t["tolerances"]:
        return f"{_source(t)}: no tolerances: {t['note'] or 'no outputs measured'}"
    rows = [[r["output"], r["kind"], _cell(r),
             "loose generator" if r.get("loose") else r["factor"] or "-", r["level"],
             f"{fmt(r['max_rel'])} / {fmt(r['max_abs'])}", str(r["pairs"])] for r in t["tolerances"]]
    out = [para(" ".join(_head(t)), "", ""),
           table(rows, ["output", "kind", "rtol / atol", "set by", "reaches",
                        "largest rel / |a-b|", "pairs"])]
    if t["ignored"]:
        out.append(para(f"not environment factors, never tolerated: {', '.join(t['ignored'])}",
                        "", ""))
    if t.get("note"):
        out.append(para(t["note"], "", ""))
    return "\n".join(out)


def as_json(t: dict) -> str:
    """A list of {output, rtol, atol, factor, level, pin, ...} (rtol/atol null when pinned)."""
    return json.dumps(t["tolerances"], indent=1) + "\n"


def pytest_regressions(t: dict) -> str:
    """A YAML file whose ``tolerances`` is what num_regression.check / ndarrays_regression.check
    take as ``tolerances={output: {"rtol", "atol"}}``; pinned outputs get 0 and 0 (exact)."""
    lines = [f"# {h}" for h in _head(t)]
    lines += ["# use: tolerances = yaml.safe_load(open(THIS_FILE))['tolerances']",
              "#      ndarrays_regression.check(outputs, tolerances=tolerances)",
              "# an embedding's tolerance is after aligning its column signs to the stored ones "
              "(as kit compares; the numpy format does it)",
              "tolerances:"]
    for r in t["tolerances"]:
        why = f"{r['factor']}: {r['why']}" if r["factor"] else r["why"]
        lines.append(f"  {json.dumps(r['output'])}: {{rtol: {up(r['rtol'])}, atol: {up(r['atol'])}}}"
                     f"  # {r['level']}: {why}")
    if not t["tolerances"]:
        lines[-1] = "tolerances: {}"
    return "\n".join(lines) + "\n"


def numpy(t: dict) -> str:
    """A Python snippet: check(actual, expected) of np.testing calls, one per output."""
    lines = [f"# {h}" for h in _head(t)]
    lines += ["import numpy as np", "", "",
              "def _aligned(a, ref):",
              "    \"\"\"An embedding's column signs are arbitrary: ``a``'s turned to ``ref``'s "
              "(as kit compares).\"\"\"",
              "    s = lambda e: np.sign(e[np.argmax(np.abs(e), axis=0), np.arange(e.shape[1])])",
              "    return a * s(a) * s(ref)", "", "",
              "def check(actual, expected):",
              "    \"\"\"actual, expected: {output: array}, as the pipeline's run(seeds) returns "
              "them.\"\"\""]
    for r in t["tolerances"]:
        o = json.dumps(r["output"])
        a = (f"_aligned(actual[{o}], expected[{o}])" if r["kind"] == "embedding"
             else f"actual[{o}]")
        if r["pin"] or r["level"] in ("nothing", "bits"):
            by = f" ({r['factor']})" if r["factor"] else ""
            lines.append(f"    # {r['output']}: {r['level']}{by}: {r['why']}")
            lines.append(f"    np.testing.assert_array_equal({a}, expected[{o}])")
        else:
            lines.append(f"    # {r['output']}: {r['factor']}: {r['why']}; largest |a-b| "
                         f"{fmt(r['max_abs'])}, relative {fmt(r['max_rel'])}")
            lines.append(f"    np.testing.assert_allclose({a}, expected[{o}], "
                         f"rtol={up(r['rtol'])}, atol={up(r['atol'])})")
    if not t["tolerances"]:
        lines.append("    pass  # " + (t["note"] or "no outputs measured"))
    return "\n".join(lines) + "\n"


def render(t: dict, form: str) -> str:
    return {"text": lambda: text(t) + "\n", "json": lambda: as_json(t),
            "pytest-regressions": lambda: pytest_regressions(t), "numpy": lambda: numpy(t)}[form]()
