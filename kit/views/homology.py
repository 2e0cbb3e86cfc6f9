"""Homology in text: the clustering, each model's leakage split and the verdicts under clusters."""

from __future__ import annotations

from ..analysis.across_splits import HOMOLOGS, LIMIT, PAIRED, RISE, UNSURE
from ..analysis.compare import ALL_MODELS
from ..analysis.homology_words import counts, narrow, resting
from ..core.numbers import fmt
from ..core.subject import pipeline_head
from .fit import para, table
from .writers import TEXT, Writer

LEAK_HEAD = ["model", "acc with homolog", "acc without", "AUC with", "AUC without"]
VERDICT_HEAD = [
    "verdict (b-a metric)",
    "runs",
    "protein 95% interval",
    "cluster 95% interval",
    "width ratio",
    "changed in",
    "lost in",
]


def clustering_line(c: dict) -> str:
    """'MMseqs2 18-8cc5c at 30% identity, 80% coverage: 4% of test proteins (79) have a train
    protein above it by search (GraphPart's rule); 812 clusters (largest 17, 603 singletons),
    0% of test proteins (0) share one with a train protein'."""
    head = (
        f"{c.get('tool', 'MMseqs2')} at {c['identity']:.0%} identity, {c['coverage']:.0%} "
        "coverage: "
    )
    search = (
        f"{c['test_with_train_hit']:.0%} of test proteins ({c['test_with_train_hit_count']:,}) "
        "have a train protein above it by search (GraphPart's rule); "
        if "test_with_train_hit_count" in c
        else ""
    )
    return (
        f"{head}{search}{c['clusters']:,} clusters (largest {c['largest']:,}, "
        f"{c['singletons']:,} singletons), {c['test_with_train_homolog']:.0%} of test "
        f"proteins ({c['test_with_train_homolog_count']:,}) share one with a train protein"
        + ("" if search else " (`kit data homology` adds the search, GraphPart's rule)")
    )


def _interval(d: dict) -> str:
    return "-" if d.get("lo") is None else f"{d['lo']:+.4f} .. {d['hi']:+.4f}"


def _range(r) -> str:
    return "" if not r or r[0] == r[1] else f" ({fmt(r[0])}-{fmt(r[1])})"


def leak_cells(name: str, m) -> list:
    """One model's leakage row: medians over the runs, with their range where runs differ."""
    return [name] + [
        fmt(getattr(m, k)) + _range(getattr(m, k + "_range"))
        for k in (
            "acc_with_homolog",
            "acc_without_homolog",
            "auc_with_homolog",
            "auc_without_homolog",
        )
    ]


def verdict_cells(v) -> list:
    """One verdict under both bootstraps: median intervals, width ratio, runs it changed in."""
    return [
        v.verdict,
        str(v.runs),
        _interval(v.protein),
        _interval(v.cluster),
        fmt(v.width_ratio) + _range(v.width_ratio_range),
        f"{v.changed}/{v.runs} runs",
        f"{v.lost}/{v.runs} runs",
    ]


def model_order(h) -> list:
    """The models of a summary: kit's in its order, then a lab pipeline's in KINDS order."""
    return [m for m in ALL_MODELS if m in h.models] + [m for m in h.models if m not in ALL_MODELS]


def summary_line(h) -> str:
    """The one sentence the budget and the TUI put under their tables."""
    return (
        f"Homology ({clustering_line(h.clustering)}): {narrow(h)}; {resting(h)}. "
        "`kit homology` shows each."
    )


def homology_text(h) -> str:
    """What `kit homology` prints below its dataset line."""
    out = [para(clustering_line(h.clustering))]
    if not h.runs:
        out.append(
            para(
                "no runs with verdicts on this dataset yet: `kit run --factor seed` makes "
                "some"
                + (
                    f" ({len(h.left_out)} left out: " + "; ".join(h.left_out[:3]) + ")"
                    if h.left_out
                    else ""
                )
            )
        )
        return "\n".join(out)
    return "\n".join(out + leakage_part(h) + verdicts_part(h) + left_part(h))


def leakage_part(h, w: Writer = TEXT) -> list:
    """The leakage table with its lead-in, as blocks (empty lead line first)."""
    return [
        "",
        w.para(
            f"Leakage over {h.runs} runs (medians, ranges in brackets): accuracy and "
            f"AUC on the {counts(h)}"
        ),
        w.table([leak_cells(m, h.models[m]) for m in model_order(h)], LEAK_HEAD),
    ]


