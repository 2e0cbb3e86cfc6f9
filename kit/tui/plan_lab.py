"""The Plan tab on a lab pipeline chosen on the Setup tab: its factors and the count of its
pairs, from the functions `kit run --pipeline` plans with (kit.app.audit; nothing computed here)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..views.quoting import markup

from ..runs.planning.options import PlanOptions

# the settings of kit's own pipeline a file does not take, said in one line where they were
LAB_NOTE = ("dataset, proteins, iterations, PyTorch device: kit's own pipeline's, not a "
            "file's (it reads its own data, on the device its code chooses)")


@dataclass(frozen=True)
class LabChoice:
    """The plan the Run tab runs for a pipeline: its info as chosen, its file (None: a hash
    chosen; this KIT_HOME's copy runs, if it has one), the factors and the options."""
    info: dict
    path: Path | None
    factors: tuple
    options: PlanOptions


def lab_rows(app) -> list:
    """The factor rows of the app's pipeline, as the Plan tab lists kit's own."""
    from ..app.verbs.planning import file_factors

    return file_factors(app.pipeline_info(), app.platform)


def lab_summary(app, c: LabChoice) -> str:
    """The plan's counts, as `kit run --pipeline` prints them before it runs; KitError: one
    line (a factor the file does not take, a stack not built, the file not on this machine)."""
    from ..app.audit import file_estimate, file_pairs, file_to_run, runs_of

    info = c.info
    if c.path is None:
        info = file_to_run(info)  # only reads when no file is given: raises if it is not here
    pairs = file_pairs(info, c.factors, c.options)
    specs, todo = runs_of(pairs, app.store)
    return (f"[b]pipeline {markup(info['name'])}[/] ({info['sha256'][:12]}): "
            f"[b]{len(pairs)} pairs, {len(specs)} runs[/]: {len(specs) - len(todo)} stored, "
            f"{len(todo)} to run, " + _estimate_text(file_estimate(info, todo, app.store)))


def _estimate_text(est: dict | None) -> str:
    """The Plan's time for a pipeline, every number from its stored runs (kit's own Plan says
    "about N min from past timings")."""
    if est is None:
        return "no estimate yet: no stored run of this pipeline"
    return (f"about {est['seconds'] / 60:.1f} min ({est['median']:.1f} s a run, the median of "
            f"its {est['runs']} stored)")
