"""`kit explain`'s text: one short paragraph per pair, in words a biologist can read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.numbers import fmt
from .fit import para

_NAMES = {
    "kmer": "the 3-mer counts",
    "tfidf": "TF-IDF",
    "svd_rand": "the randomized SVD",
    "svd_arpack": "the ARPACK SVD",
    "kmeans": "k-means",
    "knn": "the neighbours",
    "lr": "logistic regression",
    "mlp": "the MLP",
    "hgb": "boosting",
    "rf": "the forest",
}


def _names(stages, own: bool = True) -> str:
    """Stages in words (kit's own), or a lab file's outputs by their names (plain names: the
    worker's contract refuses any other)."""
    names = [_NAMES.get(s, s) if own else s for s in stages]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _of_file(e) -> bool:
    """Whether ``e`` is a lab file's pair (its stages are declared outputs)."""
    return bool(getattr(e, "outputs", False))


def _name(s: str, e) -> str:
    return _names([s], not _of_file(e))


def _outputs_text(e, head: str) -> str:
    """A lab file's pair: which outputs differ and which agree (nothing is cross-fed: the
    release scan, when there is one, says where each changes)."""
    by: dict = {}
    for s, o in e.stages.items():
        by.setdefault(o.origin, []).append(s)
    if not by.get("differs"):
        text = head + "every output is identical; nothing to explain."
        return text + (" " + release_text(e) if e.library and e.releases else "")
    parts = [f"{_names(by['differs'], False)} differ{'s' if len(by['differs']) == 1 else ''}"]
    if by.get("identical"):
        parts.append(
            f"{_names(by['identical'], False)} agree{'s' if len(by['identical']) == 1 else ''}"
        )
    return head + "; ".join(parts) + "." + (" " + release_text(e) if e.library else "")


def pair_text(e) -> str:
    """One pair's paragraph: where its difference starts, what inherits it, and its flips beside
    those noise of the embedding change's size gives (a lab file's pair: which outputs differ,
    and the release at which each changes)."""
    head = f"{e.label} (run {e.a[:12]} -> {e.b[:12]}): "
    if _of_file(e):
        return _outputs_text(e, head)
    by: dict = {}
    for s, o in e.stages.items():
        by.setdefault(o.origin, []).append(s)
    if set(by) <= {"identical"}:
        return head + "identical at every stage; nothing to explain."
    parts = []
    if e.first_origin:
        parts.append(
            f"the difference starts at {_NAMES.get(e.first_origin, e.first_origin)}, "
            "which still differs on identical inputs"
        )
    also = [s for s in by.get("originates", []) if s != e.first_origin]
    if also:
        parts.append(
            f"{_names(also)} also change{'s' if len(also) == 1 else ''} on "
            f"{'its' if len(also) == 1 else 'their'} own"
        )
    if by.get("inherited"):
        parts.append(
            f"{_names(by['inherited'])} differ{'s' if len(by['inherited']) == 1 else ''}"
            " only because their inputs did"
        )
    if by.get("not measured"):
        parts.append(f"{_names(by['not measured'])}: not measured (their cross-fed run is missing)")
    if by.get("identical"):
        parts.append(f"{_names(by['identical'])} agree{'s' if len(by['identical']) == 1 else ''}")
    text = head + "; ".join(parts) + "."
    models = [(s, o) for s, o in e.stages.items() if o.flips is not None]
    if e.emb_rel is not None and models:
        if e.curve:
            text += f" The embedding moved by {fmt(e.emb_rel)} ({e.curve})."
        else:
            text += (
                f" The embedding moved by {fmt(e.emb_rel)}; "
                + "; ".join(
                    f"{_NAMES[s]} {o.flips} flip{'s' if o.flips != 1 else ''}{_seeds(o)} "
                    f"(noise of that size: {fmt(o.predicted_flips)}, {o.reading})"
                    for s, o in models
                    if o.predicted_flips is not None
                )
                + "."
            )
    return text + (" " + release_text(e) if e.library else "")


def _seeds(o) -> str:
    """', 0.8 seed units': the flips over those another seed gives (none without seed pairs)."""
    return "" if o.seed_units is None else f", {fmt(o.seed_units)} seed units"


def _flips(o) -> str:
    return f" ({o.flips} flip{'s' if o.flips != 1 else ''}{_seeds(o)})" if o.flips else ""


def _step(v: str, o, versions: list, built: list) -> str:
    """'at 1.7.0', or 'between 1.5.2 and 1.7.0' when the releases in between were not built
    (the change may come at any of them), 'back at ...' when an earlier output returns."""
    before = built[built.index(v) - 1] if v in built and built.index(v) else None
    gap = before is not None and versions.index(v) - versions.index(before) > 1
    where = f"between {before} and {v}" if gap else f"at {v}"
    return f"back {where} (to its {o.back_to[v]} output)" if v in o.back_to else where


def _came_and_went(s: str, o, versions: list, built: list, e) -> str:
    """A stage identical at the pair's two ends that changes in between: each change, and the
    releases on which a collaborator would differ from both ends."""
    steps = [_step(v, o, versions, built) for v in o.changes_at]
    first, back = o.changes_at[0], next((v for v in o.changes_at if v in o.back_to), None)
    until = built[built.index(back) - 1] if back in built and built.index(back) else None
    span = f"{first}" if until in (None, first) else f"{first} to {until}"
    return (
        f"{_name(s, e)} is identical at both ends but changes {' and '.join(steps)}: "
        f"on {span} it differs from both"
    )


def release_text(e) -> str:
    """The release scan's sentence: at which releases each originating stage changes (and
    changes back), what could not be built, and the release notes to read."""
    rows = list(e.releases)
    built = [r["version"] for r in rows if r["status"] == "built"]
    versions = [r["version"] for r in rows]
    if not rows:
        return ""
    head = f"{e.library} {rows[0]['version']} -> {rows[-1]['version']}"
    parts, still = [], []
    for s, o in e.stages.items():
        if s == "kmer" and not _of_file(e):  # the counts are not rerun by a scan
            continue
        if o.origin not in ("originates", "differs"):
            if o.changes_at:  # identical at both ends, not in between
                parts.append(_came_and_went(s, o, versions, built, e))
            continue
        if not o.changes_at:
            still.append(s)
            continue
        steps = [_step(v, o, versions, built) for v in o.changes_at]
        parts.append(f"{_name(s, e)} changes {' and '.join(steps)}{_flips(o)}")
    # "not a release's" needs both ends measured: one built release can show no change at all
    ends = len(built) >= 2 and rows[0]["status"] == rows[-1]["status"] == "built"
    if still:
        parts.append(
            f"{_names(still, not _of_file(e))} {'does' if len(still) == 1 else 'do'} not change at any "
            "of the releases built"
            + ("" if parts or not ends else " (the difference is not a release's)")
        )
    text = f"{head} ({len(built)} of {len(rows)} releases scanned): " + "; ".join(parts) + "."
    bad = [r for r in rows if r["status"] != "built"]
    if bad:
        text += (
            " Not scanned: "
            + "; ".join(f"{r['version']} ({r['status']}: {r['why']})" for r in bad)
            + "."
        )
    if e.notes:
        text += " Release notes to read: " + ", ".join(n["url"] for n in e.notes) + "."
    return text


def explain_text(result: dict, skipped_runs: Sequence = ()) -> str:
    how = (
        "the releases in between" if any(_of_file(e) for e in result["pairs"]) else "cross-fed runs"
    )
    out = [f"Explaining {result['factor']}: where each difference starts ({how})", ""]
    out += [para(pair_text(e)) + "\n" for e in result["pairs"]]
    for why in result.get("unscanned", ()):
        out.append(para(f"releases in between: {why}."))
    for label, why in result["skipped"]:
        out.append(para(f"{label}: not explained: {why}."))
    for why in skipped_runs:
        out.append(para(f"not run: {why}"))
    return "\n".join(out)


def stored_lines(x: Mapping[str, Any]) -> list:
    """A factor's stored explanation (kit.analysis.explain_stored) as paragraphs: each
    explained pair's, then each pair not explained yet (or never cross-fed) with why."""
    return (
        [pair_text(e) for e in x["pairs"]]
        + [f"{label}: {why}." for label, why in x["missing"]]
        + [f"{label}: not explained: {why}." for label, why in x["skipped"]]
    )