def verdicts_part(h, w: Writer = TEXT) -> list:
    """The verdicts under both bootstraps and the closing sentence, as blocks."""
    return [
        "",
        w.para(
            "Verdicts under the cluster bootstrap (test clusters resampled whole, "
            "both models on the same draws, 2,000 resamples, 95%): median intervals; "
            "width ratio = cluster width / protein width"
        ),
        w.table([verdict_cells(v) for v in h.verdicts], VERDICT_HEAD),
        "",
        w.para(closing(h)),
    ]


def left_part(h, w: Writer = TEXT) -> list:
    """The runs left out, at most three named, as blocks (none when none was)."""
    if not h.left_out:
        return []
    said = (
        f"{len(h.left_out)} run(s) left out: "
        + "; ".join(h.left_out[:3])
        + ("; ..." if len(h.left_out) > 3 else "")
    )
    return ["", para(said, "  ", "note: ") if w is TEXT else w.para("note: " + said)]


def closing(h) -> str:
    text = f"{narrow(h)}; {resting(h)}."
    return text[0].upper() + text[1:]


# -- a subject's protein ids read in a stored clustering (a pipeline file's) ------------------
def ids_clustering_line(r: dict) -> str:
    """'dataset fam, the smallest ...: MMseqs2 18-8cc5c at 30% identity, 80% coverage: 40
    clusters of its 160 proteins (largest 7, 6 singletons); each run's ids (proteins) mapped
    into it'."""
    c = r["summary"].clustering
    return (
        f"{r['chosen']}: {c.get('tool', 'MMseqs2')} at {c['identity']:.0%} identity, "
        f"{c['coverage']:.0%} coverage: {c['clusters']:,} clusters of its {c['proteins']:,} "
        f"proteins (largest {c['largest']:,}, {c['singletons']:,} singletons); each run's "
        f"protein ids ({r['proteins']}) mapped into it"
    )


def output_homology_text(r: dict, w: Writer = TEXT) -> str:
    """What `kit homology --pipeline` prints (kit.analysis.homology's output_homology); ``w``:
    how it is written (kit.views.writers: the report's Markdown and HTML too)."""
    h = r["summary"]
    n = r["runs_stored"]
    out = [
        w.para(f"{pipeline_head(r['name'], r['pipeline'])} under homology"),
        "",
        w.para(ids_clustering_line(r), ""),
    ]
    if n > h.runs + len(h.left_out):  # a repeat's runs: one measurement
        out.append(
            w.para(
                f"{n} runs stored, {h.runs + len(h.left_out)} distinct: runs "
                f"identical in every output read here (a repeat's) are counted once"
            )
        )
    out += (
        leakage_part(h, w)
        if h.models
        else ["", w.para(r["leakage"] or "no run's leakage split could be measured")]
    )
    if h.verdicts:
        out += verdicts_part(h, w)
    else:
        out += [
            "",
            w.para(
                f"one model ({', '.join(r['models'])}): no pair of models to compare under clusters"
            ),
        ]
    return w.joined(out + left_part(h, w))


def homology_pointer(given: str) -> str:
    """The line `kit verdicts --pipeline` ends with when the pipeline declares protein ids."""
    return para(
        f"Under homology: kit homology --pipeline {given} (cluster-bootstrap verdicts, leakage)",
        "",
        "",
    )


ACROSS_HEAD = ["model", "random split", "homology-disjoint", "change", "split units", "call"]
PAIRED_HEAD = "random re-splits"  # the paired yardstick's column: b's proteins at b's sizes


def _cell(value: float, sd, says: str = "") -> str:
    spread = "" if sd is None else f" ±{fmt(sd)}"
    return f"{says + ' ' if says else ''}{fmt(value)}{spread}"


def _across_row(x, name: str, says: bool = False) -> list:
    units = "-" if x.split_units is None else f"{x.split_units:+.1f}"
    return [
        name,
        _cell(x.a, x.a_sd, x.a_says if says else ""),
        _cell(x.b, x.b_sd, x.b_says if says else ""),
        f"{x.b - x.a:+.3g}",
        units,
        x.call,
    ]


def _nothing(r) -> str:
    """Why nothing can be attributed to homologs (r.nothing)."""
    if r.leaked:  # a clustering saw some, but b's own search found no pair to separate
        return (
            f"Nothing to attribute to homologs: the disjoint split's own search found no pair "
            "of proteins above its threshold, so it separated none and removed none (nor the "
            f"homolog(s) counted above): {r.b} is one more random split and its changes are a "
            "change of split."
        )
    return (
        f"Nothing to attribute to homologs: no test protein of {r.a} has a train "
        f"homolog and the disjoint split removed none, so {r.b} is one more random "
        "split and its changes are a change of split."
    )


def _sizes(r) -> str:
    return f" (train {r.sizes[0]:,} / test {r.sizes[1]:,})" if r.sizes else ""


