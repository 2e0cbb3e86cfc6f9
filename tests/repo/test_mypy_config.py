"""pyproject.toml's mypy settings keep their promise (#57): kit/core, the store and analysis are
checked strictly, and no module of kit is let off an error code. `make check` runs mypy itself;
this reads its configuration, so a loosened setting fails in the fast tier too."""

import tomllib

from places import ROOT

STRICT = ("kit.core.*", "kit.runs.store.*", "kit.analysis.*")
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


def test_no_module_is_let_off_an_error_code():
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert mypy.get("disable_error_code", []) == []  # nor all of kit at once
    let_off = {
        m: o["disable_error_code"]
        for o in overrides()
        if o.get("disable_error_code")
        for m in modules(o)
    }
    assert let_off == {}
