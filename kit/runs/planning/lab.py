"""Plans for a lab's own pipeline file: the null experiment, its named seeds one at a time, the
process, threads and precision, and the stack pairs kit's own pipeline is measured across."""

from __future__ import annotations

from ...core import factors
from ...core.errors import KitError
from ...core.hosts import host_id
from ...core.spec import RunSpec, pipeline_seeds
from ...envs.catalogue import HOST
from ...envs.kinds import stack_kind
from ...envs.platforms import Platform, detect
from .options import SEEDS, Pair, PlanOptions, default_threads, need_two_seeds
from .plan import host_pairs
from .stack_pairs import stack_pairs

# seed:NAME for each name in the file's SEEDS; the stack factors are kit's own (arch, blas, ...)
LAB_FACTORS = ("repeat", "process", "host", "threads", "precision", "seed", "seed:NAME",
               *factors.names(factors.STACKS))


def lab_plan(factor: str, info: dict, opts: PlanOptions = PlanOptions(), stack: str = HOST,
             get=lambda name: stack_kind(name).runnable(), plat: Platform | None = None) -> list:
    """The pairs that measure ``factor`` for the pipeline ``info`` (kit.data.pipelines), planned
    as kit plans its own pipeline's: ``repeat`` runs each thread count twice; ``process`` a fresh
    worker against a warm one; ``host`` one spec at 1 thread on each of ``opts.hosts`` (a
    cluster's node classes) against the first; ``threads`` 1 against each other count; ``precision`` float64
    against float32 at 1 and the most threads; ``seed`` moves every named seed at once from the
    first seed to each later one; ``seed:NAME`` NAME alone; a stack factor runs the catalogue's
    stack pairs for it, at the first seed and thread count (1 by default)."""
    names = tuple(info["seeds"])
    if factors.FACTORS.get(factor) and factors.FACTORS[factor].planned == factors.STACKS:
        return _stacks(factor, info, opts, get, plat or detect())
    _refuse(factor, info)
    st = get(stack)
    threads = tuple(opts.threads) or default_threads(opts.cores)
    base = RunSpec(dataset=info["sha256"], stack=st.name, stack_id=st.identity,
                   threads=threads[0], seeds=pipeline_seeds(names, 0), pipeline=info["sha256"],
                   host=opts.host or host_id())
    if factor == "repeat":
        return [Pair(factor, "", base.with_(threads=t), base.with_(threads=t, replicate=1),
                     f"{t} thread(s), run twice") for t in threads]
    if factor == "host":  # one spec on two of a cluster's node classes, as kit plans its own
        return host_pairs(factor, base, opts.hosts)
    if factor == "process":
        return [Pair(factor, "", base.with_(process="fresh"), base.with_(process="warm"),
                     f"fresh vs warm process, {base.threads} thread(s)")]
    if factor == "threads":
        others = [t for t in threads if t != 1]
        if not others:
            raise KitError("the threads factor needs a count other than 1 (--threads 1,2)")
        return [Pair(factor, "", base.with_(threads=1), base.with_(threads=t),
                     f"1 vs {t} threads") for t in others]
    if factor == "precision":
        return [Pair(factor, "", base.with_(threads=t), base.with_(threads=t, dtype="float32"),
                     f"float64 vs float32, {t} thread(s)") for t in sorted({1, max(threads)})]
    which = factor.split(":", 1)[1] if ":" in factor else None
    if which is not None and which not in names:
        raise KitError(f"{info['name']} names no seed {which!r}: its SEEDS are "
                       f"{', '.join(names) or 'none'} (seed:NAME for one of them)"
                       + (f"; {factor} is kit's own pipeline's, not for a pipeline file"
                          if factor in _KIT_SEEDS else ""))
    if not names:
        raise KitError(f"{info['name']} names no seeds (SEEDS = ()): there is no seed to vary")
    vals = tuple(opts.seeds) or SEEDS
    need_two_seeds(vals)
    s0 = vals[0]

    def at(s):
        return base.with_(seeds=pipeline_seeds(names, s) if which is None
                          else pipeline_seeds(names, s0, **{which: s}))

    return [Pair(factor, "", at(s0), at(s), f"seed {s0} vs {s}") for s in vals[1:]]


def _refuse(factor: str, info: dict) -> None:
    """One line for a factor that is not a pipeline file's (kit's own stages' options), or is
    not one at all, or needs what the file lacks (precision: a run that takes a dtype)."""
    if factor in ("repeat", "process", "host", "threads", "seed") or factor.startswith("seed:"):
        return  # seed:NAME for a name the file lacks is said by the seed planner
    if factor == "precision":
        if info.get("dtype"):
            return
        raise KitError(f"precision: {info['name']}'s run takes no dtype: define run(seeds, "
                       f"dtype) and cast its input to dtype (\"float64\" or \"float32\")")
    known = factors.FACTORS.get(factor)
    if known is None and factor not in ("feed", "embedding"):  # kit's stages' options, not factors
        raise KitError(f"unknown factor {factor!r} for a pipeline file: one of "
                       f"{', '.join(LAB_FACTORS)}")
    raise KitError(f"{factor} is a factor of kit's own pipeline, not for a pipeline file "
                   f"({info['name']}): one of {', '.join(LAB_FACTORS)}")


# kit's own named seeds: for a pipeline file they are factors only where its SEEDS names them
_KIT_SEEDS = ("seed:svd", "seed:kmeans", "seed:models", "seed:split")


def _stacks(factor: str, info: dict, opts: PlanOptions, get, plat: Platform) -> list:
    """The catalogue's stack pairs for ``factor`` (the same pairs, and the same one-line reasons,
    as for kit's own pipeline), each running the file at the first seed and thread count."""
    threads = (tuple(opts.threads) or (1,))[0]
    seed = (tuple(opts.seeds) or (0,))[0]
    names = tuple(info["seeds"])

    def spec(name, env):
        st = get(name)
        return RunSpec(dataset=info["sha256"], stack=st.name, stack_id=st.identity,
                       threads=threads, seeds=pipeline_seeds(names, seed), env=env,
                       pipeline=info["sha256"], host=opts.host or host_id())

    return [Pair(factor, "", spec(a, ea), spec(b, eb), label)
            for a, ea, b, eb, label in stack_pairs(factor, plat)]
