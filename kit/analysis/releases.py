"""The release scan's reading: the releases at which each originating stage's output changes.

Every release between a pair's two versions of a library is a probe stack (kit.envs.probes); in
each, the originating stages' groups are rerun on a's stored arrays (feed runs, planned by
``scan_specs``), so a stage's change is its own. Its ``changes_at`` lists every release whose
output differs bitwise from the previous built release's, read oldest first whichever end is a
(a change is named at the release that brought it); ``back_to`` names a release whose output is
one an earlier release already gave (a change that came and went: a stage identical at both
ends of the pair is read too, since its group was rerun). A lab's pipeline file declares
outputs, not stages: its scan reruns the whole file in each release (one run per release,
group ``WHOLE``) and reads each output's changes the same way. Read from the store.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..core.spec import RunSpec
from ..envs.releases import is_final, key
from ..runs.store import Store
from ..runs.store.hosts import host_id
from .compare import STAGES
from .explain import GROUP, PairExplanation, ReleaseRow, rerun_in_stacks

_NOTES = {
    "scikit-learn": lambda v: f"https://scikit-learn.org/stable/whats_new/v{_minor(v)}.html",
    "numpy": lambda v: f"https://numpy.org/doc/stable/release/{v}-notes.html",
    "scipy": lambda v: f"https://docs.scipy.org/doc/scipy/release/{v}-notes.html",
    "python": lambda v: f"https://docs.python.org/3/whatsnew/{_minor(v)}.html",
}


def _minor(v: str) -> str:
    return ".".join(v.split(".")[:2])


def notes_url(package: str, version: str) -> str:
    """The release notes to read for ``package`` at ``version`` (never fetched)."""
    known = _NOTES.get(package.lower())
    return known(version) if known else f"https://pypi.org/project/{package}/{version}/"


@dataclass(frozen=True)
class Release:
    """One release of a scan: its probe stack, or why it could not be built."""

    version: str
    stack: str | None = None
    stack_id: str | None = None
    why: str | None = None

    @property
    def built(self) -> bool:
        return self.stack_id is not None


WHOLE = ""  # a lab file's one "group": the whole file rerun, every output read
# {(stack, stack id, feed group): run id} of the stored scan runs on one run's arrays
ScanIndex = dict[tuple[str | None, str | None, str], str]
# one output's hashes in one release: (sha256, dtype) per stored array (None: not stored)
Output = tuple[tuple[str, str] | None, ...]


def scan_groups(origins: dict[str, str]) -> tuple[str, ...]:
    """The feed groups a scan reruns: those of the stages that originate (not the 3-mer counts,
    which start from the sequences alone)."""
    return tuple(
        dict.fromkeys(GROUP[s] for s, o in origins.items() if o == "originates" and s in GROUP)
    )


def scan_specs(a: RunSpec, releases: list[Release], groups: tuple[str, ...]) -> list[RunSpec]:
    """The feed runs of ``groups`` in every built release, all on a's arrays; for a lab's file,
    the file itself run in every built release, made here (as feed runs are)."""
    if a.pipeline:
        return (
            [
                a.with_(stack=r.stack, stack_id=r.stack_id, host=host_id())
                for r in releases
                if r.built
            ]
            if groups
            else []
        )
    stacks = [
        _Stack(r.stack, r.stack_id)
        for r in releases
        if r.stack is not None and r.stack_id is not None  # built
    ]
    return rerun_in_stacks(a, stacks, groups)


@dataclass(frozen=True)
class _Stack:
    name: str
    identity: str


def is_scan_run(a: RunSpec, s: RunSpec) -> bool:
    """Whether ``s`` is a scan's feed run on a's arrays in its own stack, whoever made it: a
    run read from a bundle keeps the machine that made it (the own-host rule of scan_specs is
    for making runs, never for reading them)."""
    if a.pipeline:  # the same file, seeds and settings, in another stack
        return (
            s.stack != a.stack
            and bool(s.stack_id)
            and s == a.with_(stack=s.stack, stack_id=s.stack_id, host=s.host)
        )
    if s.kind != "feed" or s.input != a.run_id or not s.stack or not s.feed:
        return False
    return s == scan_specs(a, [Release("", s.stack, s.stack_id)], (s.feed,))[0].with_(host=s.host)


def verified_here(store: Store, s: RunSpec) -> bool:
    """Whether a scan run may be read: made here, or its arrays stored here (checked as they
    came in). A hashes-only run from another machine is a claim nobody checked, and a scan's
    'changes at' would be whatever its stage hashes say."""
    return s.host == host_id() or store.has_arrays(s.run_id)


def scan_index(store: Store, a: RunSpec) -> ScanIndex:
    """{(stack, stack id, feed group): run id} of the stored scan runs on a's arrays (this
    machine's own run first when a bundle brought another one's too)."""
    here, out = host_id(), ScanIndex()
    for i, s in store.specs(a.dataset).items():
        k = (s.stack, s.stack_id, s.feed)
        if is_scan_run(a, s) and verified_here(store, s) and (k not in out or s.host == here):
            out[k] = i
    return out


def _output(
    store: Store, index: ScanIndex, r: Release, stage: str, whole: bool = False
) -> Output | None:
    """The hashes of ``stage`` (a lab file's output, ``whole``) in release ``r``'s run."""
    run_id = index.get((r.stack, r.stack_id, WHOLE if whole else GROUP[stage]))
    if run_id is None:
        return None
    st = store.run(run_id).stages
    return tuple(
        (st[n].sha256, st[n].dtype) if n in st else None
        for n in ((stage,) if whole else STAGES[stage])
    )


def changes(
    store: Store, a: RunSpec, releases: list[Release], stage: str, index: ScanIndex | None = None
) -> tuple[list[str], dict[str, str]]:
    """(changes_at, back_to) of one stage over the scanned releases (kit.analysis.releases's
    ``transitions``), read oldest release first whatever order ``releases`` comes in."""
    index = scan_index(store, a) if index is None else index
    return transitions(
        [
            (r.version, _output(store, index, r, stage, bool(a.pipeline)) if r.built else None)
            for r in oldest_first(releases)
        ]
    )


def oldest_first(releases: list[Release]) -> list[Release]:
    """``releases`` sorted by version, so that a change is named at the newer release of its
    transition whichever end of the pair is a (labels that are no versions keep their order)."""
    if all(is_final(r.version) for r in releases):
        return sorted(releases, key=lambda r: key(r.version))
    return list(releases)


def transitions(outputs: list[tuple[str, Any]]) -> tuple[list[str], dict[str, str]]:
    """(changes_at, back_to) of [(release, output or None: not measured)] in scan order: the
    releases whose output differs from the previous measured one's (each change named at the
    later release of its two), and {release: the earlier release whose output it gives again}."""
    at: list[str] = []
    back: dict[str, str] = {}
    seen: dict[Any, str] = {}  # {an output: the first release that gave it}
    prev = None
    for version, out in outputs:
        if out is None:
            continue
        if prev is not None and out != prev:
            at.append(version)
            if out in seen:
                back[version] = seen[out]
        seen.setdefault(out, version)
        prev = out
    return at, back


def release_rows(
    store: Store,
    a: RunSpec,
    package: str,
    releases: list[Release],
    groups: tuple[str, ...],
    index: ScanIndex | None = None,
) -> list[ReleaseRow]:
    """Each release's status: built (its feed runs stored), not run, or could not build: why."""
    rows: list[ReleaseRow] = []
    index = scan_index(store, a) if index is None else index
    for r in releases:
        why: str | None
        if not r.built:
            status, why = "could not build", r.why
        else:
            ran = all((r.stack, r.stack_id, g) in index for g in groups)
            status, why = ("built", None) if ran else ("not run", r.why or "its runs are missing")
        rows.append(
            ReleaseRow(package=package, version=r.version, stack=r.stack, status=status, why=why)
        )
    return rows


