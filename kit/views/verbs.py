"""The records of kit.app.verbs as what a command prints: a Page of standard output and the
lines beside it on standard error (text, JSON or CSV).

Kit's own pipeline is read by stage and a pipeline file by its outputs' kinds: where a record's
numbers differ in shape between the two (budget, verdicts, advice, homology), ``_by_outputs`` is
the one place here that tells them apart; every other record has one renderer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from ..app.verbs import has_protein_ids
from ..app.verbs.records import Budget, Verdicts
from ..core.subject import PIPELINE, Subject, pipeline_head
from ..runs.store.records import as_json
from . import tables
from .explain import explain_text
from .fit import fitted, para
from .frames import budget_frame, csv_text, output_budget_frame, output_pairs_frame, pairs_frame
from .health import doctor_text, file_doctor_text
from .pairs import output_pairs_text, pairs_text
from .ran import file_run_text, run_text
from .tables import (
    advice_text,
    amplify_text,
    budget_text,
    compare_text,
    dataset_line,
    output_advice_text,
    output_budget_text,
    output_compare_text,
    output_verdicts_text,
    verdicts_text,
)
from .tolerances import render


@dataclass(frozen=True)
class Page:
    """``out``: exactly what goes to standard output; ``err``: lines for standard error, said
    first (the dataset a JSON or CSV answer is of, a note)."""

    out: str = ""
    err: tuple = ()


def json_text(obj) -> str:
    """--json's text: sorted keys, one space of indent, a newline at the end."""
    return json.dumps(as_json(obj), indent=1, sort_keys=True, default=str) + "\n"


def _by_outputs(subject: Subject | None) -> bool:
    return subject is not None and subject.kind == PIPELINE


def head(subject: Subject) -> str:
    """The line that names what an answer is of: kit's dataset line, or the pipeline's."""
    if _by_outputs(subject):
        return para(subject.label(), "", "")
    return dataset_line(dict(subject.summary), subject.why)


def _kit_json(subject, obj) -> Page:
    """kit's own answer as JSON: the dataset it is of said on stderr beside it."""
    return Page(json_text(obj), (head(subject),))


def budget_page(rec, form: str = "text") -> Page:
    """`kit budget` in ``form``: text, json or csv (one value a cell)."""
    s, b = rec.subject, rec.data
    if _by_outputs(s):
        if form == "json":
            return Page(json_text(b))
        if form == "csv":  # the file holds rows only: what they are of, on stderr
            frame = (
                output_pairs_frame(b["pairs"]) if rec.factor else output_budget_frame(as_json(b))
            )
            return Page(csv_text(frame), (head(s),))
        text = (
            output_pairs_text(s.name, s.sha256, rec.factor, b["pairs"])
            if rec.factor
            else output_budget_text(b)
        ) + "\n"
        v = rec.verdicts
        if v["factors"] or v["unfit"]:
            text += "\n" + output_verdicts_text(v) + "\n"
        return Page(text)
    if rec.factor:
        if form == "csv":
            return Page(csv_text(pairs_frame(as_json(b))))
        if form == "json":
            return _kit_json(s, b)
        return Page(head(s) + "\n\n" + pairs_text(b) + "\n")

    if form == "csv":
        return Page(csv_text(budget_frame(as_json(b))), (head(s),))
    if form == "json":
        return _kit_json(s, b)
    return Page(budget_text(b, s.why) + "\n")


def verdicts_page(rec, as_json: bool = False) -> Page:
    if _by_outputs(rec.subject):
        from .homology import homology_pointer

        v = rec.data
        if as_json:
            return Page(json_text(v))
        text = output_verdicts_text(v) + "\n"
        if has_protein_ids(rec.subject) and v["factors"]:
            text += "\n" + homology_pointer(rec.subject.summary["given"]) + "\n"
        return Page(text)

    note = (f"note: {rec.note}",) if rec.note else ()
    if as_json:
        return Page(json_text(rec.data), (head(rec.subject), *note))
    return Page(
        head(rec.subject)
        + "\n\n"
        + (verdicts_text(rec.data) or "no pairs with verdicts yet")
        + "\n",
        note,
    )


def amplify_page(rec, as_json: bool = False) -> Page:
    if as_json:
        return _kit_json(rec.subject, rec.data)
    return Page(head(rec.subject) + "\n\n" + amplify_text(rec.data) + "\n")


def advice_page(rec, as_json: bool = False) -> Page:
    if _by_outputs(rec.subject):
        return Page(json_text(rec.data) if as_json else output_advice_text(rec.data) + "\n")

    if as_json:
        return _kit_json(rec.subject, rec.data)
    return Page(advice_text(rec.data, rec.subject.why) + "\n")


def homology_page(rec, as_json: bool = False) -> Page:
    if _by_outputs(rec.subject):
        from .homology import output_homology_text

        return Page(json_text(rec.data) if as_json else output_homology_text(rec.data) + "\n")
    from .homology import homology_text

    if as_json:
        return _kit_json(rec.subject, rec.data)
    return Page(head(rec.subject) + "\n\n" + homology_text(rec.data) + "\n")


def across_page(rec, as_json: bool = False) -> Page:
    from .homology import across_text

    if as_json:
        return Page(json_text(rec.data.to_json()))
    return Page(across_text(rec.data) + "\n")


