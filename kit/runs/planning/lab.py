"""Plans for a lab's own pipeline file: the null experiment, its named seeds one at a time, the
process, threads and precision, and the stack pairs kit's own pipeline is measured across.

Each planner is registered with the table of factors (kit.core.factors) for subjects of kind
PIPELINE, as kit.runs.planning.plan registers kit's own for DATASET: ``lab_plan`` looks the
factor's planner up, and the table says which factors a pipeline file takes."""

from __future__ import annotations

from dataclasses import dataclass

from ...core import factors
from ...core.errors import KitError, NotFound, Refused
from ...core.factors import PIPELINE
from ...core.hosts import host_id
from ...core.spec import RunSpec, pipeline_seeds
from ...envs.catalogue import HOST
from ...envs.kinds import stack_kind
from ...envs.platforms import Platform, detect
from .options import SEEDS, Pair, PlanOptions, default_threads, need_two_seeds
from .plan import host_pairs, precision_pairs, process_pairs, repeat_pairs
from .stack_pairs import stack_pairs


@dataclass(frozen=True)
class LabContext:
    """What a pipeline file's planner knows: the factor, the file's declaration (kit.data.
    pipelines' info), the user's options, the stack for single-stack factors, the platform,
    and how to turn a stack name into a Stack."""

    factor: str
    info: dict
    opts: PlanOptions
    stack: str
    plat: Platform
    get: object

    @property
    def seed_names(self) -> tuple:
        return tuple(self.info["seeds"])

    def threads(self) -> tuple:
        return tuple(self.opts.threads) or default_threads(self.opts.cores)

    def base(self) -> RunSpec:
        """The first run of a single-stack factor: this stack, the first thread count, the
        first seed for every name."""
        st = self.get(self.stack)
        return RunSpec(dataset=self.info["sha256"], stack=st.name, stack_id=st.identity,
                       threads=self.threads()[0], seeds=pipeline_seeds(self.seed_names, 0),
                       pipeline=self.info["sha256"], host=self.opts.host or host_id())


def _plans(*names):
    """Register the decorated planner as the pipeline-file planner of the factors ``names``."""
    def bind(fn):
        for name in names:
            f = factors.NAMED_SEED if name == factors.SEED_NAME else factors.get(name)
            factors.register(f, fn, kind=PIPELINE)
        return fn
    return bind


def lab_plan(factor: str, info: dict, opts: PlanOptions = PlanOptions(), stack: str = HOST,
             get=lambda name: stack_kind(name).runnable(), plat: Platform | None = None) -> list:
    """The pairs that measure ``factor`` for the pipeline ``info`` (kit.data.pipelines), planned
    as kit plans its own pipeline's: ``repeat`` runs each thread count twice; ``process`` a fresh
    worker against a warm one; ``host`` one spec at 1 thread on each of ``opts.hosts`` (a
    cluster's node classes) against the first; ``threads`` 1 against each other count; ``precision`` float64
    against float32 at 1 and the most threads; ``seed`` moves every named seed at once from the
    first seed to each later one; ``seed:NAME`` NAME alone; a stack factor runs the catalogue's
    stack pairs for it, at the first seed and thread count (1 by default).
    NotFound: no such factor; Refused: a factor the file does not take (one line each)."""
    _refuse(factor, info)
    ctx = LabContext(factor, info, opts, stack, plat or detect(), get)
    return factors.planner(factor, PIPELINE)(ctx)


def _refuse(factor: str, info: dict) -> None:
    """One line for a factor that is not a pipeline file's (kit's own stages' options), or is
    not one at all, or needs what the file lacks (precision: a run that takes a dtype)."""
    choices = ", ".join(factors.for_kind(PIPELINE))
    if factor.startswith("seed:"):
        return  # seed:NAME for a name the file lacks is said by the seed planner
    use = factors.use(factor, PIPELINE, info["seeds"])
    if use is not None:
        if factors.NEEDS_DTYPE in use.needs and not info.get("dtype"):
            raise Refused(f"{factor}: {info['name']}'s run takes no dtype: define run(seeds, "
                          f"dtype) and cast its input to dtype (\"float64\" or \"float32\")")
        return
    # feed and embedding: kit's own stages' options, not factors, but kit's all the same
    if factors.get(factor) is None and factor not in ("feed", "embedding"):
        raise NotFound(f"unknown factor {factor!r} for a pipeline file: one of {choices}")
    raise Refused(f"{factor} is a factor of kit's own pipeline, not for a pipeline file "
                  f"({info['name']}): one of {choices}")


# the null experiment, a fresh process and precision are planned for a file as for kit's own
# pipeline: the same planners, each over this kind's context (its base run and thread counts)
_plans("repeat")(repeat_pairs)
_plans("process")(process_pairs)
_plans("precision")(precision_pairs)


@_plans("host")
def _host(ctx):  # one spec on two of a cluster's node classes, as kit plans its own
    return host_pairs(ctx.factor, ctx.base(), ctx.opts.hosts)


@_plans("threads")
def _threads(ctx):
    base, others = ctx.base(), [t for t in ctx.threads() if t != 1]
    if not others:
        raise KitError("the threads factor needs a count other than 1 (--threads 1,2)")
    return [Pair(ctx.factor, "", base.with_(threads=1), base.with_(threads=t),
                 f"1 vs {t} threads") for t in others]


# kit's own named seeds: for a pipeline file they are factors only where its SEEDS names them
_KIT_SEEDS = ("seed:svd", "seed:kmeans", "seed:models", "seed:split")


@_plans("seed", factors.SEED_NAME)
def _seeds(ctx):
    """``seed`` moves every named seed at once; seed:NAME that one alone (Refused: a name the
    file's SEEDS lacks, or no seeds at all)."""
    factor, info, names = ctx.factor, ctx.info, ctx.seed_names
    which = factor.split(":", 1)[1] if ":" in factor else None
    if which is not None and which not in names:
        raise Refused(f"{info['name']} names no seed {which!r}: its SEEDS are "
                      f"{', '.join(names) or 'none'} (seed:NAME for one of them)"
                      + (f"; {factor} is kit's own pipeline's, not for a pipeline file"
                         if factor in _KIT_SEEDS else ""))
    if not names:
        raise Refused(f"{info['name']} names no seeds (SEEDS = ()): there is no seed to vary")
    base = ctx.base()
    vals = tuple(ctx.opts.seeds) or SEEDS
    need_two_seeds(vals)
    s0 = vals[0]

    def at(s):
        return base.with_(seeds=pipeline_seeds(names, s) if which is None
                          else pipeline_seeds(names, s0, **{which: s}))

    return [Pair(factor, "", at(s0), at(s), f"seed {s0} vs {s}") for s in vals[1:]]


@_plans(*factors.names(factors.STACKS))
def _stacks(ctx):
    """The catalogue's stack pairs for the factor (the same pairs, and the same one-line
    reasons, as for kit's own pipeline), each running the file at the first seed and thread
    count."""
    info, opts = ctx.info, ctx.opts
    threads = (tuple(opts.threads) or (1,))[0]
    seed = (tuple(opts.seeds) or (0,))[0]
    names = ctx.seed_names

    def spec(name, env):
        st = ctx.get(name)
        return RunSpec(dataset=info["sha256"], stack=st.name, stack_id=st.identity,
                       threads=threads, seeds=pipeline_seeds(names, seed), env=env,
                       pipeline=info["sha256"], host=opts.host or host_id())

    return [Pair(ctx.factor, "", spec(a, ea), spec(b, eb), label)
            for a, ea, b, eb, label in stack_pairs(ctx.factor, ctx.plat)]
