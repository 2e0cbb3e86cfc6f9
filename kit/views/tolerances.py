"""kit.analysis.tolerances written out: a table, JSON, a pytest-regressions file, numpy asserts."""

from __future__ import annotations

import json

from ..core.errors import KitError
from ..core.numbers import fmt
from ..core.subject import pipeline_head
from . import quoting
from .fit import para, table

FORMATS = ("text", "json", "pytest-regressions", "numpy")
# the file each format is: what an example --out is named ("give a file's name, e.g. ...")
SUFFIX = {"text": ".txt", "json": ".json", "pytest-regressions": ".yml", "numpy": ".py"}


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
    return (
        pipeline_head(t["name"], t["pipeline"])
        if "pipeline" in t
        else f"dataset {t['name']} ({t['dataset'][:12]})"
    )


def _measured(t: dict) -> str:
    """How the tolerances were measured, in kit's words alone (no name of the lab's: a comment
    of a generated file holds nothing a file or a bundle named)."""
    pinned = f" Left out, the lab pins them: {', '.join(t['pinned'])}." if t.get("pinned") else ""
    return (
        f"from {', '.join(t['factors']) or 'no factor'}; rtol/atol = {t['headroom']:g} x the "
        f"largest |a-b|/|a| and |a-b| measured.{pinned}"
    )


_EXACT = (
    "Outputs that reach predictions or conclusions are compared exactly: pin the "
    "environment, don't tolerate"
)


def _head(t: dict) -> list:
    return [f"kit tolerances for {_source(t)}: {_measured(t)}", _EXACT]


def _cell(r: dict) -> str:
    if r.get("loose"):
        return "PIN: seed it first"
    if r.get("wide"):
        return "PIN: too wide to test"
    if r["pin"]:
        return "PIN: don't tolerate"
    return "exact" if r["level"] in ("nothing", "bits") else f"{up(r['rtol'])} / {up(r['atol'])}"


def loose_line(t: dict) -> str:
    """The null experiment's finding, said in every format (the YAML's comment without the
    names): no tolerance holds these outputs."""
    if not t.get("loose"):
        return ""
    names = ", ".join(t["loose"])
    return (
        f"LOOSE GENERATOR: {names} differ{'s' if len(t['loose']) == 1 else ''} between runs "
        "with the same seeds (the null experiment): seed it from a named seed (kit doctor "
        "--pipeline), then measure again; no tolerance holds a loose generator's draw"
    )


def empty(t: dict) -> str:
    """Why there are no tolerances: the table says it, a file format refuses with it."""
    return f"{_source(t)}: no tolerances: {t['note'] or 'no outputs measured'}" + (
        f"; {loose_line(t)}" if t.get("loose") else ""
    )


def text(t: dict) -> str:
    if not t["tolerances"]:
        return para(empty(t), "", "")
    rows = [
        [
            r["output"],
            r["kind"],
            _cell(r),
            "loose generator" if r.get("loose") else r["factor"] or "-",
            r["level"],
            f"{fmt(r['max_rel'])} / {fmt(r['max_abs'])}",
            str(r["pairs"]),
        ]
        for r in t["tolerances"]
    ]
    out = [
        para(" ".join(_head(t)), "", ""),
        table(
            rows,
            ["output", "kind", "rtol / atol", "set by", "reaches", "largest rel / |a-b|", "pairs"],
        ),
    ]
    if t["ignored"]:
        out.append(
            para(f"not environment factors, never tolerated: {', '.join(t['ignored'])}", "", "")
        )
    if t.get("note"):
        out.append(para(t["note"], "", ""))
    if t.get("loose"):
        out.append(para(loose_line(t), "", ""))
    return "\n".join(out)


def as_json(t: dict) -> str:
    """A list of {output, rtol, atol, factor, level, pin, ...} (rtol/atol null when pinned)."""
    return json.dumps(t["tolerances"], indent=1) + "\n"


# how each kind is lined up with the stored output before a test compares it, as kit compares:
# an embedding's column signs are the SVD's choice, a k-means centroid's row its numbering
_ALIGN = {"embedding": "signs", "centroids": "rows"}


def _align(r: dict):
    return _ALIGN.get(r["kind"])


def pytest_regressions(t: dict) -> str:
    """A YAML file whose ``tolerances`` is what num_regression.check / ndarrays_regression.check
    take as ``tolerances={output: {"rtol", "atol"}}``; pinned outputs get 0 and 0 (exact);
    ``aligned`` names the outputs to line up first (the numpy format's ``aligned`` does it).
    Every name is a quoted scalar (a newline or a colon in one starts no key); the comments
    hold kit's words only."""
    align = [r for r in t["tolerances"] if _align(r)]
    lines = [
        f"# kit tolerances: {_measured(t)}",
        f"# {_EXACT}",
        "# use: tolerances = yaml.safe_load(open(THIS_FILE))['tolerances']",
        "#      ndarrays_regression.check(outputs, tolerances=tolerances)",
    ]
    if align:  # only where an output needs it: this file holds no code that does it
        lines.append(
            "# first line up each output under 'aligned' with the stored one as kit "
            "compares (signs: an embedding's column signs; rows: centroids matched to "
            "the nearest stored rows)"
        )
    if t.get("loose"):  # the names are the lab's: under loose_generator, never in a comment
        lines.append(
            "# LOOSE GENERATOR: the outputs under loose_generator differ between runs "
            "with the same seeds (the null experiment): seed it from a named seed (kit "
            "doctor --pipeline), then measure again"
        )
    lines += [
        f"source: {quoting.yaml(_source(t))}",
        "loose_generator: [" + ", ".join(quoting.yaml(n) for n in t.get("loose", [])) + "]",
        "tolerances:",
    ]
    for r in t["tolerances"]:
        lines.append(
            f"  {quoting.yaml(r['output'])}: {{rtol: {up(r['rtol'])}, "
            f"atol: {up(r['atol'])}}}  # {r['level']}"
        )
    lines.append("aligned:" if align else "aligned: {}")
    lines += [f"  {quoting.yaml(r['output'])}: {_align(r)}" for r in align]
    lines.append("why:")
    lines += [f"  {quoting.yaml(r['output'])}: {quoting.yaml(_reason(r))}" for r in t["tolerances"]]
    return "\n".join(lines) + "\n"