def apply_scan(
    e: PairExplanation, store: Store, a: RunSpec, package: str, releases: list[Release]
) -> PairExplanation:
    """``e`` with its releases, each originating stage's changes_at and back_to, and the
    release notes of every release at which something changes, all oldest release first."""
    releases = oldest_first(releases)
    groups = (WHOLE,) if a.pipeline else scan_groups({s: o.origin for s, o in e.stages.items()})
    stages, moved, index = {}, [], scan_index(store, a)
    for s, o in e.stages.items():
        # every stage the scan reran, not only those that differ between the ends: an output
        # identical at both ends can change at one release and back at a later one, and a
        # collaborator on a release in between differs from both (what was measured is said)
        rerun = a.pipeline or (s in GROUP and GROUP[s] in groups)
        if rerun and o.origin in ("originates", "differs", "identical"):
            at, back = changes(store, a, releases, s, index)
            o = replace(o, changes_at=tuple(at), back_to=back)
            moved += at
        stages[s] = o
    notes = tuple(
        {"version": v, "url": notes_url(package, v)}
        for v in sorted(set(moved), key=[r.version for r in releases].index)
    )
    return replace(
        e,
        stages=stages,
        library=package,
        notes=notes,
        releases=tuple(release_rows(store, a, package, releases, groups, index)),
    )
