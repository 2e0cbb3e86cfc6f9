"""`kit explain`'s release scan: list the releases between a pair's versions, lock and build
their probe stacks (asked first, as `kit run` asks), and make the feed runs in each of them.

The feed runs are ordinary stored runs (kit.analysis.releases reads them); probe stacks are
cached under KIT_HOME, so a second scan builds and runs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.explain import origins, output_origins, unexplainable
from ..analysis.explain_stored import measured
from ..analysis.releases import WHOLE, Release, apply_scan, scan_groups, scan_specs
from ..core.callbacks import Confirm, Log, OnDone
from ..core.errors import Failed, KitError
from ..envs.derived import scannable
from ..envs.kinds import stack_kind
from ..envs.platforms import detect
from ..envs.probes import PYTHON, prepare
from ..envs.releases import between, check_name, minor, python_releases, release_list
from ..runs.executing.runner import PlanIncomplete, run_all
from ..runs.store import Store

# what a version factor's pairs differ in: a package of the index, or the interpreter (whose
# releases uv lists, kit.envs.releases.python_releases)
LIBRARY = {"sklearn": "scikit-learn", "numpy": "numpy", "python": PYTHON}


class Declined(KitError):
    """The probe stacks a release scan needs were not to be built (answered no, or no terminal
    to ask and no --yes): the scan is skipped, the origins already found still stand."""


@dataclass
class Scan:
    """One pair's release scan: its releases (locked, or why not) and the groups it reruns."""

    pair: object  # StoredPair
    package: str
    releases: list = field(default_factory=list)  # [Release]; stack_id set once built
    groups: tuple = ()


def plan_scans(store: Store, factor: str, pairs: list, library: tuple | None = None) -> tuple:
    """([Scan], [why a pair is not scanned]) for the pairs whose stages originate a difference
    (a lab file's pairs: whose outputs differ; the whole file is rerun in each release); every
    release is locked here (uv resolves it: cheap, nothing is installed)."""
    scans, notes, plat = [], [], detect()
    lists: dict[str, list | KitError] = {}  # {package: its releases, or why none are listed}
    package = library[0] if library else LIBRARY.get(factor)
    if package is None:
        return [], []
    check_name(package)  # a bad --library NAME is refused once, not once per pair
    for p in pairs:
        groups = _groups(store, p)
        if not groups:
            continue
        a = store.run(p.a)
        base = scannable(a.spec.stack)
        if base is None:
            notes.append(
                f"{p.label}: a's stack {a.spec.stack} is not in the catalogue nor "
                "derived from it here: no pyproject to change, no release scan"
            )
            continue
        try:
            lo, hi = (
                library[1:]
                if library
                else (measured(a, package), measured(store.run(p.b), package))
            )
            if package == PYTHON:  # minors are scanned (python_releases says why)
                lo, hi = minor(lo or ""), minor(hi or "")
            if not (lo and hi):
                raise KitError(f"its runs do not both hold {package}")
            listed = _listed(package, lists, notes)
            releases = [
                Release(v, *_locked(prepare(base, package, v, plat)))
                for v in between(package, lo, hi, listed)
            ]
        except KitError as e:
            notes.append(f"{p.label}: no release scan: {e}")
            continue
        scans.append(Scan(p, package, releases, groups))
    return scans, notes


def _groups(store: Store, p) -> tuple:
    """What a scan of pair ``p`` reruns in each release: the feed groups of its originating
    stages, or (a lab file's pair with an output that differs) the whole file; () for none."""
    if store.run(p.a).spec.pipeline:
        return (WHOLE,) if "differs" in output_origins(store, p.a, p.b).values() else ()
    if unexplainable(store, p.a, p.b):
        return ()
    return scan_groups(origins(store, p.a, p.b))


