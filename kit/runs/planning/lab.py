"""Plans for a lab's own pipeline file: the null experiment and its named seeds, one at a time."""

from __future__ import annotations

from ...core.errors import KitError
from ...core.hosts import host_id
from ...core.spec import RunSpec, pipeline_seeds
from ...envs.catalogue import HOST
from ...envs.kinds import stack_kind
from .options import SEEDS, Pair, PlanOptions, default_threads, need_two_seeds

LAB_FACTORS = ("repeat", "seed", "seed:NAME")  # seed:NAME for each name in the file's SEEDS


def lab_plan(factor: str, info: dict, opts: PlanOptions = PlanOptions(), stack: str = HOST,
             get=lambda name: stack_kind(name).runnable()) -> list:
    """The pairs that measure ``factor`` for the pipeline ``info`` (kit.data.pipelines):
    ``repeat`` runs each thread count twice; ``seed`` moves every named seed at once from the
    first seed to each later one; ``seed:NAME`` moves NAME alone, the others held at the first."""
    names = tuple(info["seeds"])
    st = get(stack)
    threads = tuple(opts.threads) or default_threads(opts.cores)
    base = RunSpec(dataset=info["sha256"], stack=st.name, stack_id=st.identity,
                   threads=threads[0], seeds=pipeline_seeds(names, 0), pipeline=info["sha256"],
                   host=opts.host or host_id())
    if factor == "repeat":
        return [Pair(factor, "", base.with_(threads=t), base.with_(threads=t, replicate=1),
                     f"{t} thread(s), run twice") for t in threads]
    if factor != "seed" and not factor.startswith("seed:"):
        raise KitError(f"factor {factor!r} is not planned for a pipeline file yet: "
                       f"{', '.join(LAB_FACTORS)}")
    which = factor.split(":", 1)[1] if ":" in factor else None
    if which is not None and which not in names:
        raise KitError(f"{info['name']} names no seed {which!r}: its SEEDS are "
                       f"{', '.join(names) or 'none'} (seed:NAME for one of them)")
    if not names:
        raise KitError(f"{info['name']} names no seeds (SEEDS = ()): there is no seed to vary")
    vals = tuple(opts.seeds) or SEEDS
    need_two_seeds(vals)
    s0 = vals[0]

    def at(s):
        return base.with_(seeds=pipeline_seeds(names, s) if which is None
                          else pipeline_seeds(names, s0, **{which: s}))

    return [Pair(factor, "", at(s0), at(s), f"seed {s0} vs {s}") for s in vals[1:]]
