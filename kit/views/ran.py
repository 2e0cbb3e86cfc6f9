"""What `kit run` prints after its runs: the rows of the factors it ran, and the others named."""

from __future__ import annotations

from .fit import para
from .tables import budget_text, dataset_line, output_budget_text


def also_stored(others: list, command: str) -> str:
    """The line naming the factors stored before that this command did not run (a stranger's
    drive read the old rows as this run's), and the command that shows every one."""
    return para(f"also stored: {', '.join(others)} (every factor: {command})", "", "")


def asked_factors(given, pairs) -> list:
    """The factors a `kit run` ran, in the order the user gave them (``given``), then any its
    ``pairs`` were planned by besides: a set's order changed between processes (string hashing
    is randomised), and so did the "no pairs of ..." line."""
    return list(dict.fromkeys([*given, *(p.factor for p in pairs)]))


def run_text(b: dict, asked: list, command: str) -> str:
    """kit's own `kit run`: kit.analysis.budget's budget ``b`` with the rows of the factors in
    ``asked`` (asked_factors, in its order) alone (the yardstick stays: the seed units are
    every row's); ``command`` shows the whole table."""
    rows = [r for r in b["rows"] if r.factor in asked]
    others = list(dict.fromkeys(r.factor for r in b["rows"] if r.factor not in asked))
    if not rows:  # none of its pairs stored (all skipped, or every run failed): said so, and
        # not budget_text's advice for an empty store, which names a factor it did not run
        text = (
            dataset_line(b["dataset"])
            + "\n\n"
            + para(f"no pairs of {', '.join(asked)} stored on this dataset", "", "")
        )
    elif not others:
        return budget_text(b)
    else:
        amp = {k: v for k, v in (b.get("amplification") or {}).items() if k.split("=")[0] in asked}
        text = budget_text({**b, "rows": rows, "amplification": amp})
    return text + ("\n" + also_stored(others, command) if others else "")


def file_run_text(b: dict, asked, path: str) -> str:
    """What `kit run --pipeline` prints: the rows of the factors it ran (``asked``), then one
    line pointing to the whole table when other factors of the pipeline are stored."""
    shown = {
        **b,
        "factors": {f: r for f, r in b["factors"].items() if f in asked},
        "inert": [s for s in b["inert"] if f"seed:{s}" in asked],
        "shapes": [s for s in b.get("shapes", []) if s["factor"] in asked],
        "not_in_dtype": b.get("not_in_dtype") if "precision" in asked else [],
    }
    text = output_budget_text(shown)
    others = [f for f in b["factors"] if f not in asked]
    if others:
        text += "\n" + also_stored(others, f"kit budget --pipeline {path}")
    return text
