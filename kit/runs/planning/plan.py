"""Plans: the pairs of run specs that isolate each factor, one planner per factor per subject kind.

The table of factors (kit.core.factors) says what each factor is; each planner here is
registered with it (``factors.register``) for the kind of subject it plans: kit's own pipeline
on a dataset (DATASET: a ``Context``) or a lab's pipeline file (PIPELINE: a ``FileContext``),
the two side by side under each factor, the same function where both plan alike. A function
per single-stack factor, one per way of planning for stacks, torch and the perturbation sweep.
Adding a factor is one ``register``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...core import factors
from ...core.errors import KitError, NotFound, Refused
from ...core.factors import DATASET, PIPELINE
from ...core.spec import RunSpec, pipeline_seeds, seeds
from ...envs.catalogue import HOST
from ...envs.kinds import stack_kind
from ...envs.platforms import Platform, detect
from ...envs.stacks import Stack
from ...worker.names import did_you_mean, shown, unknown
from ..store.hosts import host_id
from .options import (
    DRAWS,
    EPS,
    PRECISION_LEVEL,
    SEEDS,
    SVD_ITER_SEEDS,
    Pair,
    PlanOptions,
    default_threads,
    level_name,
    need_two_seeds,
)
from .stack_pairs import stack_pairs, stack_plan, torch_plan, torch_target, torch_thread_counts


@dataclass(frozen=True)
class Context:
    """What a planner knows: the factor, the dataset, the user's options, the stack for
    single-stack factors, the platform, and how to turn a stack name into a Stack."""

    factor: str
    dataset: str
    opts: PlanOptions
    stack: str
    plat: Platform
    get: Callable[[str], Stack]

    def base(self) -> RunSpec:
        """The first run of a single-stack factor: this stack, the first thread count."""
        st = self.get(self.stack)
        return RunSpec(
            dataset=self.dataset, stack=st.name, stack_id=st.identity, threads=self.threads()[0]
        )

    def threads(self) -> tuple:
        return tuple(self.opts.threads) or default_threads(self.opts.cores)

    def reference(self) -> RunSpec:
        # made where the plan's runs are (a cluster's node class): the run the audit makes
        # first, so torch and perturbed runs name it as their input (issue 42: they named the
        # driver's, which no node makes: "run ... has no stage 'svd_rand'")
        return reference_embedding(self.dataset, self.get, where=self.opts.host)


@dataclass(frozen=True)
class FileContext:
    """What a pipeline file's planner knows: the factor, the file's declaration (kit.data.
    pipelines' info), the user's options, the stack for single-stack factors, the platform,
    and how to turn a stack name into a Stack."""

    factor: str
    info: dict
    opts: PlanOptions
    stack: str
    plat: Platform
    get: Callable[[str], Stack]

    @property
    def seed_names(self) -> tuple:
        return tuple(self.info["seeds"])

    def threads(self) -> tuple:
        return tuple(self.opts.threads) or default_threads(self.opts.cores)

    def base(self) -> RunSpec:
        """The first run of a single-stack factor: this stack, the first thread count, the
        first seed for every name."""
        st = self.get(self.stack)
        return RunSpec(
            dataset=self.info["sha256"],
            stack=st.name,
            stack_id=st.identity,
            threads=self.threads()[0],
            seeds=pipeline_seeds(self.seed_names, 0),
            pipeline=self.info["sha256"],
            host=self.opts.host or host_id(),
        )


def _plans(*names, kind: str = DATASET):
    """Register the decorated planner as the planner of the built-in factors ``names`` for
    subjects of ``kind`` (a pipeline file's seed:NAME all share SEED_NAME's)."""

    def bind(fn):
        for name in names:
            f = factors.NAMED_SEED if name == factors.SEED_NAME else factors.get(name)
            factors.register(f, fn, kind=kind)
        return fn

    return bind


def _seed_pairs(factor, base, seed_values, level="", **spec_changes):
    """Seed s0 against each later seed; for seed:X factors only that named seed moves."""
    s0, rest = seed_values[0], seed_values[1:]
    moved = factors.get(factor).moves.seeds  # the table says which seeds a factor moves

    def at(s):
        if moved == factors.ALL:
            return base.with_(seeds=seeds(s), **spec_changes)
        return base.with_(seeds=seeds(s0, **{n: s for n in moved}), **spec_changes)

    return [Pair(factor, level, at(s0), at(s), f"seed {s0} vs {s}") for s in rest]


@_plans("repeat", kind=PIPELINE)
@_plans("repeat")
def repeat_pairs(ctx):
    """Each thread count run twice (the null experiment): kit's own and a pipeline file's."""
    base = ctx.base()
    return [
        Pair(
            ctx.factor,
            "",
            base.with_(threads=t),
            base.with_(threads=t, replicate=1),
            f"{t} thread(s), run twice",
        )
        for t in ctx.threads()
    ]


@_plans("process", kind=PIPELINE)
@_plans("process")
def process_pairs(ctx):
    """A fresh worker process against a warm one that made a run first (either kind)."""
    base = ctx.base()
    return [
        Pair(
            ctx.factor,
            "",
            base.with_(process="fresh"),
            base.with_(process="warm"),
            f"fresh vs warm process, {base.threads} thread(s)",
        )
    ]


@_plans("threads")
def _threads(ctx):
    base, others = ctx.base(), [t for t in ctx.threads() if t != 1]
    if not others and ctx.opts.cores and not ctx.opts.threads:
        others = [2]  # a cluster of one-core workers: planned, then skipped with why
    if not others:
        raise KitError("the threads factor needs a count other than 1 (--threads 1,2)")
    return [
        Pair(ctx.factor, "", base.with_(threads=1), base.with_(threads=t), f"1 vs {t} threads")
        for t in others
    ]


@_plans("threads", kind=PIPELINE)
def _file_threads(ctx):  # a file's plan has no cluster of one-core workers to plan for
    base, others = ctx.base(), [t for t in ctx.threads() if t != 1]
    if not others:
        raise KitError("the threads factor needs a count other than 1 (--threads 1,2)")
    return [
        Pair(ctx.factor, "", base.with_(threads=1), base.with_(threads=t), f"1 vs {t} threads")
        for t in others
    ]


@_plans("precision", kind=PIPELINE)
@_plans("precision")
def precision_pairs(ctx):
    """float64 against float32 at 1 and the most threads (either kind)."""
    base = ctx.base()
    return [
        Pair(
            ctx.factor,
            "",
            base.with_(threads=t),
            base.with_(threads=t, dtype="float32"),
            f"float64 vs float32, {t} thread(s)",
        )
        for t in sorted({1, max(ctx.threads())})
    ]


@_plans("svd-iters")
def _svd_iters(ctx):
    vals = tuple(ctx.opts.seeds) or SVD_ITER_SEEDS
    need_two_seeds(vals)
    return [
        p
        for it in ctx.opts.svd_iters
        for p in _seed_pairs(ctx.factor, ctx.base(), vals, level=str(it), svd_iters=it)
    ]


@_plans("svd-solver")
def _svd_solver(ctx):
    vals = tuple(ctx.opts.seeds) or SVD_ITER_SEEDS  # the same seeds as svd-iters: comparable rows
    need_two_seeds(vals)
    return _seed_pairs(ctx.factor, ctx.base(), vals, embedding="arpack")


@_plans("seed", "seed:svd", "seed:kmeans", "seed:models")
def _seeds(ctx):
    vals = tuple(ctx.opts.seeds) or SEEDS
    need_two_seeds(vals)
    return _seed_pairs(ctx.factor, ctx.base(), vals)


# kit's own named seeds: for a pipeline file they are factors only where its SEEDS names them
_KIT_SEEDS = ("seed:svd", "seed:kmeans", "seed:models", "seed:split")


@_plans("seed", factors.SEED_NAME, kind=PIPELINE)
def _file_seeds(ctx):
    """A file's ``seed`` moves every named seed at once; seed:NAME that one alone (Refused: a
    name the file's SEEDS lacks, or no seeds at all)."""
    factor, info, names = ctx.factor, ctx.info, ctx.seed_names
    which = factor.split(":", 1)[1] if ":" in factor else None
    if which is not None and which not in names:
        # a slip of the file's own names is said as one; kit's seed:svd is not a slip
        hint = "" if factor in _KIT_SEEDS else did_you_mean(factor, [f"seed:{n}" for n in names])
        raise Refused(
            f"{info['name']} names no seed {shown(which)}: "
            + (
                hint
                or (
                    f"its SEEDS are {', '.join(names) or 'none'} (seed:NAME for one of them)"
                    + (
                        f"; {factor} is kit's own pipeline's, not for a pipeline file"
                        if factor in _KIT_SEEDS
                        else ""
                    )
                )
            )
        )
    if not names:
        raise Refused(f"{info['name']} names no seeds (SEEDS = ()): there is no seed to vary")
    base = ctx.base()
    vals = tuple(ctx.opts.seeds) or SEEDS
    need_two_seeds(vals)
    s0 = vals[0]

    def at(s):
        return base.with_(
            seeds=pipeline_seeds(names, s)
            if which is None
            else pipeline_seeds(names, s0, **{which: s})
        )

    return [Pair(factor, "", at(s0), at(s), f"seed {s0} vs {s}") for s in vals[1:]]


@_plans("seed:split")
def _split(ctx):
    """Split seed s0 against each later one; the training seeds stay at the base run's (0),
    so only which proteins are trained and tested on moves."""
    vals = tuple(ctx.opts.seeds) or SEEDS
    need_two_seeds(vals)
    base = ctx.base()
    return [
        Pair(
            ctx.factor,
            "",
            base.with_(split=vals[0]),
            base.with_(split=s),
            f"split {vals[0]} vs {s}",
        )
        for s in vals[1:]
    ]


@_plans(*factors.names(factors.HOSTS), kind=PIPELINE)
@_plans(*factors.names(factors.HOSTS))
def _hosts(ctx):  # one spec on two of a cluster's node classes, for either kind
    return host_pairs(ctx.factor, ctx.base(), ctx.opts.hosts)


def host_pairs(factor: str, base: RunSpec, hosts) -> list:
    """The host factor's pairs: ``base`` at 1 thread made on the first of ``hosts`` (a
    cluster's node classes) against each other (kit's own pipeline's, and a pipeline file's)."""
    hosts = tuple(hosts)
    if len(hosts) < 2:
        raise KitError(
            "the host factor runs one spec on two machines: name two node classes, "
            "hosts or workers of a cluster with --hosts A,B (and --cluster; see "
            "docs/cluster.md), or compare two machines' bundles with `kit compare`"
        )
    base = base.with_(threads=1)
    return [
        Pair(factor, "", base.with_(host=hosts[0]), base.with_(host=h), f"{hosts[0]} vs {h}")
        for h in hosts[1:]
    ]


@_plans(*factors.names(factors.PERTURB))
def _perturb(ctx):
    base = ctx.reference()
    draws = tuple(ctx.opts.seeds) or tuple(range(DRAWS))  # --seeds chooses the noise draws here
    out = []
    for eps in tuple(ctx.opts.eps) or EPS:
        for d in draws:
            b = base.with_(kind="perturb", input=base.run_id, perturb=f"noise:{eps!r}:{d}")
            out.append(Pair(ctx.factor, level_name(eps), base, b, f"eps {eps:g}, noise draw {d}"))
    b = base.with_(kind="perturb", input=base.run_id, perturb="float32")
    return out + [Pair(ctx.factor, PRECISION_LEVEL, base, b, "embedding rounded to float32")]


_plans(*factors.names(factors.STACKS))(stack_plan)  # one planner per way of planning
_plans(*factors.names(factors.TORCH))(torch_plan)


@_plans(*factors.names(factors.STACKS), kind=PIPELINE)
def _file_stacks(ctx):
    """The catalogue's stack pairs for the factor (the same pairs, and the same one-line
    reasons, as for kit's own pipeline), each running the file at the first seed and thread
    count; a pair with a stack ``ctx.get`` has none for (None: a pipeline's REQUIRES cannot be
    had there, said by its planner) is left out."""
    info, opts = ctx.info, ctx.opts
    threads = (tuple(opts.threads) or (1,))[0]
    seed = (tuple(opts.seeds) or (0,))[0]
    names = ctx.seed_names

    def spec(name, env):
        st = ctx.get(name)
        return RunSpec(
            dataset=info["sha256"],
            stack=st.name,
            stack_id=st.identity,
            threads=threads,
            seeds=pipeline_seeds(names, seed),
            env=env,
            pipeline=info["sha256"],
            host=opts.host or host_id(),
        )

    return [
        Pair(ctx.factor, "", spec(a, ea), spec(b, eb), label)
        for a, ea, b, eb, label in stack_pairs(ctx.factor, ctx.plat, ctx.stack, opts.built)
        if ctx.get(a) is not None and ctx.get(b) is not None
    ]


def required_stacks(
    names, plat: Platform, stack: str = HOST, opts: PlanOptions | None = None
) -> list:
    """The stacks a set of factors runs in, in catalogue order."""
    out = []
    for name in names:
        planned = factors.FACTORS[name].planned
        if planned == factors.STACKS:
            out += [
                n
                for a, _, b, _, _ in stack_pairs(name, plat, stack, (opts or PlanOptions()).built)
                for n in (a, b)
            ]
        elif planned == factors.TORCH:
            if name == "torch-threads":  # counts nowhere offers: refused before any build
                torch_thread_counts(opts or PlanOptions())
            out += [HOST, torch_target(name, plat, opts or PlanOptions())[0]]
        else:
            if "pipeline" not in stack_kind(stack).uses():  # an unknown name raises here
                raise KitError(
                    f"stack {stack} has no scikit-learn: the pipeline factors need "
                    "a pipeline stack (`kit stacks` lists them)"
                )
            out.append(stack)
    return list(dict.fromkeys(out))


def reference_embedding(
    dataset_hash: str, get=lambda name: stack_kind(name).runnable(), where: str = ""
) -> RunSpec:
    """The pipeline run whose randomized embedding every torch and perturbed run trains on
    (made where the plan's runs are made: ``where`` is a cluster's node class, "" = here)."""
    host = get(HOST)
    return RunSpec(
        dataset=dataset_hash,
        stack=host.name,
        stack_id=host.identity,
        threads=1,
        host=where or host_id(),
    )


def plan(
    factor: str,
    dataset_hash: str,
    opts: PlanOptions = PlanOptions(),
    stack: str = HOST,
    plat: Platform | None = None,
    get=lambda name: stack_kind(name).runnable(),
) -> list:
    """The pairs that measure ``factor`` on one dataset (``get`` turns a stack name into a Stack).

    Torch and perturbed runs train on ``reference_embedding``'s output, which must run first.
    """
    fn = factors.planner(factor)
    ctx = Context(factor, dataset_hash, opts, stack, plat or detect(), get)
    where = opts.host or host_id()  # a planner that names hosts (the host factor) keeps them
    return [
        Pair(
            p.factor,
            p.level,
            p.a.with_(host=p.a.host or where),
            p.b.with_(host=p.b.host or where),
            p.label,
        )
        for p in fn(ctx)
    ]


def plan_file(
    factor: str,
    info: dict,
    opts: PlanOptions = PlanOptions(),
    stack: str = HOST,
    get=lambda name: stack_kind(name).runnable(),
    plat: Platform | None = None,
) -> list:
    """The pairs that measure ``factor`` for the pipeline file ``info`` (kit.data.pipelines),
    planned as kit plans its own pipeline's: ``repeat`` runs each thread count twice; ``process``
    a fresh worker against a warm one; ``host`` one spec at 1 thread on each of ``opts.hosts``
    (a cluster's node classes) against the first; ``threads`` 1 against each other count;
    ``precision`` float64 against float32 at 1 and the most threads; ``seed`` moves every named
    seed at once from the first seed to each later one; ``seed:NAME`` NAME alone; a stack factor
    runs the catalogue's stack pairs for it, at the first seed and thread count (1 by default).
    NotFound: no such factor; Refused: a factor the file does not take (one line each)."""
    _refuse_for_file(factor, info)
    ctx = FileContext(factor, info, opts, stack, plat or detect(), get)
    return factors.planner(factor, PIPELINE)(ctx)


def _refuse_for_file(factor: str, info: dict) -> None:
    """One line for a factor that is not a pipeline file's (kit's own stages' options), or is
    not one at all, or needs what the file lacks (precision: a run that takes a dtype)."""
    choices = ", ".join(factors.for_kind(PIPELINE))
    if factor.startswith("seed:"):
        return  # seed:NAME for a name the file lacks is said by the seed planner
    use = factors.use(factor, PIPELINE, info["seeds"])
    if use is not None:
        if factors.NEEDS_DTYPE in use.needs and not info.get("dtype"):
            raise Refused(
                f"{factor}: {info['name']}'s run takes no dtype: define run(seeds, "
                f'dtype) and cast its input to dtype ("float64" or "float32")'
            )
        return
    # feed and embedding: kit's own stages' options, not factors, but kit's all the same
    if factors.get(factor) is None and factor not in ("feed", "embedding"):
        raise NotFound(
            unknown(
                "unknown factor",
                factor,
                factors.for_kind(PIPELINE),
                f" for a pipeline file: one of {choices}",
            )
        )
    raise Refused(
        f"{factor} is a factor of kit's own pipeline, not for a pipeline file "
        f"({info['name']}): one of {choices}"
    )
