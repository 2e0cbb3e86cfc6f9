"""What a plan is made of: a pair of run specs, the options a user sets, and their parsing."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from ...core import processes
from ...core.errors import KitError
from ...core.factors import level_name  # noqa: F401 -- the planners' name for it
from ...core.spec import RunSpec
from ...data.dataset import MAX_SYNTHETIC_N

SVD_ITERS = (5, 10, 20, 50)
SVD_ITER_SEEDS = tuple(range(6))
SEEDS = tuple(range(10))
# the perturbation sweep: noise sizes, draws per size, and the float32 round trip's level
EPS = (1e-15, 1e-13, 1e-11, 1e-9, 1e-7, 1e-5, 1e-3)
DRAWS = 3
PRECISION_LEVEL = "float32"


@dataclass(frozen=True)
class Pair:
    factor: str
    level: str  # a sub-setting with its own budget row (svd-iters: the iteration count)
    a: RunSpec
    b: RunSpec
    label: str


@dataclass(frozen=True)
class PlanOptions:
    threads: tuple = ()  # empty: 1..cores
    seeds: tuple = ()  # empty: the factor's default
    svd_iters: tuple = SVD_ITERS
    device: str | None = None  # torch-device: mps | cuda (default: what this machine has)
    eps: tuple = ()  # perturb: noise sizes (default EPS)
    torch_stack: str | None = None  # torch factors: this stack, not the catalogue's (e.g. external)
    host: str = ""  # where runs are made: "" = this machine; a cluster's node class
    hosts: tuple = ()  # the host factor: two or more node classes
    # 0: runs on this machine (thread counts above its cores refused); N: on a cluster whose
    # smallest worker offers N cores (default counts 1..N; a larger count is planned, and its
    # runs skipped with why where no worker offers that many)
    cores: int = 0
    built: bool = False  # stack factors: only the pairs whose stacks are built here

    def __post_init__(self):
        # the one check of every setting, whoever typed it (the CLI's flags, the TUI's fields)
        wrong = threads_problem(self.threads, None if self.cores else processes.cores())
        if wrong:
            raise KitError(wrong)
        for what, values, least in (
            ("power iterations", self.svd_iters, 1),
            ("seeds", self.seeds, 0),
            ("noise sizes (eps)", self.eps, 0),
        ):
            bad = [v for v in values if not v >= least]  # NaN too
            if bad:
                raise KitError(
                    f"{what} must be {least} or more, not {bad[0]}"
                    + (f" (nor {', '.join(map(str, bad[1:3]))})" if bad[1:] else "")
                )
        for option, values in (
            ("--iters", self.svd_iters),
            ("--seeds", self.seeds),
            ("--eps", self.eps),
        ):
            wrong = BOUNDS[option].problem(values)
            if wrong:
                raise KitError(f"{option}: {wrong}")


# -- bounds: what each option may be, and why (docs/reliability.md, "Bounds", shows this table) --


@dataclass(frozen=True)
class Bound:
    """The values one option takes: ``lo`` to ``hi``, at most ``most`` of them in one list.
    ``hi`` may be a function of this machine (its cores); ``why`` is said past the bound."""

    what: str
    lo: float
    hi: object
    most: int = 1
    why: str = ""

    @property
    def top(self):
        return self.hi() if callable(self.hi) else self.hi

    def value_problem(self, v) -> str | None:
        """What is wrong with one value (not finite, below lo, above hi), or None."""
        wrong = self.limit_problem(v)
        return f"{_num(v)} is not allowed here: {wrong}" if wrong else None

    def limit_problem(self, v) -> str | None:
        """The limit one value passes, in words ("the largest is 1,000 (why)"), or None."""
        if v != v or v in (float("inf"), float("-inf")):
            return f"{self.what} are finite numbers from {_num(self.lo)} to {_num(self.top)}"
        if v < self.lo:
            return f"the smallest is {_num(self.lo)}"
        if v > self.top:
            return f"the largest is {_num(self.top)} ({self.why})"
        return None

    def problem(self, values) -> str | None:
        """What is wrong with a list of values (too many, or one of them), or None."""
        if len(values) > self.most:
            return f"{len(values):,} {self.what}; at most {self.most:,} in one list"
        return next(filter(None, map(self.value_problem, values)), None)


SEED_TOP = 2**32 - 1  # numpy's RandomState (scikit-learn's random_state) takes seeds below 2**32
MAX_PROTEINS = 10_000_000  # 512 MiB, the importer's limit, holds under 9 M proteins of 60 residues


def _jobs_top() -> int:
    return processes.cores() * 4


BOUNDS = {
    "--seeds": Bound(
        "seeds", 0, SEED_TOP, most=1_000, why="numpy and scikit-learn take seeds below 2**32"
    ),
    "--iters": Bound(
        "power iterations",
        1,
        1_000,
        most=100,
        why="power iterations: the paper uses 5 to 50; scikit-learn's default is 4 or 7",
    ),
    "--eps": Bound(
        "noise sizes",
        0,
        1,
        most=100,
        why="a noise size is relative to the embedding: 1 is noise as large as the signal",
    ),
    "--threads": Bound(
        "thread counts",
        1,
        lambda: processes.cores(),
        most=1_024,
        why="this machine's cores: more would measure oversubscription",
    ),
    # each bound said once, the same in every message (kit.data.dataset says the other two)
    "--n": Bound(
        "proteins",
        1,
        MAX_PROTEINS,
        why=f"proteins: the synthetic set is generated up to {MAX_SYNTHETIC_N:,}, an "
        "imported dataset up to its size",
    ),
    "--jobs": Bound("runs at once", 1, _jobs_top, why="runs at once: 4 per core of this machine"),
    "--split-seed": Bound("seeds", 0, SEED_TOP, why="numpy takes seeds below 2**32 everywhere"),
    "--seed": Bound("seeds", 0, SEED_TOP, why="numpy takes seeds below 2**32 everywhere"),
    "--per-organism": Bound(
        "proteins",
        1,
        100_000,
        why="proteins per organism: human, the largest reviewed proteome, has about 20,000",
    ),
    "--keep": Bound("proteins", 1, MAX_PROTEINS, why="proteins; the paper keeps 6,000"),
    "--deadline": Bound("seconds", 1, 86_400, why="seconds, a day; the fetch takes minutes"),
    "--page-deadline": Bound("seconds", 1, 3_600, why="seconds, an hour for one page"),
    "--max-retry-after": Bound("seconds", 1, 3_600, why="seconds, an hour"),
    "--timeout": Bound("seconds", 1, 604_800, why="seconds, a week for one run"),
}
# thread counts are held to the cores by threads_problem, which says why in its own words
_THREAD_COUNTS = Bound("thread counts", 1, float("inf"), BOUNDS["--threads"].most)
RAW_VALUES = 10_000  # numbers typed in one list, repeats included: no list needs more


def _num(v) -> str:
    """1000000 -> "1,000,000"; 1.0 -> "1"; 1e-13 -> "1e-13"; 10**30 -> "a 31-digit number"."""
    if isinstance(v, float):
        return f"{int(v):,}" if v.is_integer() and abs(v) < 1e15 else f"{v:g}"
    digits = len(str(abs(v)))
    return f"{v:,}" if digits <= 15 else f"a {digits}-digit number"


def _too_small(value, minimum) -> str:
    return f"{_num(value)} is not allowed here: the smallest is {_num(minimum)}"  # Bound's words


def _shown(text: str) -> str:
    """``text`` as an error quotes it: repr (one line, whatever it holds), cut at 40 characters."""
    return repr(text if len(text) <= 40 else text[:40] + "...")


def threads_problem(threads, cores: int | None) -> str | None:
    """What is wrong with the first wrong thread count on a machine of ``cores`` (None: a
    cluster's, where any count is planned), or None. The CLI's message for it, whoever asks:
    more threads than cores would measure oversubscription."""
    for t in threads:
        if t < 1:
            return _too_small(t, 1)
        if cores is not None and t > cores:
            return (
                f"{t} threads on a machine with {cores} cores would measure "
                f"oversubscription, not the thread count; use 1 to {cores}"
            )
    return None


def parse_ints(text: str, bound: Bound = BOUNDS["--seeds"]) -> tuple:
    """'0-9' -> 0..9; '1,2,4' -> (1, 2, 4); '1-3,8' -> (1, 2, 3, 8); duplicates dropped.

    Raises ValueError (a one-line message naming the bound) for a value outside ``bound`` or
    more than its ``most`` numbers; a range is checked at its ends, never expanded first.
    """
    out: dict = {}
    typed = 0
    for part in text.split(","):
        span = _span(part, text)
        wrong = next(filter(None, map(bound.value_problem, span)), None)
        if wrong:
            raise ValueError(wrong)
        count = span[-1] - span[0] + 1
        if count > bound.most:
            raise ValueError(
                f"{part.strip()} is {count:,} {bound.what}; at most {bound.most:,} in one list"
            )
        typed += count
        if typed > RAW_VALUES:  # repeats included: a list of a million 1s is a typo too
            raise ValueError(f"more than {RAW_VALUES:,} numbers in one list")
        out.update(dict.fromkeys(range(span[0], span[-1] + 1)))
        if len(out) > bound.most:
            raise ValueError(f"{len(out):,} {bound.what}; at most {bound.most:,} in one list")
    return tuple(out)


def _span(part: str, text: str) -> tuple:
    """One comma-separated part of ``text``: (first, last) of a range, (n,) of a number."""
    try:
        if "-" not in part.strip()[1:]:  # a leading minus is a sign
            return (int(part),)
        lo, hi = (int(x) for x in part.split("-", 1))
        if hi >= lo:
            return lo, hi
    except ValueError:  # also a number of more than 4,300 digits
        pass
    raise ValueError(f"expected numbers like 0-9 or 1,2,4, not {_shown(text)}")


def parse_seeds(text: str) -> tuple:
    return parse_ints(text, BOUNDS["--seeds"])


def parse_iters(text: str) -> tuple:
    """Power iteration counts (svd-iters levels)."""
    return parse_ints(text, BOUNDS["--iters"])


def parse_thread_counts(text: str) -> tuple:
    """Thread counts of 1 or more, on whatever machine they run (a cluster's node)."""
    return parse_ints(text, _THREAD_COUNTS)


def parse_threads(text: str) -> tuple:
    """Thread counts from 1 to this machine's cores (ValueError with the fix otherwise)."""
    vals = parse_thread_counts(text)
    wrong = threads_problem(vals, processes.cores())
    if wrong:
        raise ValueError(wrong)
    return vals


def parse_eps(text: str) -> tuple:
    """Noise sizes: '1e-13,1e-7' -> (1e-13, 1e-07); finite, 0 to 1."""
    bound = BOUNDS["--eps"]
    try:
        vals = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        vals = ()
    if not vals or any(v < 0 for v in vals):
        raise ValueError(f"expected non-negative numbers like 1e-13,1e-7, not {_shown(text)}")
    # 1e-400 reads as 0.0 (and 1e-320 as a subnormal of a few bits): never silently another size
    tiny = next(
        (
            x.strip()
            for x, v in zip((x for x in text.split(",") if x.strip()), vals, strict=True)
            if v < sys.float_info.min and _nonzero(x)
        ),
        None,
    )
    if tiny:
        raise ValueError(
            f"{_shown(tiny)} is below the smallest float64 a noise size keeps "
            f"({sys.float_info.min:.1e}): give 0 for no noise, or a larger size"
        )
    wrong = bound.problem(vals)
    if wrong:
        raise ValueError(wrong)
    return vals


def _nonzero(text: str) -> bool:
    """Whether a typed number is not zero, as written (float() rounds 1e-400 to 0.0)."""
    from decimal import Decimal, InvalidOperation

    try:
        return Decimal(text.strip()) != 0
    except InvalidOperation:
        return False


class _NotANumber(ValueError):
    """Not a whole number of the option's kind at all (parse_jobs names its other word)."""


def parse_int(text: str, option: str) -> int:
    """One whole number for ``option``, within its bound (ValueError naming it otherwise)."""
    bound = BOUNDS[option]
    try:
        v = int(text)
    except ValueError:
        v = None
    if v is None or v < bound.lo:
        kind = "a positive integer" if bound.lo == 1 else "a non-negative integer"
        raise _NotANumber(f"expected {kind}, not {_shown(text)}")
    wrong = bound.value_problem(v)
    if wrong:
        raise ValueError(wrong)
    return v


def parse_jobs(text: str):
    """--jobs: "auto" or a number of runs at once, within its bound."""
    if text == "auto":
        return text
    try:
        return parse_int(text, "--jobs")
    except _NotANumber:  # a number out of bounds is said as parse_int says it
        raise ValueError(f"expected a positive integer or auto, not {_shown(text)}") from None


def default_threads(cores: int = 0) -> tuple:
    """1..cores (0: this machine's cores)."""
    return tuple(range(1, (cores or processes.cores()) + 1))


def need_two_seeds(vals) -> None:
    """A seed factor compares the first seed with each later one: it needs two."""
    if len(vals) < 2:
        raise KitError("a seed factor needs at least two seeds (e.g. --seeds 0-9)")
