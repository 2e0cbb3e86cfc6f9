"""A lab pipeline under homology in text: the clustering its ids were mapped into, each model's
leakage split and each verdict under both bootstraps (kit.analysis.homology's output_homology)."""

from __future__ import annotations

from .fit import para
from .homology import leakage_part, left_part, verdicts_part


def lab_clustering_line(r: dict) -> str:
    """'dataset fam, the smallest ...: MMseqs2 18-8cc5c at 30% identity, 80% coverage: 40
    clusters of its 160 proteins (largest 7, 6 singletons); each run's ids (proteins) mapped
    into it'."""
    c = r["summary"].clustering
    return (f"{r['chosen']}: {c.get('tool', 'MMseqs2')} at {c['identity']:.0%} identity, "
            f"{c['coverage']:.0%} coverage: {c['clusters']:,} clusters of its {c['proteins']:,} "
            f"proteins (largest {c['largest']:,}, {c['singletons']:,} singletons); each run's "
            f"protein ids ({r['proteins']}) mapped into it")


def lab_homology_text(r: dict) -> str:
    """What `kit homology --pipeline` prints."""
    h = r["summary"]
    n = r["runs_stored"]
    out = [f"pipeline {r['name']} ({r['pipeline'][:12]}) under homology", "",
           para(lab_clustering_line(r))]
    if n > h.runs + len(h.left_out):  # a repeat's runs: one measurement
        out.append(para(f"{n} runs stored, {h.runs + len(h.left_out)} distinct: runs identical "
                        f"in every output read here (a repeat's) are counted once"))
    out += leakage_part(h) if h.models else ["", para(r["leakage"] or "no run's leakage split "
                                                       "could be measured")]
    if h.verdicts:
        out += verdicts_part(h)
    else:
        out += ["", para(f"one model ({', '.join(r['models'])}): no pair of models to compare "
                         f"under clusters")]
    return "\n".join(out + left_part(h))


def lab_homology_pointer(given: str) -> str:
    """The line `kit verdicts --pipeline` ends with when the pipeline declares protein ids."""
    return para(f"Under homology: kit homology --pipeline {given} (cluster-bootstrap verdicts, "
                f"leakage)", "", "")
