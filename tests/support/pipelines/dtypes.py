"""A pipeline whose output "x" has the dtype KIT_TEST_DTYPE names, none of which kit stores:
longdouble (x86's 80 bits in 16 bytes, 6 of them padding), complex128, float16, datetime64, a
structured array (a record with a gap) or void."""

import os

import numpy as np

SEEDS = ("init",)


def _x(what, values):
    if what == "longdouble":
        return values.astype(np.longdouble)
    if what == "complex128":
        return values + 1j * values
    if what == "float16":
        return values.astype(np.float16)
    if what == "datetime64":
        return np.datetime64("2026-01-01") + np.arange(len(values)).astype("timedelta64[D]")
    if what == "structured":
        rec = np.zeros(len(values), dtype=[("score", "f8"), ("flag", "i1")])
        rec["score"] = values
        return rec
    if what == "void":
        return np.ascontiguousarray(values).view("V8")
    raise ValueError(f"KIT_TEST_DTYPE={what!r}")


def run(seeds):
    values = np.random.default_rng(seeds["init"]).random(5)
    return {"y": values, "x": _x(os.environ["KIT_TEST_DTYPE"], values)}
