"""The read tabs on a lab pipeline chosen on the Setup tab: its budget, verdicts and advice as
`kit budget|verdicts|advise --pipeline` print them (the same functions; nothing computed here)."""

from __future__ import annotations

from rich.text import Text


def lab_text(app, which: str, width: int | None = None) -> Text | None:
    """What tab ``which`` (budget, verdicts or advice) shows of the app's pipeline, its tables
    and paragraphs fitted to ``width`` (the pane's: the terminal's, or the tests' COLUMNS, is
    wider); None when no pipeline is chosen (the tab shows kit's own dataset)."""
    info = getattr(app, "pipeline", None)
    if info is None:
        return None
    from ..views.fit import fitted

    with fitted(width):
        return _text(app, info, which)


def has_proteins(app) -> bool:
    """The app's pipeline declares protein ids: its runs can be read under homology."""
    from ..analysis.lab_homology import protein_outputs

    info = getattr(app, "pipeline", None)
    return info is not None and protein_outputs(info)[0] is not None


def lab_homology_text(app, width: int | None = None) -> Text:
    """What `kit homology --pipeline` prints of the app's pipeline (it declares protein ids);
    KitError, one line, where it would say one (no clustering holds the runs' ids)."""
    from ..analysis.lab_homology import find_clustering, lab_homology
    from ..core.errors import KitError
    from ..views.fit import fitted
    from ..views.lab_homology import lab_homology_text as text

    info = app.pipeline
    r = lab_homology(app.store, info, *find_clustering(app.store, info))
    if not r["summary"].runs:  # as the CLI says it
        raise KitError(f"no run of pipeline {info['name']} could be read in dataset "
                       f"{r['dataset']}'s clustering: " + "; ".join(r["summary"].left_out[:1]))
    with fitted(width):
        return Text(text(r) + "\n(h: back to the verdicts)")


def _text(app, info: dict, which: str) -> Text:
    from ..analysis.lab_budget import lab_budget
    from ..analysis.lab_verdicts import lab_verdicts
    from ..views.lab import lab_budget_text
    from ..views.lab_readers import lab_advice_text, lab_verdicts_text

    if which == "budget":
        text = lab_budget_text(lab_budget(app.store, info))
    elif which == "verdicts":
        v = lab_verdicts(app.store, info)
        text = lab_verdicts_text(v)
        if v["factors"] and has_proteins(app):  # as `kit verdicts --pipeline` points to it
            text += ("\nUnder homology: h (cluster-bootstrap verdicts, leakage; as kit homology "
                     "--pipeline)")
    else:
        from ..analysis.lab_advice import lab_advise

        text = lab_advice_text(lab_advise(lab_budget(app.store, info),
                                          lab_verdicts(app.store, info)))
    return Text(text + "\n(a pipeline file chosen on the Setup tab; empty it there for "
                       "kit's own dataset)")
