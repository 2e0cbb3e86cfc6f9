"""`kit compare` of a bundle of a lab pipeline's runs: each rerun here from the same file (by
its hash) and compared output by output by kind, as lab_budget compares a pair."""

from __future__ import annotations

from ..analysis.by_kind import compare
from ..core.errors import KitError
from ..core.hosts import host
from ..data.pipelines import (LabData, add_pipeline, file_sha256, pipeline_info, present,
                              verify)


def keep_files(doc: dict, labs: set, files) -> None:
    """Check that each of ``files`` (`kit compare --pipeline`) is a file the bundle's runs were
    made with (``labs``: their pipelines' hashes), and that each of several pipelines' files
    is given or here, then keep each by its hash. KitError, one line, before anything is
    written, naming the bundle's pipelines."""
    named = ", ".join(f"{_name(doc, s)} ({s[:12]})" for s in sorted(labs))
    if files and not labs:
        raise KitError("the bundle holds no pipeline file's runs (they are kit's own): compare "
                       "it without --pipeline")
    for f in files:
        sha = file_sha256(f)
        if sha not in labs:
            raise KitError(f"{f} differs from the file the bundle's runs were made with: it hashes "
                           f"to {sha[:12]}, the bundle's "
                           + (f"pipeline is {named}" if len(labs) == 1 else
                              f"runs name {len(labs)} pipelines: {named}")
                           + " (an edited file is another pipeline); nothing was written")
    given = {file_sha256(f) for f in files}
    absent = sorted(s for s in labs - given if not present(s))
    if len(labs) > 1 and absent:  # one pipeline's absence is lab_data's line
        raise KitError(f"the bundle's runs name {len(labs)} pipelines: {named}; the file of "
                       + ", ".join(f"{_name(doc, s)} ({s[:12]})" for s in absent)
                       + " is not here: give --pipeline FILE.py once for each; nothing was written")
    for f in files:
        add_pipeline(f)


def _name(doc: dict, sha: str) -> str:
    hint = doc.get("datasets", {}).get(sha, {})
    return (hint.get("pipeline") if isinstance(hint, dict) else None) or "file"


def lab_data(doc: dict, sha: str) -> LabData:
    """What the runner needs to rerun pipeline ``sha`` here: its file, kept under its hash.
    KitError, one line, when this KIT_HOME does not have that exact file."""
    name = _name(doc, sha)
    try:
        info = pipeline_info(sha)
    except KitError:
        info = None
    if info is None or verify(sha) is not None:
        raise KitError(f"the bundle's runs are of pipeline {name} ({sha[:12]}), whose "
                       f"file is not here: `kit compare BUNDLE --pipeline FILE.py` gives it (the "
                       f"same bytes: an edited file is another pipeline)")
    return LabData(info)


def lab_summary(store, doc: dict, pairs: list, reasons: dict, imported: dict) -> dict:
    """The answer for a pipeline's bundle: identical outputs, or which outputs differ and by
    how much; a probabilities output's flips are changed predictions."""
    per_run, flips, differ, probabilities = [], 0, {}, False
    for p in pairs:
        kinds = pipeline_info(p.a.pipeline).get("kinds", {})
        probabilities = probabilities or "probabilities" in kinds.values()
        outs = compare(store, p.a.run_id, p.b.run_id, kinds)
        moved = {n: d for n, d in outs.items() if not d["identical"]}
        for n in moved:
            differ[n] = differ.get(n, 0) + 1
        flips = max([flips] + [d.get("flips", 0) for d in moved.values()])
        per_run.append({"label": p.label, "a": p.a.run_id, "b": p.b.run_id, "outputs": outs,
                        "identical": not moved})
    same = sum(r["identical"] for r in per_run)
    if not per_run:
        answer = "nothing could be compared here: " + "; ".join(sorted(set(reasons.values())))
    elif same == len(per_run):
        answer = f"reproduced: all {len(per_run)} runs are bitwise identical at every output here"
    else:
        answer = (f"differs: {', '.join(f'{n} in {k} of {len(per_run)} runs' for n, k in differ.items())}"
                  + (f"; up to {flips} predictions flipped" if flips else
                     "; no prediction flipped" if probabilities else ""))  # only what was measured
    return {"answer": answer, "pipeline": True, "bundle_host": doc["host"], "this_host": host(),
            "imported": imported, "pairs": len(per_run), "identical": same,
            "not_compared": [{"run": k, "reason": v} for k, v in reasons.items()],
            "per_run": per_run}
