"""What a plan is made of: a pair of run specs, the options a user sets, and their parsing."""

from __future__ import annotations

from dataclasses import dataclass

from ...core import processes
from ...core.errors import KitError
from ...core.spec import RunSpec

SVD_ITERS = (5, 10, 20, 50)
SVD_ITER_SEEDS = tuple(range(6))
SEEDS = tuple(range(10))
# the perturbation sweep: noise sizes, draws per size, and the float32 round trip's level
EPS = (1e-15, 1e-13, 1e-11, 1e-9, 1e-7, 1e-5, 1e-3)
DRAWS = 3
PRECISION_LEVEL = "float32"


def level_name(eps: float) -> str:
    """The budget row level of a noise size: 1e-13 -> "1e-13"."""
    return f"{eps:.0e}"


@dataclass(frozen=True)
class Pair:
    factor: str
    level: str     # a sub-setting with its own budget row (svd-iters: the iteration count)
    a: RunSpec
    b: RunSpec
    label: str


@dataclass(frozen=True)
class PlanOptions:
    threads: tuple = ()          # empty: 1..cores
    seeds: tuple = ()            # empty: the factor's default
    svd_iters: tuple = SVD_ITERS
    device: str | None = None    # torch-device: mps | cuda (default: what this machine has)
    eps: tuple = ()              # perturb: noise sizes (default EPS)
    torch_stack: str | None = None  # torch factors: this stack, not the catalogue's (e.g. external)
    host: str = ""               # where runs are made: "" = this machine; a cluster's node class
    hosts: tuple = ()            # the host factor: two or more node classes, hosts or workers

    def __post_init__(self):
        # the one check of every setting, whoever typed it (the CLI's flags, the TUI's fields)
        wrong = _threads_problem(self.threads)
        if wrong:
            raise KitError(wrong)
        if any(i < 1 for i in self.svd_iters):
            raise KitError("power iterations must be 1 or more")
        if any(s < 0 for s in self.seeds):
            raise KitError("seeds must be 0 or more")
        if any(not e >= 0 for e in self.eps):
            raise KitError("noise sizes (eps) must be 0 or more")


def _threads_problem(threads) -> str | None:
    """What is wrong with the first wrong thread count on this machine, or None. The CLI's
    message for it, whoever asks: more threads than cores would measure oversubscription."""
    cores = processes.cores()
    for t in threads:
        if t < 1:
            return _too_small(t, 1)
        if t > cores:
            return (f"{t} threads on a machine with {cores} cores would measure "
                    f"oversubscription, not the thread count; use 1 to {cores}")
    return None


MAX_VALUES = 10_000  # no plan needs more seeds or counts; a typo must not allocate gigabytes


def parse_ints(text: str, minimum: int = 0) -> tuple:
    """'0-9' -> 0..9; '1,2,4' -> (1, 2, 4); '1-3,8' -> (1, 2, 3, 8); duplicates dropped.

    Raises ValueError (a one-line message) below ``minimum`` or beyond MAX_VALUES numbers.
    """
    out = []
    for part in text.split(","):
        span = _span(part, text)
        if len(span) == 2:
            lo, hi = span
            if hi - lo + 1 + len(out) > MAX_VALUES:
                raise ValueError(f"{part.strip()} is {hi - lo + 1:,} numbers; at most "
                                 f"{MAX_VALUES:,} in one list")
            out.extend(range(lo, hi + 1))
        else:
            out.extend(span)
    low = [v for v in out if v < minimum]
    if low:
        raise ValueError(_too_small(low[0], minimum))
    if len(out) > MAX_VALUES:
        raise ValueError(f"{len(out):,} numbers; at most {MAX_VALUES:,} in one list")
    return tuple(dict.fromkeys(out))


def _too_small(value: int, minimum: int) -> str:
    return f"{value} is not allowed here: the smallest is {minimum}"


def _span(part: str, text: str) -> tuple:
    """One comma-separated part of ``text``: (first, last) of a range, (n,) of a number."""
    try:
        if "-" not in part.strip()[1:]:  # a leading minus is a sign
            return (int(part),)
        lo, hi = (int(x) for x in part.split("-", 1))
        if hi >= lo:
            return lo, hi
    except ValueError:
        pass
    raise ValueError(f"expected numbers like 0-9 or 1,2,4, not {text!r}")


def parse_threads(text: str) -> tuple:
    """Thread counts from 1 to this machine's cores (ValueError with the fix otherwise)."""
    vals = parse_ints(text, minimum=1)
    wrong = _threads_problem(vals)
    if wrong:
        raise ValueError(wrong)
    return vals


def default_threads() -> tuple:
    return tuple(range(1, processes.cores() + 1))


def need_two_seeds(vals) -> None:
    """A seed factor compares the first seed with each later one: it needs two."""
    if len(vals) < 2:
        raise KitError("a seed factor needs at least two seeds (e.g. --seeds 0-9)")
