"""pyproject.toml's mypy settings keep their promise (#57): kit/core, the store and analysis are
checked strictly, no module of theirs is let off an error code, and only the verbs' layer and
its faces (being rewritten behind one facade) are let off any. `make check` runs mypy itself;
this reads its configuration, so a loosened setting fails in the fast tier too."""

import tomllib
from fnmatch import fnmatch

from places import ROOT

STRICT = ("kit.core.*", "kit.runs.store.*", "kit.analysis.*")
# the only modules that may still fail an error code: the list shrinks, and stays within these
LET_OFF = ("kit.app.verbs.*", "kit.cli.*", "kit.tui.*", "kit.notebook", "kit.views.verbs")
# the flags the strict packages need at least (mypy's --strict, as far as it goes per module)
FLAGS = (
    "disallow_untyped_defs",
    "disallow_incomplete_defs",
    "check_untyped_defs",
    "no_implicit_optional",
    "warn_return_any",
    "warn_unused_ignores",
    "strict_equality",
    "disallow_untyped_calls",
    "disallow_any_generics",
)


def overrides() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]


def modules(o: dict) -> list[str]:
    return [o["module"]] if isinstance(o["module"], str) else o["module"]


def test_core_the_store_and_analysis_are_strict():
    strict = [o for o in overrides() if set(STRICT) <= set(modules(o))]
    assert strict, f"no override names {STRICT}"
    assert [f for f in FLAGS if strict[0].get(f) is not True] == []


def test_no_strict_module_is_let_off_an_error_code():
    let_off = [
        m
        for o in overrides()
        if "disable_error_code" in o
        for m in modules(o)
        if any(fnmatch(m, p) or m == p[:-2] for p in STRICT)
    ]
    assert let_off == []


def test_only_the_verbs_layer_is_let_off_an_error_code():
    let_off = [
        m
        for o in overrides()
        if "disable_error_code" in o
        for m in modules(o)
        if not any(fnmatch(m, p) for p in LET_OFF)
    ]
    assert let_off == []