def _reason(r: dict) -> str:
    """Why one output is compared as it is, with what was measured."""
    if r["pin"] or r["level"] in ("nothing", "bits"):
        by = f" ({r['factor']})" if r["factor"] else ""
        return f"{r['level']}{by}: {r['why']}"
    return (
        f"{r['level']} ({r['factor']}): {r['why']}; largest |a-b| {fmt(r['max_abs'])}, "
        f"relative {fmt(r['max_rel'])}"
    )


# the generated module's functions: numpy (and scipy for centroids) only, no kit, so a lab's
# own test environment runs it
_FUNCTIONS = '''

def _signs(e):
    return np.sign(e[np.argmax(np.abs(e), axis=0), np.arange(e.shape[1])])


def _rows(a, ref):
    """a's rows in the order that puts each nearest its own row of ref (least total squared
    distance), as kit matches k-means centroids, whose numbering is arbitrary."""
    from scipy.optimize import linear_sum_assignment

    cost = ((ref[:, None, :].astype(np.float64) - a[None, :, :]) ** 2).sum(axis=2)
    rows, cols = linear_sum_assignment(cost)
    return a[cols[np.argsort(rows)]]


def aligned(actual, expected):
    """``actual`` ({output: array}) with each output OUTPUTS aligns lined up with ``expected``'s
    as kit compares them: an embedding's column signs turned to the expected ones, centroids'
    rows matched to the nearest expected rows. Use it before any comparison of your own too,
    e.g. ndarrays_regression.check(aligned(outputs, stored), tolerances=...)."""
    out = dict(actual)
    for name, c in OUTPUTS.items():
        a, ref = actual.get(name), expected.get(name)
        if a is None or ref is None or np.shape(a) != np.shape(ref) or np.ndim(a) != 2:
            continue
        if c['aligned'] == 'signs':
            out[name] = a * _signs(a) * _signs(ref)
        elif c['aligned'] == 'rows' and len(a) <= 2000 and np.all(np.isfinite(a)) \\
                and np.all(np.isfinite(ref)):  # kit's bound: the assignment is k x k memory
            out[name] = _rows(a, ref)
    return out


def check(actual, expected):
    """actual, expected: {output: array}, as the pipeline's run(seeds) returns them."""
    actual = aligned(actual, expected)
    for name, c in OUTPUTS.items():
        said = f'{name!r}: {c["why"]}'
        if c['compare'] == 'equal':
            np.testing.assert_array_equal(actual[name], expected[name], err_msg=said)
        else:
            np.testing.assert_allclose(actual[name], expected[name], rtol=c['rtol'],
                                       atol=c['atol'], err_msg=said)
'''


def numpy(t: dict) -> str:
    """A Python module: check(actual, expected) of np.testing calls, one per output, and
    aligned(actual, expected), what a test lines up first. Every name is a string literal (its
    repr) in OUTPUTS, never code nor a comment: a name holding a newline and `import os` is a
    key, and importing the file runs nothing of it."""
    lines = [
        quoting.python(" ".join(_head(t) + [loose_line(t)]).strip()),  # its docstring
        "# generated by `kit tolerances --format numpy`: OUTPUTS says how check() compares "
        "each output",
        "import numpy as np",
        "",
        f"SOURCE = {quoting.python(_source(t))}",
        f"NOTE = {quoting.python(t['note']) if t.get('note') else None}",
        f"LOOSE_GENERATOR = {quoting.python(loose_line(t)) if t.get('loose') else None}",
        "",
        "# output: how it is compared ('equal' or 'allclose'), its rtol and atol, what is "
        "lined up first (None; 'signs': an embedding's column signs; 'rows': centroids "
        "matched to the nearest expected rows), and why",
        "OUTPUTS = {",
    ]
    for r in t["tolerances"]:
        exact = r["pin"] or r["level"] in ("nothing", "bits")
        how = _align(r)
        lines.append(
            f"    {quoting.python(r['output'])}: {{"
            f"'compare': {quoting.python('equal' if exact else 'allclose')}, "
            f"'rtol': {'0.0' if exact else up(r['rtol'])}, "
            f"'atol': {'0.0' if exact else up(r['atol'])}, "
            f"'aligned': {quoting.python(how) if how else None}, "
            f"'why': {quoting.python(_reason(r))}}},"
        )
    return "\n".join(lines + ["}"]) + "\n" + _FUNCTIONS


def render(t: dict, form: str) -> str:
    """``t`` in format ``form``; a file format of no tolerances is refused with the reason the
    table gives (a lab scripting it into CI must not commit an empty tolerance file)."""
    if form != "text" and not t["tolerances"]:
        raise KitError(empty(t))
    return {
        "text": lambda: text(t) + "\n",
        "json": lambda: as_json(t),
        "pytest-regressions": lambda: pytest_regressions(t),
        "numpy": lambda: numpy(t),
    }[form]()
