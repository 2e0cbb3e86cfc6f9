"""Derived stacks: a catalogue stack plus a pipeline's REQUIRES, locked by uv under KIT_HOME.

``$KIT_HOME/derived/NAME/`` holds its pyproject.toml (the base stack's, the pipeline's packages
added, this platform's environment only), the uv.lock uv resolved, derived.json (what it is)
and venv/, as a probe stack's folder does (kit.envs.probes: locked by the same code). NAME is
``req-BASE-DIGEST``, DIGEST a short hash of the sorted requirements: the same packages give
the same stack whichever pipeline asks, and a name says nothing a reader must trust.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from ..core.errors import KitError
from ..core.paths import subdir
from ..data.requires import check_requires
from .catalogue import HOST, StackDef, definitions
from .derived_names import PREFIX, base_of, derived_name  # noqa: F401 (kit.envs.derived's names)
from .platforms import Platform
from .probes import for_here, lock_into, locked_meta

META = "derived.json"


@dataclass(frozen=True)
class DerivedDef(StackDef):
    """A stack definition whose lock folder and venv live under $KIT_HOME/derived/NAME."""

    base: str = ""
    requires: tuple = ()

    def lock_dir(self) -> Path:
        return _folder(self.name)

    def venv(self) -> Path:
        return _folder(self.name) / "venv"


def _folder(name: str) -> Path:
    return subdir("derived") / name


def definition(name: str) -> DerivedDef | None:
    """The locked derived stack called ``name`` (None: there is none); a damaged derived.json,
    or one that is not the stack its name says, is one KitError line."""
    if not base_of(name):  # a name: one folder, no '..'
        return None
    path = _folder(name) / META
    text = locked_meta(path)
    if text is None:
        return None
    try:
        d = json.loads(text)["def"]
        got = DerivedDef(
            **{
                **d,
                "versions": dict(d["versions"]),
                "blas": dict(d["blas"]),
                "devices": tuple(d["devices"]),
                "requires": tuple(d["requires"]),
            }
        )
        ok = got.name == got.lock == name == derived_name(got.base, got.requires) and list(
            got.requires
        ) == check_requires(name, list(got.requires))
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, KitError) as e:
        ok, why = False, f"is damaged ({type(e).__name__}: {str(e)[:80]})"
    else:
        why = f"is not the stack {name} of {got.base[:40]} with {', '.join(got.requires)[:80]}"
    if not ok:
        raise KitError(
            f"derived stack {name}: {path} {why}; delete {path.parent} and the next "
            "`kit run --pipeline` locks it again"
        )
    return got


def locked() -> list:
    """The names of the derived stacks locked under KIT_HOME/derived/, sorted."""
    return sorted(
        p.parent.name
        for p in subdir("derived").glob(f"{PREFIX}*/{META}")
        if base_of(p.parent.name) and (p.parent / "uv.lock").exists()
    )


def pyproject(base: StackDef, requires, plat: Platform) -> str:
    """The base stack's pyproject.toml with ``requires`` added to its dependencies, for here."""
    text = (base.lock_dir() / "pyproject.toml").read_text()
    head = re.search(r"^dependencies = \[\n", text, re.M)
    if head is None:
        raise KitError(
            f"stack {base.name}'s pyproject.toml has no `dependencies = [` line: "
            "no package can be added to it"
        )
    # json.dumps quotes as TOML does for these strings (names, extras, specifiers: no escapes)
    added = "".join(f"    {json.dumps(r)},  # the pipeline's REQUIRES\n" for r in requires)
    return for_here(base, text[: head.end()] + added + text[head.end() :], plat, "derived stack")


def prepare(base: StackDef, requires, plat: Platform) -> tuple:
    """(derived stack name, None) once ``base`` plus ``requires`` is locked here, or (None,
    uv's reason in one line) when uv cannot resolve it."""
    requires = tuple(sorted(requires))
    name = derived_name(base.name, requires)
    d = DerivedDef(
        name,
        name,
        base.python,
        base.arch,
        dict(base.versions),
        {plat.key: base.blas.get(plat.key)},
        base.kind,
        tuple(base.devices),
        base.needs_path,
        base.needs_gpu,
        base.name,
        requires,
    )
    why = lock_into(_folder(name), pyproject(base, requires, plat), META, asdict(d))
    return (None, why) if why else (name, None)


def for_plan(requires, names, plat: Platform) -> tuple:
    """({stack: the stack a pipeline with ``requires`` runs in instead}, {stack: why none})
    for the stacks ``names`` a plan uses: each catalogue stack's derived stack, locked now
    (uv reads the index; nothing is installed until the stack is built). No requires: every
    stack as it is. KitError (one line): a stack no package can be added to."""
    if not requires:
        return {n: n for n in names}, {}
    defs = definitions()
    got, lost = {}, {}
    for n in names:
        if n not in defs:
            where = "kit's own environment" if n == HOST else "used as it is"
            raise KitError(
                f"stack {n} is {where}: kit adds a pipeline's REQUIRES to catalogue "
                "stacks only (--stack NAME, `kit stacks` lists them)"
            )
        name, why = prepare(defs[n], requires, plat)
        if name:
            got[n] = name
        else:
            lost[n] = why
    return got, lost


def lock_named(name: str, requires, plat: Platform) -> str | None:
    """Lock the derived stack ``name`` here from its base and ``requires`` (its pipeline's, as
    the file declares them: a bundle's runs made in it elsewhere are rerun here): None once
    locked, else why not, in one line. The name is only ever matched, never used as a path."""
    base = base_of(name)
    if base is None or not requires or derived_name(base, requires) != name:
        return f"{name[:60]} is not a stack of this kit's catalogue with its pipeline's REQUIRES"
    return prepare(definitions()[base], requires, plat)[1]


def scannable(name: str):
    """The definition of stack ``name`` a probe can change: a catalogue stack's, or a derived
    stack's here (its probes keep the pipeline's REQUIRES, so a release scan measures the lab's
    real code); None for any other."""
    found = definitions().get(name)
    return found if found is not None else (definition(name) if base_of(name) else None)
