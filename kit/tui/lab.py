"""The read tabs on a lab pipeline chosen on the Setup tab: its budget, verdicts and advice as
`kit budget|verdicts|advise --pipeline` print them (the same functions; nothing computed here)."""

from __future__ import annotations

import threading

from rich.text import Text

# the width kit's texts fit is one setting of the process (kit.views.fit): the panes' workers
# take turns with it
_FITTING = threading.Lock()


def lab_text(store, subject, which: str, width: int | None = None) -> Text:
    """What tab ``which`` (budget, verdicts or advice) shows of a pipeline ``subject``, its
    tables and paragraphs fitted to ``width`` (the pane's: the terminal's, or the tests'
    COLUMNS, is wider)."""
    from ..views.fit import fitted

    with _FITTING, fitted(width):
        return _text(store, subject, which)


def has_proteins(subject) -> bool:
    """The subject declares protein ids (a pipeline's "proteins" output): its runs can be read
    under homology."""
    return subject is not None and _declares_proteins(subject)


def lab_homology_text(store, subject, width: int | None = None) -> Text:
    """What `kit homology --pipeline` prints of a pipeline (it declares protein ids);
    KitError, one line, where it would say one (no clustering holds the runs' ids)."""
    from ..analysis.homology import find_clustering, output_homology
    from ..core.errors import KitError
    from ..views.fit import fitted
    from ..views.lab_homology import lab_homology_text as text

    r = output_homology(store, subject, *find_clustering(store, subject))
    if not r["summary"].runs:  # as the CLI says it
        raise KitError(f"no run of pipeline {subject.name} could be read in dataset "
                       f"{r['dataset']}'s clustering: " + "; ".join(r["summary"].left_out[:1]))
    with _FITTING, fitted(width):
        return Text(text(r) + "\n(h: back to the verdicts)")


def _text(store, subject, which: str) -> Text:
    from ..analysis.budget import output_budget
    from ..analysis.verdicts import output_verdicts
    from ..views.lab import lab_budget_text
    from ..views.lab_readers import lab_advice_text, lab_verdicts_text

    if which == "budget":
        text = lab_budget_text(output_budget(store, subject))
    elif which == "verdicts":
        v = output_verdicts(store, subject)
        text = lab_verdicts_text(v)
        if v["factors"] and _declares_proteins(subject):  # as `kit verdicts --pipeline` points to it
            text += ("\nUnder homology: h (cluster-bootstrap verdicts, leakage; as kit homology "
                     "--pipeline)")
    else:
        from ..analysis.advice import output_advice

        text = lab_advice_text(output_advice(output_budget(store, subject),
                                             output_verdicts(store, subject)))
    return Text(text + "\n(a pipeline file chosen on the Setup tab; empty it there for "
                       "kit's own dataset)")


def _declares_proteins(subject) -> bool:
    from ..analysis.homology import protein_outputs

    return protein_outputs(subject.kinds)[0] is not None