def _unit(r) -> str:
    """The yardstick's runs and what a split unit is, in a phrase."""
    if r.yardstick == PAIRED:
        return (
            f"paired, {r.split_runs} random re-splits (seed:split) of {r.b}'s own proteins at "
            f"its own sizes{_sizes(r)}, its removed proteins left out, so only where the "
            "proteins fall differs (a split unit is the SD of one random split's change from "
            "their mean)"
        )
    return (
        f"the split-to-split spread, from {r.split_runs} seed:split runs of {r.a} (a split "
        "unit is the SD of the change between two random splits)"
    )


def _yardstick(r) -> str:
    """What the changes are judged against, and what the calls then say."""
    paired = r.yardstick == PAIRED
    if r.nothing:
        return _nothing(r) + (
            f" The split units' yardstick, for reference only: {_unit(r)}."
            if r.split_runs > 1
            else ""
        )
    if r.split_runs < 2:
        what = f"paired, random re-splits of {r.b} at its own sizes" if paired else ""
        return (
            f"Yardstick: {what or 'the split-to-split spread'} "
            f"(seed:split), and {r.b if paired else r.a} has {r.split_runs} split run(s): "
            f"cannot tell whether any change rests on homologs before `{r.needs}` measures "
            "it (the seed spread is no yardstick here: a different split moves accuracy far "
            "more than a different seed)."
        )
    return (
        f"Yardstick: {_unit(r)}. A change beyond {LIMIT:g} split units at the upper end of "
        "that unit's 95% interval is attributed to homologs shared by train and test; within "
        f"{LIMIT:g} at its lower end it is what a re-split gives; between the two, cannot tell."
        + (f" More split seeds narrow it: `{r.needs}`." if r.needs else "")
    )


def _conclusion(r) -> str:
    """Which changes are attributed to homologs, in a sentence (and which rose, in another)."""
    rows = r.models + r.verdicts
    beyond = [x.name for x in rows if x.call == HOMOLOGS]
    rose = [x.name for x in rows if x.call == RISE]
    if r.nothing:
        return "No change is attributed to homologs."
    said = []
    if beyond:
        said.append(
            "Beyond a change of split, so resting on homologs shared by train and test: "
            + ", ".join(beyond)
            + "."
        )
    elif any(x.call == UNSURE for x in rows):
        said.append(
            "No change is beyond the split spread as measured; for "
            + ", ".join(x.name for x in rows if x.call == UNSURE)
            + " cannot tell."
        )
    elif not rose:
        said.append("No change is beyond what a re-split gives: none is attributed to homologs.")
    if rose:
        said.append(
            "Higher on the disjoint split beyond a change of split, which removing homologs "
            "shared by train and test does not explain (something else the split changed, "
            "such as each side's class balance): " + ", ".join(rose) + "."
        )
    return " ".join(said)


def across_text(r) -> str:
    """Accuracy and verdicts on a random split beside a homology-disjoint one (kit homology
    --against): medians over each split's seed runs, ± their spread, and the change judged
    against the split-to-split spread, or (paired) against random re-splits of the disjoint
    split's own proteins (kit.analysis.across_splits)."""
    how = {"graphpart": "GraphPart", "clusters": "whole clusters"}.get(r.method, r.method)
    removed = f", {r.removed:,} proteins removed" if r.removed else ""
    leak = (
        "" if r.leaked is None else f" {r.leaked:,} test protein(s) of {r.a} have a train homolog."
    )
    paired = r.yardstick == PAIRED
    against = (
        f"{r.a_runs} random re-splits of its own proteins{_sizes(r)}"
        if paired
        else f"{r.a} (random split, {r.a_runs} seed runs)"
    )
    disjoint = f"{r.b} (homology-disjoint by {how}{removed}; {r.b_runs} seed runs)"
    out = [
        para(
            (f"{disjoint} against {against}." if paired else f"{against} against {disjoint}.")
            + leak
        ),
        para(_yardstick(r)),
    ]
    head = [ACROSS_HEAD[0], PAIRED_HEAD, *ACROSS_HEAD[2:]] if paired else ACROSS_HEAD
    out.append(table([_across_row(x, x.name) for x in r.models], head))
    rows = [_across_row(x, x.name + (" *" if x.changed else ""), says=True) for x in r.verdicts]
    out.append(table(rows, ["verdict (b-a)", *head[1:]], wrap=(1, 2)))
    changed = [x.name for x in r.verdicts if x.changed]
    out.append(
        para(
            f"{len(changed)} of {len(r.verdicts)} verdicts change their call between the "
            "splits (*)" + (": " + ", ".join(changed) if changed else "") + "."
        )
    )
    out.append(para(_conclusion(r)))
    return "\n\n".join(out)