def _listed(package: str, lists: dict, notes: list) -> list:
    """The index's releases of ``package``, asked once per scan (a failure too); a release list
    kept from before (the index unreachable) adds its line to ``notes``."""
    if package not in lists:
        try:
            lists[package], note = (
                (python_releases(), None) if package == PYTHON else release_list(package)
            )
            notes += [note] if note else []
        except KitError as e:
            lists[package] = e
    if isinstance(lists[package], KitError):
        raise lists[package]
    return lists[package]


def _locked(got: tuple) -> tuple:
    name, why = got
    return name, None, why


def to_build(scans: list) -> list:
    """[(probe stack, download bytes)] that are locked but not built yet."""
    plat, out = detect(), {}
    for s in scans:
        for r in s.releases:
            if r.stack and r.stack not in out:
                kind = stack_kind(r.stack)
                if kind.status(plat)[0] != "built":
                    out[r.stack] = kind.download_bytes(plat)
    return list(out.items())


def run_scans(
    scans: list,
    store: Store,
    dataset=lambda: None,
    confirm: Confirm[list] = lambda stacks: True,
    log: Log = lambda m: None,
    on_done: OnDone | None = None,
    jobs="auto",
) -> list:
    """Build the probe stacks (if ``confirm`` says yes), then the feed runs of every built
    release; a release that cannot be built keeps uv's last line and the scan goes on. Returns
    one line for each run that could not be made. ``dataset()`` gives the working dataset
    (asked only when a run is to be made). A ``confirm`` that says no raises Declined before
    anything is built or run, each scan left with the releases built before (what is stored
    of them still reads): the caller keeps what it computed before the scan."""
    plat, pending = detect(), to_build(scans)
    if pending and not confirm(pending):
        # the releases built before still read (their stored runs), as the report reads them
        for s in scans:
            s.releases = [
                Release(r.version, r.stack, stack_kind(r.stack).runnable().identity)
                if r.stack and r.stack not in dict(pending)
                else Release(r.version, r.stack, None, r.why or "not built (declined)")
                for r in s.releases
            ]
        raise Declined(f"{len(pending)} probe stack(s) not built")
    failed = {}
    for name, _ in pending:
        try:
            stack_kind(name).build(plat, log=lambda m, _n=name: log(f"{_n}: {m}"))
        except Failed as e:  # the cause alone: uv's last line, or why it cannot build here
            failed[name] = e.reason
        except KitError as e:  # a stack that is not kit's to build, uv not installed
            failed[name] = str(e)
    specs = []
    for s in scans:
        out = []
        for r in s.releases:
            if r.stack and r.stack not in failed:
                r = Release(r.version, r.stack, stack_kind(r.stack).runnable().identity)
            elif r.stack:
                r = Release(r.version, why=failed[r.stack])
            out.append(r)
        s.releases = out
        specs += scan_specs(store.run(s.pair.a).spec, out, s.groups)
    todo = [x for x in specs if not store.has_run(x.run_id)]
    if not todo:
        return []
    try:
        run_all(todo, dataset(), store, jobs=jobs, on_done=on_done)
    except PlanIncomplete as e:
        return [str(e)]
    return []


def explained(result: dict, scans: list, store: Store) -> dict:
    """``result`` (kit.analysis.explain.explain_factor) with each scanned pair's releases."""
    by = {(s.pair.a, s.pair.b): s for s in scans}
    pairs = []
    for e in result["pairs"]:
        s = by.get((e.a, e.b))
        pairs.append(apply_scan(e, store, store.run(e.a).spec, s.package, s.releases) if s else e)
    return {**result, "pairs": pairs}


def scan_runs(scans: list, store: Store) -> int:
    """How many feed runs the scans still need (a release not built yet counts its groups)."""
    plat, n = detect(), 0
    for s in scans:
        a = store.run(s.pair.a).spec
        for r in s.releases:
            if not r.stack:
                continue
            kind = stack_kind(r.stack)
            if kind.status(plat)[0] != "built":
                n += len(s.groups)
                continue
            built = Release(r.version, r.stack, kind.runnable().identity)
            n += sum(not store.has_run(x.run_id) for x in scan_specs(a, [built], s.groups))
    return n