def runs_page(rec, as_json: bool = False) -> Page:
    got = list(rec.runs)
    if _by_outputs(rec.subject):
        if as_json:
            return Page(json_text(got))
        # one pipeline's runs: named once above, not in a column on every row
        h = pipeline_head(rec.subject.name, rec.subject.sha256)
        return Page(
            (
                para(f"runs of {h}", "", "") + "\n" + tables.runs_text(got, dataset=False)
                if got
                else para(f"no runs of {h} stored", "", "")
            )
            + "\n"
        )
    if as_json:
        return Page(json_text(got), (head(rec.subject),) if rec.subject is not None else ())
    return Page(
        (
            tables.runs_text(got, rec.datasets)
            if got
            else "no runs stored" + (" that match" if rec.filtered else "")
        )
        + "\n"
    )


def tolerances_page(rec, form: str = "text") -> Page:
    return Page(render(rec.data, form))


def explain_page(rec, as_json: bool = False, skipped: str | None = None) -> Page:
    """`kit explain`; ``skipped``: the note that the release scan was skipped and how to run
    it (the front end's own words), added to the scans not made."""
    result = {
        **rec.result,
        "unscanned": [*rec.result["unscanned"], *([skipped] if skipped else [])],
    }
    left = list(rec.not_run)
    if as_json:
        return Page(
            json_text(
                {
                    "factor": result["factor"],
                    "pairs": [e.to_json() for e in result["pairs"]],
                    "skipped": [{"label": lb, "why": w} for lb, w in result["skipped"]],
                    "unscanned": result["unscanned"],
                    "not_run": left,
                }
            )
        )
    return Page(explain_text(result, left) + "\n")


def ran_page(rec, as_json: bool = False, dataset: str | None = None, n: int | None = None) -> Page:
    """What `kit run` prints: the rows of the factors it ran, and the command that shows the
    whole table (``dataset``/``n``: the words it was given, to say it again)."""
    if as_json:
        return Page(json_text(rec.budget))

    if _by_outputs(rec.subject):
        return Page(file_run_text(rec.budget, rec.asked, rec.subject.summary["given"]) + "\n")
    whole = "kit budget" + (f" --dataset {dataset}" if dataset else "") + (f" --n {n}" if n else "")
    return Page(run_text(rec.budget, list(rec.asked), whole) + "\n")


def chosen_line(subject: Subject) -> tuple[str | None, str] | None:
    """(markup style, line) `kit run` says of the dataset it runs on before it runs, or None
    when there is nothing to say (a pipeline, or the dataset asked for by name)."""
    s = subject.summary
    if _by_outputs(subject):
        return None
    # fitted to the width as the read commands' dataset line is (it was 124 columns piped)
    if s.get("synthetic"):
        return "yellow", para(
            f"dataset {s['name']}: the built-in SYNTHETIC set ({s['rows']} proteins){subject.why}",
            "  ",
            "",
        )
    if subject.why:
        return None, para(f"dataset {s['name']} ({s['rows']} proteins){subject.why}", "  ", "")
    return None


def doctor_page(rec, as_json: bool = False) -> Page:
    if as_json:
        return Page(json_text(rec.data))
    if rec.subject is None:
        return Page(doctor_text(rec.data) + "\n")

    return Page(file_doctor_text(rec.data) + "\n")


def compare_page(rep: dict, as_json: bool = False) -> Page:
    """`kit compare`: a pipeline's bundle by its outputs, kit's own by its stages."""
    if as_json:
        return Page(json_text(rep))
    return Page((output_compare_text if rep.get("pipeline") else compare_text)(rep) + "\n")


def export_head(rec) -> str | None:
    """The line `kit export` says on stderr before its plan: the dataset it exports (a
    pipeline's runs are named by the plan's counts alone, as before)."""
    return None if _by_outputs(rec.subject) else head(rec.subject)


def report_page(rec, wrote: dict) -> Page:
    """What `kit report` prints once kit.views.report's write wrote the Report ``rec``."""
    left = wrote.get("not_drawn") or {}
    # a plot with nothing stored to draw is left out, said with what would draw it: the
    # report is written all the same (exit 0)
    return Page(
        f"{head(rec.subject)}\nwrote {wrote['markdown']} and {wrote['html']} "
        f"({len(wrote['plots'])} of {len(wrote['plots']) + len(left)} plots)\n"
        + "".join(para(f"not drawn: {n}: {why}", "    ", "  ") + "\n" for n, why in left.items())
    )


# the line under a pipeline's text in the TUI's reader panes: where the choice is undone
_CHOSEN = "\n(a pipeline file chosen on the Setup tab; empty it there for kit's own dataset)"


def pane_text(rec, homology: bool = False, width: int | None = None) -> str | None:
    """What a TUI reader pane shows of a Budget, Verdicts or Reading (advice, ``homology``: a
    reading under homology) where its numbers are a text's: a pipeline file's, as the commands
    print them, fitted to ``width``; None where the pane lays them out in its own tables (kit's
    own: a DataTable, Markdown)."""
    if not _by_outputs(rec.subject):
        return None
    from .homology import output_homology_text

    with fitted(width):
        if homology:
            return output_homology_text(rec.data) + "\n(h: back to the verdicts)"
        if isinstance(rec, Verdicts):
            text = output_verdicts_text(rec.data)
            if rec.data["factors"] and has_protein_ids(rec.subject):  # as the CLI points to it
                text += (
                    "\nUnder homology: h (cluster-bootstrap verdicts, leakage; as kit "
                    "homology --pipeline)"
                )
        elif isinstance(rec, Budget):
            text = output_budget_text(cast(dict[str, Any], rec.data))  # a pipeline's: a dict
        else:
            text = output_advice_text(rec.data)
    return text + _CHOSEN
