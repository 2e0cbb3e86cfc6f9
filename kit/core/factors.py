"""The table of factors: everything kit knows about each thing that can change between two runs.

Every consumer (planning, the budget's row order and confounds, amplification, advice, verdict
sets, plots, the CLI's help) reads this one registry, as threadpoolctl derives everything from
its one registry of controllers: ``register(factor, planner)`` enters a factor and the function
that plans its pairs at once. The built-in factors are listed here; kit.runs.planning.plan registers
their planners when it is imported (a planner lives above this floor).
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from functools import lru_cache
from dataclasses import dataclass
from types import MappingProxyType

from .errors import KitError

# what the two runs of a pair differ in, which decides how a factor's rows are read
NOTHING = "nothing"          # the null experiment: any difference is a defect
SEED = "seed"                # a random seed: named and recorded, never "pinned" to a version
ENVIRONMENT = "environment"  # the machine, a library, a setting: what "pin" is about
NOISE = "noise"              # a deliberate probe (the perturbation sweep)

# how a factor's pairs are planned
SINGLE = "single"    # pairs of runs in one stack
STACKS = "stacks"    # pairs of stacks from stacks/stacks.toml
TORCH = "torch"      # the PyTorch MLP on one fixed embedding
PERTURB = "perturb"  # the classifiers retrained on a perturbed embedding
HOSTS = "hosts"      # one spec on named machines of a cluster (--hosts), or by `kit compare`
BUNDLE = "bundle"    # made by `kit compare`, never by `kit run`

_THREAD_VARS = r"^env:(OMP|OPENBLAS|MKL|VECLIB)_[A-Z_]*THREADS$|:num_threads$"


@dataclass(frozen=True)
class Factor:
    name: str
    what: str                    # one line: what changes (versions as kit.envs.descriptions fills)
    planned: str                 # SINGLE | STACKS | TORCH | PERTURB | HOSTS | BUNDLE
    varies: str                  # NOTHING | SEED | ENVIRONMENT | NOISE
    explained: str | None = None  # regex of manifest attributes the factor is meant to change
    ranked: bool = True          # in "what to pin first" (not a null check, remedy or probe)
    yardstick: bool = False      # its pairs define one seed unit
    # it changes what is measured: the two runs of a pair are tested on different proteins, so
    # bits, flips and stage identity between them mean nothing; its row reads the spread of
    # accuracy and the stability of verdicts across its runs instead (kit.analysis.splits)
    measures: bool = False
    # a setting the code itself chooses (float32, deterministic algorithms), not something a new
    # machine or release brings unasked: `kit tolerances` never widens a tolerance for it
    chosen: bool = False
    # the environment variables its pairs set in a spec's ``env``, each with the form of the
    # values it writes (a regex): the only variables a spec may hold (kit.core.spec)
    sets_env: tuple = ()

    @property
    def plannable(self) -> bool:
        """`kit run --factor` plans it: it has a planner (checked by ``register``)."""
        return self.planned != BUNDLE

    @property
    def torch(self) -> bool:
        """Its runs are the PyTorch MLP alone: no embedding, no verdicts of the four models."""
        return self.planned == TORCH

    @property
    def has_verdicts(self) -> bool:
        """Both runs of each pair train the four classifiers, so verdicts can be compared."""
        return self.planned != TORCH

    @property
    def needs_reference(self) -> bool:
        """Its runs train on the reference run's embedding, which must be run first."""
        return self.planned in (TORCH, PERTURB)

    @property
    def tolerated(self) -> bool:
        """What a lab's regression tests must tolerate across machines (`kit tolerances`): an
        environment factor the code does not choose; never a seed, the null experiment or a probe."""
        return self.varies == ENVIRONMENT and not self.chosen

    @property
    def environmental(self) -> bool:
        """A difference in the machine or a setting: explained by magnitude, and pinned."""
        return self.varies == ENVIRONMENT


