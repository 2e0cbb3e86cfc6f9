"""The explanations the store already holds: `kit explain`'s feed and probe runs, read back.

Readers (the report, advice, the TUI's budget tab) run nothing and build no probe: a pair
reads as `kit explain` prints it when the cross-fed runs it needs are stored, and says "not
explained yet" when they are not. A release scan is read from the probe stacks' feed runs on
a's arrays that are stored (the releases that were built and run), in scan order.
"""

from __future__ import annotations

from typing import Any, TypedDict

from ..core.spec import RunSpec
from ..envs.probes import PREFIX, PYTHON
from ..envs.releases import is_final, key, minor
from ..runs.store import Store
from ..runs.store.records import StoredPair, StoredRun
from ..worker.pipeline import FEEDS
from . import amplify
from .explain import (
    GROUP,
    PairExplanation,
    explain_outputs,
    explain_pair,
    feed_spec,
    seed_unit,
    unexplainable,
)
from .records import BudgetRow
from .releases import Release, apply_scan, is_scan_run, scan_groups, scan_index, verified_here

Fed = dict[str, list[RunSpec]]  # {input run: [feed spec]}


class StoredExplanation(TypedDict):
    """A factor's explanations as the store holds them (``stored_explanation``)."""

    factor: str
    pairs: list[PairExplanation]
    missing: list[tuple[str, str]]  # (label, why)
    skipped: list[tuple[str, str]]  # (label, why)
    runs: int  # cross-fed runs still to make
    stored: bool  # whether any is stored


def not_yet(factor: str, runs: int) -> str:
    """What a pair (or a row) without its cross-fed runs says, with what computing it costs."""
    return (
        f"not explained yet: `kit explain {factor}` computes it "
        f"({runs} cross-fed run{'s' if runs != 1 else ''})"
    )


def _feeds(store: Store) -> Fed:
    """{input run: [feed spec]} of every stored cross-fed run."""
    out: Fed = {}
    for s in store.specs().values():
        if s.kind == "feed":
            out.setdefault(s.input, []).append(s)
    return out


def _own(store: Store, pair: StoredPair, fed: Fed) -> bool:
    """Whether any cross-fed run of this pair is stored (a scan needs them: it reruns the
    stages they found originating)."""
    a, b = store.run(pair.a).spec, store.run(pair.b).spec
    ids = {feed_spec(a, b, g).run_id for g in FEEDS}
    return any(s.run_id in ids for s in fed.get(pair.a, ()))


def measured(run: StoredRun, package: str) -> str | None:
    """The version of ``package`` a stored run measured (python: its interpreter's minor, what a
    Python scan names its releases by); None when its manifest does not say."""
    return measured_in(run.manifest, package)


def measured_in(manifest: object, package: str) -> str | None:
    """What ``measured`` reads, from a manifest (a bundle's run, before it is stored)."""
    env = manifest.get("env", {}) if isinstance(manifest, dict) else {}
    env = env if isinstance(env, dict) else {}
    if package == PYTHON:
        return minor(env["python"]) if isinstance(env.get("python"), str) else None
    packages = env.get("packages")
    version = packages.get(package) if isinstance(packages, dict) else None
    return version if isinstance(version, str) else None


def _probed(store: Store, pair: StoredPair, fed: Fed) -> dict[str, dict[str, Release]]:
    """{package: {version: Release}} of every stored probe run a scan made on a's arrays (made
    here or read from a bundle), each run measured at the release its probe's name says."""
    a = store.run(pair.a).spec
    prefix = f"{PREFIX}{a.stack}-"
    found: dict[str, dict[str, Release]] = {}
    for s in fed.get(pair.a, ()):
        package, _, version = s.stack[len(prefix) :].rpartition("-")
        if not (
            s.stack.startswith(prefix) and package and is_scan_run(a, s) and verified_here(store, s)
        ):
            continue
        if (is_final(version) or package == PYTHON) and measured(
            store.run(s.run_id), package
        ) == version:
            found.setdefault(package, {})[version] = Release(version, s.stack, s.stack_id)
    return found


def _scan(
    store: Store, pair: StoredPair, fed: Fed, any_package: bool = False
) -> tuple[str | None, list[Release]]:
    """(package, [Release]) of the stored probe runs on a's arrays, in scan order (a's version
    of the package towards b's), for a package the pair's two runs measured at different
    versions (a's arrays are shared by its pairs: another factor's pair is not scanned; a lab
    file's scan, ``any_package``, is of the --library it was asked for, whatever the pair);
    (None, []) when fewer than two releases are stored."""
    ra, rb = store.run(pair.a), store.run(pair.b)
    found = {
        p: v
        for p, v in _probed(store, pair, fed).items()
        if any_package or measured(ra, p) != measured(rb, p)
    }
    if not found:
        return None, []
    package = max(found, key=lambda p: len(found[p]))
    lo, hi = measured(ra, package) or "", measured(rb, package) or ""
    down = is_final(lo) and is_final(hi) and key(lo) > key(hi)
    releases = sorted(found[package].values(), key=lambda r: key(r.version), reverse=down)
    return (package, releases) if len(releases) > 1 else (None, [])


