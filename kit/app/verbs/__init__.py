"""The verbs every front end calls: a Subject and options in, a frozen record out.

Each verb reads, plans (or runs) what one Subject (kit.core.subject) is of: kit's own pipeline
on a dataset, or a lab's pipeline file. Inside a verb the two may still go to their own reading
of the one engine (kit.analysis.budget's budget or output_budget); above this module nothing asks
which kind a subject is. A verb that cannot answer for a kind raises Refused, one line, saying
what it needs. Progress and questions go through callbacks, the Protocols of kit.core.callbacks;
front ends call them through kit.app.facade.Kit.
"""

from .comparing import compare
from .explaining import check_library, explain
from .planning import Plan, plan
from .reading import (
    across_splits,
    advise,
    amplify,
    budget,
    export_runs,
    has_protein_ids,
    homology,
    pairs,
    runs,
    tolerances,
    verdicts,
)
from .records import (
    BadOption,
    Budget,
    Clash,
    Compared,
    Doctor,
    Explanation,
    Export,
    Ran,
    Reading,
    Runs,
    Verdicts,
    factor_names,
)
from .reporting import Report, report
from .running import (
    HERE,
    ToRun,
    Where,
    check_where,
    doctor,
    options_for,
    run,
    run_at,
    to_run,
)

__all__ = [
    "HERE",
    "BadOption",
    "Budget",
    "Clash",
    "Compared",
    "Doctor",
    "Explanation",
    "Export",
    "Plan",
    "Ran",
    "Reading",
    "Report",
    "Runs",
    "ToRun",
    "Where",
    "Verdicts",
    "across_splits",
    "advise",
    "amplify",
    "budget",
    "check_library",
    "check_where",
    "compare",
    "doctor",
    "explain",
    "export_runs",
    "factor_names",
    "has_protein_ids",
    "homology",
    "pairs",
    "options_for",
    "plan",
    "report",
    "run",
    "run_at",
    "runs",
    "to_run",
    "tolerances",
    "verdicts",
]
