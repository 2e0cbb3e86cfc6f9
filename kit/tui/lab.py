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


def _text(app, info: dict, which: str) -> Text:
    from ..analysis.lab_budget import lab_budget
    from ..analysis.lab_verdicts import lab_verdicts
    from ..views.lab import lab_budget_text
    from ..views.lab_readers import lab_advice_text, lab_verdicts_text

    if which == "budget":
        text = lab_budget_text(lab_budget(app.store, info))
    elif which == "verdicts":
        text = lab_verdicts_text(lab_verdicts(app.store, info))
    else:
        from ..analysis.lab_advice import lab_advise

        text = lab_advice_text(lab_advise(lab_budget(app.store, info),
                                          lab_verdicts(app.store, info)))
    return Text(text + "\n(a pipeline file chosen on the Setup tab; empty it there for "
                       "kit's own dataset)")
