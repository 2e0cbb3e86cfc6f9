"""What a bundle could claim but kit derives itself: pair labels from specs, probe runs from the catalogue."""

from __future__ import annotations

import re

from ..analysis.explain_stored import measured_in
from ..core import factors
from ..core.errors import KitError
from ..core.spec import RunSpec
from ..envs.catalogue import definitions
from ..envs.containers import loaded
from ..envs.derived import PREFIX as DERIVED
from ..envs.derived import base_of, derived_name
from ..envs.probes import PREFIX, PYTHON, is_name, probe_name
from ..envs.releases import is_final
from ..runs.planning.stack_pairs import listed_pairs


def check_derived(doc: dict, path) -> None:
    """Refuse (one line) a bundle whose pair labels are not what their specs show: a pair's
    factor decides how the importer's own budget, advice and tolerances read it, so a seed
    pair labelled ``repeat`` would fail this machine's null experiment."""
    specs = {r["id"]: RunSpec.from_dict(r["spec"]) for r in doc["runs"]}  # checked by read()
    catalogue = None
    for r in doc["runs"]:
        if specs[r["id"]].stack.startswith(PREFIX):
            catalogue = definitions() if catalogue is None else catalogue  # read once
            _check_probe_run(r, specs, catalogue, path)
    _hints(doc, specs, path)
    specs = _as_bases(doc, specs, path)  # a pipeline's derived stacks paired as their bases
    specs = _as_twins(specs)  # an image loaded from a bundle paired as the stack it came from
    stacks: dict = {}
    seen = set()
    for p in doc["pairs"]:
        a, b, factor = specs[p["a"]], specs[p["b"]], p["factor"]
        name = f"{path}: pair {p['label'][:40]!r}"
        # one measurement is one pair: the same two runs again, either way round, would weigh
        # twice in its row (and in the seed unit)
        key = (factor, *sorted((p["a"], p["b"])))
        if key in seen:
            raise KitError(
                f"{name} pairs two runs another {factor[:40]} pair of the bundle "
                "already pairs; refusing the bundle"
            )
        seen.add(key)
        if not _differs(factor, a, b, stacks):
            raise KitError(
                f"{name} is labelled {factor[:40]!r}, but its specs show "
                f"{_shown(a, b, stacks)}; refusing the bundle"
            )
        want = factors.level(factor, a, b)
        if p["level"] != want:
            raise KitError(
                f"{name} is labelled level {p['level'][:20]!r} of {factor}, but its "
                f"specs make it level {want!r}; refusing the bundle"
            )


def _as_bases(doc: dict, specs: dict, path) -> dict:
    """``specs`` with each run in a derived stack named by its base stack, once its name is
    the one this kit gives its base plus its pipeline's REQUIRES (read from the pipeline's
    file, never from the bundle's word): a stack factor's pairs are then the catalogue's."""
    labs = doc.get("_declared", {})
    out = dict(specs)
    for r in doc["runs"]:
        s = specs[r["id"]]
        if s.stack.startswith(DERIVED):
            out[r["id"]] = s.with_(stack=_derived_base(r["id"], s, labs, path))
    return out


def _derived_base(run_id: str, s: RunSpec, labs: dict, path) -> str:
    """The catalogue stack the derived stack a run names is of; one KitError line if it is
    not one this kit would make for that run's pipeline."""
    name = f"{path}: run {run_id[:12]} in stack {s.stack[:60]!r}"
    base = base_of(s.stack)
    if base is None:
        raise KitError(
            f"{name}: no stack of this kit's catalogue has a derived stack of that "
            "name (req-STACK-DIGEST); refusing the bundle"
        )
    requires = (labs.get(s.pipeline) or {}).get("requires") if s.pipeline else None
    if not requires:
        raise KitError(
            f"{name}: a derived stack's runs are of a pipeline with REQUIRES whose "
            "file the bundle carries; refusing the bundle"
        )
    if derived_name(base, requires) != s.stack:
        raise KitError(
            f"{name} is not {base} with its pipeline's REQUIRES "
            f"({', '.join(requires)[:80]}); refusing the bundle"
        )
    return base