# In the order of the budget's rows: the null check, the environment, the seeds, the probe.
_BUILT_IN = (
    Factor("repeat", "the same run twice: the null experiment (every stage should be identical)",
           SINGLE, NOTHING, ranked=False),
    Factor("process", "the same run in a fresh worker process against a warm one that made "
           "another run first (kit's warm workers must change nothing)", SINGLE, NOTHING,
           ranked=False),
    Factor("host", "the same run on two machines: cluster node types or workers (--cluster, "
           "--hosts A,B), or bundles from two machines (`kit compare`)", HOSTS, ENVIRONMENT,
           explained=r"^host$"),  # everything else that differs between machines is shown
    Factor("threads", "1 BLAS/OpenMP thread against each other count", SINGLE, ENVIRONMENT,
           explained=_THREAD_VARS),
    Factor("precision", "float64 against float32 input, at 1 and the most threads", SINGLE,
           ENVIRONMENT, chosen=True),
    Factor("arch", "CPU architecture: arm64 against x86_64 under Rosetta (macOS); BLAS CPU "
           "code paths (Linux)", STACKS, ENVIRONMENT,
           explained=r"^machine$|^rosetta$|:architecture$|^env:(OPENBLAS_CORETYPE|MKL_CBWR)$",
           # the CPU code paths of stacks/stacks.toml [codepaths] (tests/test_spec.py checks it)
           sets_env=(("OPENBLAS_CORETYPE", r"[A-Za-z][A-Za-z0-9]{0,31}"),
                     ("MKL_CBWR", r"[A-Z][A-Z0-9_]{0,31}"))),
    Factor("blas", "BLAS backend: OpenBLAS against Accelerate (macOS) or MKL (Linux)", STACKS,
           ENVIRONMENT, explained=r"^package:(numpy|scipy)$|^blas@|^openmp@"),
    Factor("numpy", "numpy {a numpy} against 2.x at a fixed scikit-learn (scipy moves with it)",
           STACKS, ENVIRONMENT, explained=r"^package:(numpy|scipy)$|^blas@(numpy|scipy):version$"),
    Factor("python", "Python version at fixed libraries ({a python} against {b python on "
           "macos-arm64} on macOS, {b python on linux-x86_64} on Linux)", STACKS, ENVIRONMENT,
           explained=r"^python$"),
    Factor("sklearn", "scikit-learn version at a fixed numpy ({scikit-learn} on numpy {numpy})",
           STACKS, ENVIRONMENT, explained=r"^package:scikit-learn$"),
    Factor("torch-threads", "torch threads: 1 against 2, 4, 8 (capped at the cores)", TORCH,
           ENVIRONMENT, explained=_THREAD_VARS),
    Factor("torch-deterministic", "torch.use_deterministic_algorithms off against on", TORCH,
           ENVIRONMENT, chosen=True, explained=r"^env:CUBLAS_WORKSPACE_CONFIG$|^torch:deterministic$"),
    Factor("torch-device", "the torch MLP on the CPU against MPS (macOS) or CUDA (--device)",
           TORCH, ENVIRONMENT,
           explained=r"^torch:device(_name)?$|^env:CUBLAS_WORKSPACE_CONFIG$"),
    Factor("seed:svd", "only the randomized-SVD seed", SINGLE, SEED),
    Factor("seed:kmeans", "only the k-means seed", SINGLE, SEED),
    Factor("seed:models", "only the classifiers' seeds (MLP, boosting, forest)", SINGLE, SEED),
    Factor("svd-iters", "the seed effect at 5, 10, 20 and 50 randomized-SVD power iterations",
           SINGLE, SEED, ranked=False),
    Factor("svd-solver", "the seed effect when k-means, neighbours and classifiers use the "
           "converged ARPACK embedding instead (seeds 0 against 1..5)", SINGLE, SEED,
           ranked=False),
    Factor("seed", "every named seed at once: the paper's yardstick", SINGLE, SEED,
           yardstick=True),
    Factor("seed:split", "only the split seed: the same proteins re-split into train and test "
           "(split seed 0 against 1..9, training seeds fixed): changes what is measured",
           SINGLE, SEED, ranked=False, measures=True),
    Factor("torch-seed", "the torch MLP's init and shuffle seeds: seed 0 against 1..9", TORCH,
           SEED, yardstick=True),
    Factor("perturb", "the classifiers retrained on one embedding plus noise of relative size eps "
           "(1e-15..1e-3, 3 draws) and rounded to float32: the amplification curve", PERTURB,
           NOISE, ranked=False),
)
_FACTORS = {f.name: f for f in _BUILT_IN}  # in table order
_PATTERNS = {f.name: re.compile(f.explained) for f in _BUILT_IN if f.explained}
_PLANNERS: dict = {}  # name -> planner(Context) -> [Pair], opaque here (kit.runs.planning.plan's)
FACTORS = MappingProxyType(_FACTORS)  # a read-only view: ``register`` is the one way in


