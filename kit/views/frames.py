"""The library's results as pandas DataFrames: one row per run, pair, factor, verdict or stage.

Each frame is the JSON a `--json` command prints, flattened (``models.lr.flips_median``), so a
notebook, a spreadsheet (`kit budget --csv`) and the CLI read the same numbers.
"""

from __future__ import annotations

from .quoting import spreadsheet


def records_frame(records: list, index: str | None = None):
    """Records (dicts, nested ones flattened with '.') as a frame, indexed by ``index``."""
    import pandas as pd

    df = pd.json_normalize(records, sep=".") if records else pd.DataFrame()
    if index and index in df.columns:
        df = df.set_index(index)
    return df


def budget_frame(b: dict):
    """One row per budget row (a factor, or a factor's level: `seed`, `svd-iters=20`), from
    the budget in its JSON form (as `kit budget --json` writes it)."""
    rows = [{"row": r["factor"] + (f"={r['level']}" if r["level"] else ""), **r} for r in b["rows"]]
    return records_frame(rows, "row")


def pairs_frame(details: list):
    """One row per pair: its factor, label, runs and every measure of its comparison (the
    pairs in their JSON form, as `kit budget --factor F --json` writes them)."""
    return records_frame([{"pair": f"{p['a'][:12]}-{p['b'][:12]}", **p} for p in details], "pair")


def runs_frame(runs: list):
    """One row per run (in its JSON form, as `kit runs --json` writes it): its spec, wall time
    and environment."""
    return records_frame([{k: v for k, v in r.items() if k != "stages"} for r in runs], "id")


def verdicts_frame(report: dict):
    """One row per verdict of each run set, from `kit verdicts --json` (flattened)."""
    df = records_frame([{"set": name, **v} for name, vs in report.items() for v in vs])
    return df.set_index(["set", "verdict"]) if len(df) else df


def advice_frame(a: dict):
    """One row per ranked factor ("what to pin first"); the recommendations ride along in
    ``attrs`` (they are sentences, not rows of numbers)."""
    df = records_frame([{"rank": i + 1, **x} for i, x in enumerate(a["ranking"])], "rank")
    df.attrs["recommendations"] = [x["text"] for x in a["recommendations"]]
    df.attrs["not_measured"] = a["not_measured"]
    df.attrs["unit"] = a.get("unit", [])  # the yardsticks: the unit of the ranking, not in it
    return df


def stages_frame(run):
    """One row per stored array of a run (a StoredRun): hash, dtype, shape, and its stage's time."""
    timings = run.manifest.get("timings", {})
    rows = [
        {
            "array": name,
            **info,
            **{f"stage_{k}": v for k, v in timings.get(name.split(".")[0], {}).items()},
        }
        for name, info in run.manifest["stages"].items()
    ]
    return records_frame(rows, "array")


LIST_SEPARATOR = "; "  # between the items of one list in one CSV cell


def csv_text(df) -> str:
    """A frame for a spreadsheet, one field a cell: a column of lists (a row's labels, stages,
    run ids, the 64 components' medians) is one column whose cell holds the items joined by
    "; " (one column per item made the budget ~240 columns wide). Every text cell, the index's
    and the header's included, is one no spreadsheet runs as a formula (a bundle's output names
    land here: `kit.views.quoting.spreadsheet`)."""
    out = df.copy()
    for name in df.columns:
        if any(isinstance(v, (list, tuple)) for v in df[name]):
            out[name] = df[name].map(_joined)
    return _inert(out).to_csv()


def _joined(value):
    if not isinstance(value, (list, tuple)):
        return value
    return LIST_SEPARATOR.join("" if v is None else str(v) for v in value)


def _inert(df):
    """``df`` with each text cell of its values, index and header made inert for a spreadsheet;
    numbers are left as they are (a text column is the only kind that can hold a formula)."""
    import pandas as pd

    def labels(index):
        if isinstance(index, pd.MultiIndex):
            return pd.MultiIndex.from_tuples(
                [tuple(map(spreadsheet, t)) for t in index],
                names=[spreadsheet(n) for n in index.names],
            )
        return pd.Index([spreadsheet(v) for v in index], name=spreadsheet(index.name))

    out = df.copy()
    for i in range(len(df.columns)):
        if not (
            pd.api.types.is_numeric_dtype(df.dtypes.iloc[i])
            or pd.api.types.is_bool_dtype(df.dtypes.iloc[i])
        ):
            out.iloc[:, i] = df.iloc[:, i].map(spreadsheet)
    out.index, out.columns = labels(df.index), labels(df.columns)
    return out


def output_budget_frame(b: dict):
    """One row per factor and output of a pipeline's budget (`kit budget --pipeline --json`'s
    numbers, flattened: ``worst.flips``, ``most.rel`` ...)."""
    rows = [
        {"factor": f, "output": name, "pairs": r["pairs"], **o}
        for f, r in b["factors"].items()
        for name, o in r["outputs"].items()
    ]
    df = records_frame(rows)
    return df.set_index(["factor", "output"]) if len(df) else df


def output_pairs_frame(pairs: list):
    """One row per pair and output of one factor (`kit budget --pipeline --factor F`)."""
    rows = [
        {"pair": p["label"], "output": name, "factor": p["factor"], "a": p["a"], "b": p["b"], **d}
        for p in pairs
        for name, d in p["outputs"].items()
    ]
    df = records_frame(rows)
    return df.set_index(["pair", "output"]) if len(df) else df