def _as_twins(specs: dict) -> dict:
    """``specs`` with each run in a loaded image (``NAME@bundle-ID12``, kit compare
    --trust-image) named by the container stack of the bundle whose image it is: the same
    NAME, the same image id, ID12 its first digits. A rerun there is paired as ``host`` with
    the run it reproduces (the image held fixed), which a name alone would call another
    stack. A loaded run with no such twin keeps its name (and its pairs must show a factor
    by themselves)."""
    built = {
        (s.stack.rsplit("@", 1)[0], s.stack_id): s.stack
        for s in specs.values()
        if "@" in s.stack and not loaded.is_loaded(s.stack.rsplit("@", 1)[1])
    }
    out = dict(specs)
    for run, s in specs.items():
        inner, _, tail = s.stack.rpartition("@")
        twin = built.get((inner, s.stack_id))
        if inner and loaded.is_loaded(tail) and twin and loaded.name(inner, s.stack_id) == s.stack:
            out[run] = s.with_(stack=twin)
    return out


def _hints(doc: dict, specs: dict, path) -> None:
    """A dataset hint is of a run's dataset: any other is padding the bundle does not need."""
    used = {s.dataset for s in specs.values()}
    extra = next((h for h in doc.get("datasets", {}) if h not in used), None)
    if extra is not None:
        raise KitError(
            f"{path}: the bundle's dataset hint {str(extra)[:12]!r} is of no run of "
            "it; refusing the bundle"
        )


def _differs(factor: str, a: RunSpec, b: RunSpec, stacks: dict) -> bool:
    f = factors.get(factor)
    if f is not None and f.planned == factors.STACKS and factor not in stacks:
        stacks[factor] = listed_pairs(factor)  # this kit's own catalogue, never the bundle's
    return factors.differs(factor, a, b, stacks.get(factor, ()))


def _shown(a: RunSpec, b: RunSpec, stacks: dict) -> str:
    """The factor(s) a pair's specs show, or what differs when no factor of this kit's does."""
    lab = [f"seed:{k}" for k in a.seed_dict] if a.pipeline else []
    found = [n for n in (*factors.names(), *lab) if _differs(n, a, b, stacks)]
    if found:
        return " or ".join(dict.fromkeys(found))
    da, db = vars(a), vars(b)
    moved = [k for k in da if da[k] != db[k]]
    return f"no factor this kit knows (they differ in {', '.join(moved) or 'nothing'})"


def _check_probe_run(r: dict, specs: dict, catalogue: dict, path) -> None:
    """Refuse (one line) a run in a probe stack that is not a release scan's feed run kit could
    have made: a planted one would name the release a stage changes at in the importer's report.
    What the probe is comes from its name and this kit's catalogue, never the bundle's probes."""
    s = specs[r["id"]]
    name = f"{path}: run {r['id'][:12]} in probe stack {s.stack[:60]!r}"
    if s.kind != "feed":
        raise KitError(
            f"{name} is a {s.kind[:20]} run; a probe stack's runs are a release "
            "scan's feed runs; refusing the bundle"
        )
    parsed = _described(s.stack, catalogue)
    if parsed is None:
        raise KitError(
            f"{name}: no stack of this kit's catalogue with one package a scan "
            "changes makes that probe; refusing the bundle"
        )
    base, package, version = parsed
    held = measured_in(r["manifest"], package)
    if held != version:
        raise KitError(
            f"{name}: its manifest records {package} {str(held)[:20]}, not {version}; "
            "refusing the bundle"
        )
    if s.input not in specs:
        raise KitError(
            f"{name}: its input run {s.input[:12]} is not in the bundle (a scan's "
            "runs travel with the run they rerun); refusing the bundle"
        )
    if specs[s.input].stack != base:
        raise KitError(
            f"{name}: its input run is of stack {specs[s.input].stack[:40]}, not "
            f"{base}, the stack it probes; refusing the bundle"
        )


def _described(stack: str, catalogue: dict) -> tuple | None:
    """(base, package, version) of a probe stack's name, read against this kit's own catalogue:
    a base it holds, a package that base pins (or python) at a release; None: no such probe."""
    if not is_name(stack):
        return None
    for base, d in catalogue.items():
        rest = stack.removeprefix(f"{PREFIX}{base}-")
        package, _, version = rest.rpartition("-")
        if rest == stack or not package or stack != probe_name(base, package, version):
            continue
        if package == PYTHON:
            ok = bool(re.fullmatch(r"3\.\d+", version, re.A))
        else:
            ok = is_final(version) and _pinned(d, package)
        if ok:
            return base, package, version
    return None


def _pinned(d, package: str) -> bool:
    """Whether catalogue stack ``d`` pins ``package`` (what `kit explain --library` can scan)."""
    if package in d.versions:
        return True
    try:
        text = (d.lock_dir() / "pyproject.toml").read_text()
    except OSError:
        return False
    return bool(re.search(rf'"{re.escape(package)}\s*==', text, re.I))