def spec_env() -> dict:
    """{variable: compiled form of its values} of every variable a factor sets in a spec."""
    return {var: _env_form(form) for f in _FACTORS.values() for var, form in f.sets_env}


@lru_cache(maxsize=None)
def _env_form(form: str):
    return re.compile(form)


def register(factor: Factor, planner=None, after: str | None = None) -> None:
    """Enter ``factor`` (after the factor named ``after``, else last) with its planner.

    A factor already in the table with this same record takes the planner: that is how
    kit.runs.planning.plan gives the built-in factors theirs. Plannable factors need a planner, others
    (made by `kit compare`) must not have one.
    """
    if factor.plannable != (planner is not None):
        raise ValueError(f"factor {factor.name!r} is planned {factor.planned!r}: "
                         + ("it needs a planner" if factor.plannable else "it takes no planner"))
    known = _FACTORS.get(factor.name)
    if known is not None and known != factor:
        raise ValueError(f"another factor is already registered as {factor.name!r}")
    if known is None:
        items = list(_FACTORS.items())
        at = [n for n, _ in items].index(after) + 1 if after else len(items)
        items.insert(at, (factor.name, factor))
        _FACTORS.clear()
        _FACTORS.update(items)
        if factor.explained:
            _PATTERNS[factor.name] = re.compile(factor.explained)
    if planner is not None:
        _PLANNERS[factor.name] = planner


def unregister(name: str) -> None:
    """Remove a factor and its planner (as a test undoes its ``register``)."""
    _FACTORS.pop(name, None)
    _PATTERNS.pop(name, None)
    _PLANNERS.pop(name, None)


@contextmanager
def registered(factor: Factor, planner=None, after: str | None = None):
    """``register`` a new factor for the length of a ``with`` block."""
    if factor.name in _FACTORS:
        raise ValueError(f"factor {factor.name!r} is already registered")
    register(factor, planner, after)
    try:
        yield factor
    finally:
        unregister(factor.name)


def planner(name: str):
    """The function that plans a factor's pairs (registered by kit.runs.planning.plan on import)."""
    fn = _PLANNERS.get(name)
    if fn is None:
        raise KitError(f"unknown factor {name!r}; choose from {', '.join(plannable())}")
    return fn


def table() -> tuple:
    """Every factor, in the order of the budget's rows."""
    return tuple(_FACTORS.values())


def get(name: str) -> Factor | None:
    """The factor of a budget row (None for a name kit does not know, e.g. from a newer kit)."""
    return _FACTORS.get(name)


def names(*planned: str) -> tuple:
    """Factor names, in table order, optionally only those planned in one of the given ways."""
    return tuple(f.name for f in table() if not planned or f.planned in planned)


def plannable() -> dict:
    """{name: what it changes} of every factor `kit run --factor` accepts."""
    return {f.name: f.what for f in table() if f.plannable}


def order(name: str) -> int:
    """A factor's place among the budget's rows (unknown names last)."""
    return names().index(name) if name in _FACTORS else len(_FACTORS)


def is_yardstick(name: str) -> bool:
    """A seed unit by definition (its flips in seed units are 1): left out of "how far" plots."""
    f = _FACTORS.get(name)
    return bool(f and f.yardstick)


def measures(name: str) -> bool:
    """Its pairs are tested on different proteins (kit.analysis.splits reads its rows)."""
    f = _FACTORS.get(name)
    return bool(f and f.measures)


def confounds(factor: str, env_diff: dict) -> dict:
    """The attributes that differed within a pair beyond what its factor is meant to change."""
    pattern = _PATTERNS.get(factor)
    return {k: v for k, v in env_diff.items() if not (pattern and pattern.search(k))}


def suggest(name: str) -> str | None:
    """The closest factor name to a misspelt one, for a "did you mean"."""
    import difflib

    close = difflib.get_close_matches(name, plannable(), n=1, cutoff=0.6)
    return close[0] if close else None