def _missing_runs(store: Store, pair: StoredPair, e: PairExplanation) -> int:
    """The cross-fed runs this pair still needs (one per group of its unmeasured stages)."""
    a, b = store.run(pair.a).spec, store.run(pair.b).spec
    groups = {GROUP[s] for s, o in e.stages.items() if o.origin == "not measured"}
    return sum(not store.has_run(feed_spec(a, b, g).run_id) for g in groups)


def stored_explanation(
    store: Store,
    dataset: str,
    factor: str,
    rows: list[BudgetRow] | None = None,
    fed: Fed | None = None,
    level: str | None = None,
) -> StoredExplanation:
    """{"factor", "pairs": [PairExplanation], "missing": [(label, why)], "skipped": [(label,
    why)], "runs": cross-fed runs still to make, "stored": whether any is stored} of a
    factor's pairs on ``dataset``, from the stored runs alone; ``rows``: the budget's rows
    (their perturbation curves); ``level``: that level's pairs only (a budget row's)."""
    fed = _feeds(store) if fed is None else fed
    curves, unit = amplify.curves(rows or []), seed_unit(rows)
    out = StoredExplanation(factor=factor, pairs=[], missing=[], skipped=[], runs=0, stored=False)
    for p in store.pairs(dataset):
        if p.factor != factor or level not in (None, p.level):
            continue
        uncrossed = unexplainable(store, p.a, p.b)
        why = uncrossed.why if uncrossed else None
        if uncrossed and uncrossed.never:
            out["skipped"].append((p.label, uncrossed.why))
            continue
        out["stored"] = out["stored"] or _own(store, p, fed)
        e = explain_pair(store, p, curves, unit)
        if scan_groups({s: o.origin for s, o in e.stages.items()}):
            package, releases = _scan(store, p, fed)
            if package:
                e = apply_scan(e, store, store.run(p.a).spec, package, releases)
        n = _missing_runs(store, p, e)
        if n and not why:
            out["missing"].append((p.label, not_yet(factor, n)))
            out["runs"] += n
        elif any(o.origin == "not measured" for o in e.stages.values()):
            out["missing"].append((p.label, f"not explained: {why}"))
        else:
            out["pairs"].append(e)
    return out


def stored_output_explanations(store: Store, pipeline: str) -> list[dict[str, Any]]:
    """A lab file's explanations the store holds, one per factor with a stored release scan:
    explain_outputs with each pair's scan (the whole file rerun in probe stacks, runs stored
    here or from a bundle with their arrays) applied, read back; nothing is run. [] when no
    pair of the file was scanned."""
    specs = store.specs()
    probes = [s for s in specs.values() if s.pipeline == pipeline and s.stack.startswith(PREFIX)]
    if not probes:
        return []
    out = []
    for factor in dict.fromkeys(p.factor for p in store.pairs(pipeline)):
        pairs = {(p.a, p.b): p for p in store.pairs(pipeline) if p.factor == factor}
        x, scanned = explain_outputs(store, pipeline, factor), False
        for k, e in enumerate(x["pairs"]):
            a = specs[e.a]
            fed = {e.a: [s for s in probes if is_scan_run(a, s)]}
            package, releases = _scan(store, pairs[(e.a, e.b)], fed, any_package=True)
            if package:
                x["pairs"][k], scanned = apply_scan(e, store, a, package, releases), True
        if scanned:
            out.append({**x, "missing": [], "runs": 0, "stored": True})
    return out


def stored_explanations(
    store: Store, dataset: str, rows: list[BudgetRow] | None = None
) -> list[StoredExplanation]:
    """stored_explanation of every factor on ``dataset`` with a stored cross-fed run, in the
    order its pairs were stored ([] when there is none: nothing reads differently)."""
    fed = _feeds(store)
    if not fed:
        return []
    pairs = store.pairs(dataset)
    # a cheap look first (spec hashes): only a factor with stored cross-fed runs is read
    touched = dict.fromkeys(p.factor for p in pairs if p.a in fed and _own(store, p, fed))
    return [stored_explanation(store, dataset, f, rows, fed) for f in touched]


def explain_runs(store: Store, pairs: list[StoredPair]) -> list[str]:
    """The stored runs `kit explain` made for ``pairs``: their cross-fed runs and the probe
    runs of their release scans (what a bundle of those pairs carries to explain them)."""
    fed, out = _feeds(store), list[str]()
    for p in pairs:
        a, b = store.run(p.a).spec, store.run(p.b).spec
        ids = {feed_spec(a, b, g).run_id for g in FEEDS}
        out += [s.run_id for s in fed.get(p.a, ()) if s.run_id in ids]
        # the scan this pair reads, as _scan picks it (a's arrays are shared: a's other
        # pairs' scans are theirs, exported with their factor)
        package, releases = _scan(store, p, fed)
        index = scan_index(store, a) if package else {}
        out += [
            index[k] for r in releases for g in FEEDS if (k := (r.stack, r.stack_id, g)) in index
        ]
    return list(dict.fromkeys(out))
