"""The table of factors: everything kit knows about each thing that can change between two runs.

Every consumer (planning, the budget's row order and confounds, amplification, advice, verdict
sets, plots, the CLI's help) reads this one registry, as threadpoolctl derives everything from
its one registry of controllers: ``register(factor, planner)`` enters a factor and the function
that plans its pairs at once. The built-in factors are listed here, each with the kinds of
subject it applies to (``uses``: kit's own pipeline on a dataset, a lab's pipeline file), what
it is there and what it needs of the subject; kit.runs.planning registers a planner per
(factor, subject kind) when it is imported (a planner lives above this floor).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, fields
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..worker.names import unknown
from .errors import NotFound

if TYPE_CHECKING:  # spec imports this registry (its env rule): the type only, for annotations
    from .spec import Env, RunSpec

# what the two runs of a pair differ in, which decides how a factor's rows are read
NOTHING = "nothing"  # the null experiment: any difference is a defect
SEED = "seed"  # a random seed: named and recorded, never "pinned" to a version
ENVIRONMENT = "environment"  # the machine, a library, a setting: what "pin" is about
NOISE = "noise"  # a deliberate probe (the perturbation sweep)

# how a factor's pairs are planned
SINGLE = "single"  # pairs of runs in one stack
STACKS = "stacks"  # pairs of stacks from stacks/stacks.toml
TORCH = "torch"  # the PyTorch MLP on one fixed embedding
PERTURB = "perturb"  # the classifiers retrained on a perturbed embedding
HOSTS = "hosts"  # one spec on named machines of a cluster (--hosts), or by `kit compare`
BUNDLE = "bundle"  # made by `kit compare`, never by `kit run`

_THREAD_VARS = r"^env:(OMP|OPENBLAS|MKL|VECLIB)_[A-Z_]*THREADS$|:num_threads$"

# the kinds of subject (kit.core.subject's DATASET and PIPELINE; that module imports kit's
# pipeline, numpy with it, which this table, read by the CLI's help, must not)
DATASET = "dataset"  # kit's own pipeline on a dataset
PIPELINE = "pipeline"  # a lab's pipeline file

# what a factor needs of its subject to be runnable (kit.runs.planning.offers says why not)
NEEDS_DTYPE = "dtype"  # a run that takes a dtype (precision)
NEEDS_SEED = "seed"  # seed:NAME: NAME one of the subject's SEEDS
NEEDS_SEEDS = "seeds"  # at least one named seed to vary
NEEDS_THREADS = "threads"  # a thread count other than 1 (a machine of two cores)

SEED_NAME = "seed:NAME"  # a pipeline file's seed factors: seed:NAME for each name of its SEEDS

ALL = "all"  # Moves.seeds: every named seed of the run moves at once


@dataclass(frozen=True)
class Moves:
    """What the two specs of a factor's pair differ in, as its planner makes them: a bundle's
    pair label is recomputed from this (kit.app.bundle_derived), never taken on trust.

    ``fields`` all differ and nothing else may, beyond ``also``; ``seeds`` names the seeds that
    move (``ALL``: each of the run's, kit's SEED_NAMES or a lab file's SEEDS), every other seed
    the same; ``kind`` is the runs' kind ("": any, the same in both; perturb: b is a perturbed
    run of a); ``where`` holds (field, value) both runs have; ``level`` names the spec field its
    budget level is read from. A stack factor's (a, b) stacks are a pair of the catalogue's."""

    fields: tuple[str, ...] = ()
    also: tuple[str, ...] = ()
    seeds: tuple[str, ...] | str = ()  # str: ALL, the one string it takes
    kind: str = "pipeline"
    where: tuple[tuple[str, object], ...] = ()
    level: str = ""


@dataclass(frozen=True)
class Use:
    """How a factor applies to one kind of subject: its description there (None: the factor's
    own ``what``, as kit.envs.descriptions fills it; "{seeds}" and "{seed}" are the subject's
    seeds and the one seed:NAME names) and what it needs of the subject (NEEDS_*)."""

    description: str | None = None
    needs: tuple[str, ...] = ()


_OWN = ((DATASET, Use()),)  # kit's own pipeline alone: a factor's default
_THREADED = Use(needs=(NEEDS_THREADS,))
_NAMED_SEED = Use("the seed {seed} alone, the others held", (NEEDS_SEED,))  # SEED_NAME's


def _both(lab: Use = Use()) -> tuple[tuple[str, Use], ...]:
    return ((DATASET, Use()), (PIPELINE, lab))


_RANDOMIZED = (("embedding", "randomized"),)
_STACK_FIELDS = ("stack", "stack_id", "env")  # a stack pair's: which two, the catalogue says


@dataclass(frozen=True)
class Factor:
    name: str
    what: str  # one line: what changes (versions as kit.envs.descriptions fills)
    planned: str  # SINGLE | STACKS | TORCH | PERTURB | HOSTS | BUNDLE
    varies: str  # NOTHING | SEED | ENVIRONMENT | NOISE
    explained: str | None = None  # regex of manifest attributes the factor is meant to change
    ranked: bool = True  # in "what to pin first" (not a null check, remedy or probe)
    yardstick: bool = False  # its pairs define one seed unit
    # it changes what is measured: the two runs of a pair are tested on different proteins, so
    # bits, flips and stage identity between them mean nothing; its row reads the spread of
    # accuracy and the stability of verdicts across its runs instead (kit.analysis.splits)
    measures: bool = False
    # a setting the code itself chooses (float32, deterministic algorithms), not something a new
    # machine or release brings unasked: `kit tolerances` never widens a tolerance for it
    chosen: bool = False
    # the environment variables its pairs set in a spec's ``env``, each with the form of the
    # values it writes (a regex): the only variables a spec may hold (kit.core.spec)
    sets_env: tuple[tuple[str, str], ...] = ()
    moves: Moves | None = None  # what its pairs' specs differ in (None: this kit cannot say)
    uses: tuple[tuple[str, Use], ...] = (
        _OWN  # ((subject kind, Use), ...): the subjects it applies to
    )

    def use(self, kind: str) -> Use | None:
        """How it applies to a subject of ``kind`` (None: it does not)."""
        return dict(self.uses).get(kind)

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
    Factor(
        "repeat",
        "the same run twice: the null experiment (every stage should be identical)",
        SINGLE,
        NOTHING,
        ranked=False,
        moves=Moves(("replicate",)),
        uses=_both(
            Use("nothing: the same seeds twice, at each thread count (the null experiment)")
        ),
    ),
    Factor(
        "process",
        "the same run in a fresh worker process against a warm one that made "
        "another run first (kit's warm workers must change nothing)",
        SINGLE,
        NOTHING,
        ranked=False,
        moves=Moves(("process",)),
        uses=_both(Use("nothing: a fresh worker process against a warm one that made a run first")),
    ),
    Factor(
        "host",
        "the same run on two machines: cluster node types or workers (--cluster, "
        "--hosts A,B), or bundles from two machines (`kit compare`)",
        HOSTS,
        ENVIRONMENT,
        # kit compare's twin is this machine's build of the stack, on its twin's embedding
        explained=r"^host$",
        moves=Moves(("host",), also=("stack_id", "input"), kind=""),
        uses=_both(),
    ),  # everything else that differs between machines is shown
    Factor(
        "threads",
        "1 BLAS/OpenMP thread against each other count",
        SINGLE,
        ENVIRONMENT,
        explained=_THREAD_VARS,
        moves=Moves(("threads",)),
        uses=((DATASET, _THREADED), (PIPELINE, _THREADED)),
    ),
    Factor(
        "precision",
        "float64 against float32 input, at 1 and the most threads",
        SINGLE,
        ENVIRONMENT,
        chosen=True,
        moves=Moves(("dtype",)),
        uses=_both(Use("float64 against float32 (run takes a dtype)", (NEEDS_DTYPE,))),
    ),
    Factor(
        "arch",
        "CPU architecture: arm64 against x86_64 under Rosetta (macOS); BLAS CPU code paths (Linux)",
        STACKS,
        ENVIRONMENT,
        explained=r"^machine$|^rosetta$|:architecture$|^env:(OPENBLAS_CORETYPE|MKL_CBWR)$",
        # the CPU code paths of stacks/stacks.toml [codepaths] (tests/core/test_spec.py checks it)
        sets_env=(
            ("OPENBLAS_CORETYPE", r"[A-Za-z][A-Za-z0-9]{0,31}"),
            ("MKL_CBWR", r"[A-Z][A-Z0-9_]{0,31}"),
        ),
        moves=Moves(also=_STACK_FIELDS),
        uses=_both(),
    ),
    Factor(
        "blas",
        "BLAS backend: OpenBLAS against Accelerate (macOS) or MKL (Linux)",
        STACKS,
        ENVIRONMENT,
        explained=r"^package:(numpy|scipy)$|^blas@|^openmp@",
        moves=Moves(also=_STACK_FIELDS),
        uses=_both(),
    ),
    Factor(
        "numpy",
        "numpy {a numpy} against 2.x at a fixed scikit-learn (scipy moves with it)",
        STACKS,
        ENVIRONMENT,
        explained=r"^package:(numpy|scipy)$|^blas@(numpy|scipy):version$",
        moves=Moves(also=_STACK_FIELDS),
        uses=_both(),
    ),
    Factor(
        "python",
        "Python version at fixed libraries ({a python} against {b python on "
        "macos-arm64} on macOS, {b python on linux-x86_64} on Linux)",
        STACKS,
        ENVIRONMENT,
        explained=r"^python$",
        moves=Moves(also=_STACK_FIELDS),
        uses=_both(),
    ),
    Factor(
        "sklearn",
        "scikit-learn version at a fixed numpy ({scikit-learn} on numpy {numpy})",
        STACKS,
        ENVIRONMENT,
        explained=r"^package:scikit-learn$",
        moves=Moves(also=_STACK_FIELDS),
        uses=_both(),
    ),
    Factor(
        "container",
        "the same lock in the host's venv against its container image (expected "
        "identical: a difference is a finding)",
        STACKS,
        ENVIRONMENT,
        explained=r"^image$|^os_release$|^libc$",
        moves=Moves(also=_STACK_FIELDS),
        uses=_both(),
    ),
    Factor(
        "os",
        "the operating system: one stack's image on two Debian bases (bookworm's glibc "
        "2.36 against trixie's 2.41), everything else held",
        STACKS,
        ENVIRONMENT,
        explained=r"^image$|^os_release$|^libc$",
        moves=Moves(also=_STACK_FIELDS),
        uses=_both(),
    ),
    Factor(
        "torch-threads",
        "torch threads: 1 against 2, 4, 8 (capped at the cores)",
        TORCH,
        ENVIRONMENT,
        explained=_THREAD_VARS,
        moves=Moves(("threads",), kind="torch"),
    ),
    Factor(
        "torch-deterministic",
        "torch.use_deterministic_algorithms off against on",
        TORCH,
        ENVIRONMENT,
        chosen=True,
        explained=r"^env:CUBLAS_WORKSPACE_CONFIG$|^torch:deterministic$",
        moves=Moves(("deterministic",), kind="torch"),
    ),
    Factor(
        "torch-device",
        "the torch MLP on the CPU against MPS (macOS) or CUDA (--device)",
        TORCH,
        ENVIRONMENT,
        explained=r"^torch:device(_name)?$|^env:CUBLAS_WORKSPACE_CONFIG$",
        moves=Moves(("device",), kind="torch"),
    ),
    Factor(
        "seed:svd",
        "only the randomized-SVD seed",
        SINGLE,
        SEED,
        moves=Moves(seeds=("svd",), where=_RANDOMIZED),
    ),
    Factor(
        "seed:kmeans",
        "only the k-means seed",
        SINGLE,
        SEED,
        moves=Moves(seeds=("kmeans",), where=_RANDOMIZED),
    ),
    Factor(
        "seed:models",
        "only the classifiers' seeds (MLP, boosting, forest)",
        SINGLE,
        SEED,
        moves=Moves(seeds=("mlp", "hgb", "rf"), where=_RANDOMIZED),
    ),
    Factor(
        "svd-iters",
        "the seed effect at 5, 10, 20 and 50 randomized-SVD power iterations",
        SINGLE,
        SEED,
        ranked=False,
        moves=Moves(seeds=ALL, where=_RANDOMIZED, level="svd_iters"),
    ),
    Factor(
        "svd-solver",
        "the seed effect when k-means, neighbours and classifiers use the "
        "converged ARPACK embedding instead (seeds 0 against 1..5)",
        SINGLE,
        SEED,
        ranked=False,
        moves=Moves(seeds=ALL, where=(("embedding", "arpack"),)),
    ),
    Factor(
        "seed",
        "every named seed at once: the paper's yardstick",
        SINGLE,
        SEED,
        yardstick=True,
        moves=Moves(seeds=ALL, where=_RANDOMIZED),
        uses=_both(Use("every named seed at once ({seeds})", (NEEDS_SEEDS,))),
    ),
    Factor(
        "seed:split",
        "only the split seed: the same proteins re-split into train and test "
        "(split seed 0 against 1..9, training seeds fixed): changes what is measured",
        SINGLE,
        SEED,
        ranked=False,
        measures=True,
        moves=Moves(("split",)),
    ),
    Factor(
        "torch-seed",
        "the torch MLP's init and shuffle seeds: seed 0 against 1..9",
        TORCH,
        SEED,
        yardstick=True,
        moves=Moves(seeds=ALL, kind="torch"),
    ),
    Factor(
        "perturb",
        "the classifiers retrained on one embedding plus noise of relative size eps "
        "(1e-15..1e-3, 3 draws) and rounded to float32: the amplification curve",
        PERTURB,
        NOISE,
        ranked=False,
        moves=Moves(("kind", "input", "perturb"), kind="perturb", level="perturb"),
    ),
)
# a pipeline file's seed:NAME, one record for each name of its SEEDS: planned, never a table row
# (its budget rows are named for the file's seeds, kit.core.factors.moves reads them)
NAMED_SEED = Factor(
    SEED_NAME,
    "one named seed of a pipeline file alone",
    SINGLE,
    SEED,
    uses=((PIPELINE, _NAMED_SEED),),
)
_FACTORS = {f.name: f for f in _BUILT_IN}  # in table order
_PATTERNS = {f.name: re.compile(f.explained) for f in _BUILT_IN if f.explained}
# a factor's planner: its planning context -> [Pair], both kit.runs.planning's (above this floor)
Planner = Callable[[Any], list[Any]]
_PLANNERS: dict[tuple[str, str], Planner] = {}  # (name, subject kind) -> planner
FACTORS = MappingProxyType(_FACTORS)  # a read-only view: ``register`` is the one way in


def spec_env() -> dict[str, re.Pattern[str]]:
    """{variable: compiled form of its values} of every variable a factor sets in a spec."""
    return {var: _env_form(form) for f in _FACTORS.values() for var, form in f.sets_env}


@cache
def _env_form(form: str) -> re.Pattern[str]:
    return re.compile(form)


def register(
    factor: Factor, planner: Planner | None = None, after: str | None = None, kind: str = DATASET
) -> None:
    """Enter ``factor`` (after the factor named ``after``, else last) with its planner for
    subjects of ``kind``.

    A factor already in the table with this same record takes the planner: that is how
    kit.runs.planning gives the built-in factors theirs, one per kind of subject the factor
    applies to. Plannable factors need a planner, others (made by `kit compare`) must not have
    one.
    """
    if factor.plannable != (planner is not None):
        raise ValueError(
            f"factor {factor.name!r} is planned {factor.planned!r}: "
            + ("it needs a planner" if factor.plannable else "it takes no planner")
        )
    if planner is not None and factor.use(kind) is None:
        raise ValueError(f"factor {factor.name!r} does not apply to a {kind}")
    known = _FACTORS.get(factor.name)
    if known is not None and known != factor:
        raise ValueError(f"another factor is already registered as {factor.name!r}")
    if known is None and factor is not NAMED_SEED:
        items = list(_FACTORS.items())
        at = [n for n, _ in items].index(after) + 1 if after else len(items)
        items.insert(at, (factor.name, factor))
        _FACTORS.clear()
        _FACTORS.update(items)
        if factor.explained:
            _PATTERNS[factor.name] = re.compile(factor.explained)
    if planner is not None:
        _PLANNERS[(factor.name, kind)] = planner


def unregister(name: str) -> None:
    """Remove a factor and its planners (as a test undoes its ``register``)."""
    _FACTORS.pop(name, None)
    _PATTERNS.pop(name, None)
    for key in [k for k in _PLANNERS if k[0] == name]:
        del _PLANNERS[key]


@contextmanager
def registered(
    factor: Factor, planner: Planner | None = None, after: str | None = None
) -> Iterator[Factor]:
    """``register`` a new factor for the length of a ``with`` block."""
    if factor.name in _FACTORS:
        raise ValueError(f"factor {factor.name!r} is already registered")
    register(factor, planner, after)
    try:
        yield factor
    finally:
        unregister(factor.name)


def planner(name: str, kind: str = DATASET) -> Planner:
    """The function that plans a factor's pairs for a subject of ``kind`` (registered by
    kit.runs.planning on import; a pipeline file's seed:NAME all share SEED_NAME's).
    NotFound: no factor of that name plans for that kind (kit's own list in the line)."""
    fn = _PLANNERS.get(_key(name, kind))
    if fn is None:
        raise NotFound(f"unknown factor {name!r}; choose from {', '.join(plannable())}")
    return fn


def _key(name: str, kind: str) -> tuple[str, str]:
    return (SEED_NAME if kind == PIPELINE and name.startswith("seed:") else name, kind)


def use(name: str, kind: str, seeds: Iterable[str] = ()) -> Use | None:
    """How factor ``name`` applies to a subject of ``kind`` declaring ``seeds`` (None: not at
    all). A pipeline file's seed:NAME applies where NAME is one of its SEEDS (kit's own
    seed:svd too, then as the file's seed)."""
    if kind == PIPELINE and name.startswith("seed:"):
        return _NAMED_SEED if name.split(":", 1)[1] in tuple(seeds) else None
    f = _FACTORS.get(name)
    return f.use(kind) if f else None


def for_kind(kind: str, seeds: Iterable[str] | None = None) -> tuple[str, ...]:
    """The names of the plannable factors that apply to a subject of ``kind``, in table order;
    for a pipeline file its own factors first, seed:NAME after seed (each of ``seeds``, or
    SEED_NAME itself when None), then the stacks it is run across as kit's own pipeline is."""
    out: list[str] = []
    rows: Iterable[Factor] = table()
    if kind == PIPELINE:  # sorted is stable: table order within each part
        rows = sorted(rows, key=lambda f: f.planned == STACKS)
    for f in rows:
        if f.plannable and f.use(kind) is not None:
            out.append(f.name)
            if kind == PIPELINE and f.name == "seed":
                out += [SEED_NAME] if seeds is None else [f"seed:{n}" for n in seeds]
    return tuple(out)


def described(name: str, kind: str, seeds: Iterable[str] = (), own: str | None = None) -> str:
    """The one line that says what factor ``name`` changes for a subject of ``kind`` declaring
    ``seeds`` (``own``: the factor's own line as kit.envs.descriptions fills it)."""
    u = use(name, kind, seeds)
    if u is None or u.description is None:
        return own if own is not None else _FACTORS[name].what
    return u.description.format(
        seeds=", ".join(tuple(seeds)) or "none", seed=name.split(":", 1)[-1]
    )


def table() -> tuple[Factor, ...]:
    """Every factor, in the order of the budget's rows."""
    return tuple(_FACTORS.values())


def get(name: str) -> Factor | None:
    """The factor of a budget row (None for a name kit does not know, e.g. from a newer kit)."""
    return _FACTORS.get(name)


def names(*planned: str) -> tuple[str, ...]:
    """Factor names, in table order, optionally only those planned in one of the given ways."""
    return tuple(f.name for f in table() if not planned or f.planned in planned)


def plannable() -> dict[str, str]:
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


def confounds(factor: str, env_diff: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes that differed within a pair beyond what its factor is meant to change."""
    pattern = _PATTERNS.get(factor)
    return {k: v for k, v in env_diff.items() if not (pattern and pattern.search(k))}


def unknown_factor(name: str, known: Iterable[str] | None = None) -> str:
    """The one line for a name no factor has: the closest of ``known`` (default: every factor
    `kit run --factor` plans), or all of them listed (kit.worker.names, every typed name's)."""
    return unknown("unknown factor", name, plannable() if known is None else known)


# -- what a pair's two specs show: its factor and level, recomputed (kit.app.bundle_derived) --
# a RunSpec (kit.core.spec) is read by its dataclass fields: spec imports this registry (its
# env rule), so this module names the type only in annotations
def moves(name: str, a: RunSpec) -> Moves | None:
    """What a pair of factor ``name`` differs in, for runs like ``a``: the table's, except a
    lab pipeline's seed:NAME, which moves that one of its file's SEEDS (kit.runs.planning.plan)."""
    if a.pipeline and name.startswith("seed:"):
        seed = name.split(":", 1)[1]
        return Moves(seeds=(seed,), where=_RANDOMIZED) if seed in a.seed_dict else None
    f = _FACTORS.get(name)
    return f.moves if f else None


def differs(
    name: str, a: RunSpec, b: RunSpec, stacks: Iterable[tuple[str, Env, str, Env]] = ()
) -> bool:
    """Whether ``a`` and ``b`` differ as a pair of factor ``name`` does, and in nothing else.
    ``stacks``: the (stack a, env a, stack b, env b) the catalogue lists for a stack factor."""
    m = moves(name, a)
    if m is None:
        return False
    da, db = vars(a), vars(b)
    moved = {f.name for f in fields(a) if da[f.name] != db[f.name]}
    if m.kind == "perturb":
        if a.kind != "pipeline" or b.kind != "perturb" or b.input != a.run_id:
            return False
    elif a.kind != b.kind or (m.kind and a.kind != m.kind):
        return False
    if any(da[k] != v or db[k] != v for k, v in m.where):
        return False
    if m.seeds:
        sa, sb = a.seed_dict, b.seed_dict
        if [k for k, _ in a.seeds] != [k for k, _ in b.seeds]:
            return False
        want = set(sa) if isinstance(m.seeds, str) else set(m.seeds)  # a str is ALL
        if not want or {k for k in sa if sa[k] != sb[k]} != want:
            return False
        moved.discard("seeds")
    if _FACTORS.get(name) and _FACTORS[name].planned == STACKS:
        return moved <= set(m.also) and (a.stack, a.env, b.stack, b.env) in set(stacks)
    return set(m.fields) <= moved <= set(m.fields) | set(m.also) and (bool(moved) or bool(m.seeds))


def level(name: str, a: RunSpec, b: RunSpec) -> str:
    """The budget level a pair of ``name`` between ``a`` and ``b`` has, as its planner writes it:
    svd-iters' power iterations, perturb's noise size ("1e-13") or "float32"; else ""."""
    m = moves(name, a)
    if m is None or not m.level:
        return ""
    if m.level == "perturb":
        return b.perturb if b.perturb == "float32" else noise_level(b.perturb)
    return str(vars(a)[m.level])


def noise_level(perturb: str) -> str:
    """The level of a perturbed run's "noise:EPS:DRAW": its noise size as the budget names it."""
    try:
        return level_name(float(perturb.split(":")[1]))
    except (IndexError, ValueError):
        return ""


def level_name(eps: float) -> str:
    """The budget row level of a noise size: 1e-13 -> "1e-13"."""
    return f"{eps:.0e}"
