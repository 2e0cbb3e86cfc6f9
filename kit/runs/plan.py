"""Factors: which pairs of RunSpecs isolate each one thing that can change between two runs."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..core import factors
from ..core.errors import KitError
from ..envs.platforms import Platform, detect
from ..core.hosts import host_id
from ..core.spec import RunSpec, seeds, torch_seeds
from ..envs.stacks import (HOST, Stack, catalogue, devices_of, get_stack, stack_status, torch_stack,
                     uses_of)

SVD_ITERS = (5, 10, 20, 50)
SVD_ITER_SEEDS = tuple(range(6))
SEEDS = tuple(range(10))
# views of the factor table (kit.factors), by how each kind is planned
FACTORS = {n: factors.FACTORS[n].what for n in factors.names(factors.SINGLE, factors.PERTURB)}
STACK_FACTORS = {n: factors.FACTORS[n].what for n in factors.names(factors.STACKS)}
TORCH_FACTORS = {n: factors.FACTORS[n].what for n in factors.names(factors.TORCH)}
ALL_FACTORS = factors.plannable()


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
    eps: tuple = ()              # perturb: noise sizes (default kit.amplify.EPS)
    torch_stack: str | None = None  # torch factors: this stack, not the catalogue's (e.g. external)

    def __post_init__(self):
        # the one check of every setting, whoever typed it (the CLI's flags, the TUI's fields)
        cores = os.cpu_count() or 1
        for t in self.threads:
            if not 1 <= t <= cores:
                raise KitError(f"{t} threads: use 1 to {cores} (this machine's cores); more would "
                               "measure oversubscription, not the thread count")
        if any(i < 1 for i in self.svd_iters):
            raise KitError("power iterations must be 1 or more")
        if any(s < 0 for s in self.seeds):
            raise KitError("seeds must be 0 or more")
        if any(not e >= 0 for e in self.eps):
            raise KitError("noise sizes (eps) must be 0 or more")


MAX_VALUES = 10_000  # no plan needs more seeds or counts; a typo must not allocate gigabytes


def parse_ints(text: str, minimum: int = 0) -> tuple:
    """'0-9' -> 0..9; '1,2,4' -> (1, 2, 4); '1-3,8' -> (1, 2, 3, 8); duplicates dropped.

    Raises ValueError (a one-line message) below ``minimum`` or beyond MAX_VALUES numbers.
    """
    out = []
    try:
        for part in text.split(","):
            if "-" in part.strip()[1:]:
                lo, hi = (int(x) for x in part.split("-", 1))
                if hi < lo:
                    raise ValueError
                if hi - lo + 1 + len(out) > MAX_VALUES:
                    raise ValueError(f"{part.strip()} is {hi - lo + 1:,} numbers; at most "
                                     f"{MAX_VALUES:,} in one list")
                out.extend(range(lo, hi + 1))
            else:
                out.append(int(part))
    except ValueError as e:
        if str(e).endswith("in one list"):
            raise
        raise ValueError(f"expected numbers like 0-9 or 1,2,4, not {text!r}") from None
    low = [v for v in out if v < minimum]
    if low:
        raise ValueError(f"{low[0]} is not allowed here: the smallest is {minimum}")
    if len(out) > MAX_VALUES:
        raise ValueError(f"{len(out):,} numbers; at most {MAX_VALUES:,} in one list")
    return tuple(dict.fromkeys(out))


def parse_threads(text: str) -> tuple:
    """Thread counts from 1 to this machine's cores (ValueError with the fix otherwise)."""
    vals = parse_ints(text, minimum=1)
    cores = os.cpu_count() or 1
    over = [t for t in vals if t > cores]
    if over:
        raise ValueError(f"{over[0]} threads on a machine with {cores} cores would measure "
                         f"oversubscription, not the thread count; use 1 to {cores}")
    return vals


def default_threads() -> tuple:
    return tuple(range(1, (os.cpu_count() or 1) + 1))


def _seed_pairs(factor, base, seed_values, level="", **spec_changes):
    """Seed s0 against each later seed; for seed:X factors only that named seed moves."""
    s0, rest = seed_values[0], seed_values[1:]
    which = factor.split(":", 1)[1] if ":" in factor else None
    names = {"svd": ("svd",), "kmeans": ("kmeans",), "models": ("mlp", "hgb", "rf")}

    def at(s):
        if which is None:
            return base.with_(seeds=seeds(s), **spec_changes)
        return base.with_(seeds=seeds(s0, **{n: s for n in names[which]}), **spec_changes)

    return [Pair(factor, level, at(s0), at(s), f"seed {s0} vs {s}") for s in rest]


def stack_pairs(factor: str, plat: Platform) -> list:
    """[(stack a, env a, stack b, env b, label)] realising a stack factor on this platform.

    Raises KitError with a one-line reason where the factor cannot run here.
    """
    cat = catalogue()
    out = [(a, (), b, (), f"{a} vs {b}")
           for a, b in cat.get("pairs", {}).get(factor, {}).get(plat.key, [])]
    if factor == "arch":
        for cp in cat.get("codepaths", {}).get(plat.key, {}).values():
            ok = [v for v in cp["values"] if cp.get("needs", {}).get(v) in (None, *plat.cpu_flags)]
            if len(ok) < 2:
                continue
            var, best = cp["variable"], ok[-1]
            out += [(cp["stack"], ((var, best),), cp["stack"], ((var, v),),
                     f"{cp['stack']}: {var}={best} vs {v}") for v in ok[:-1]]
    if not out:
        raise KitError(f"factor {factor!r} has no stack pairs on {plat.key}")
    return out


def accelerator(plat: Platform, device: str | None, stack: str | None = None) -> str:
    """The device torch-device compares with the CPU: the one asked for, else this machine's.

    With a chosen torch ``stack``, its own torch decides (it saw the device when probed);
    otherwise the platform's facts do, before any torch stack is built.
    """
    if device is None:
        device = "mps" if plat.apple_silicon else "cuda"
    if device == "cpu":
        raise KitError("torch-device compares the CPU with --device mps or --device cuda")
    if stack:
        if device not in devices_of(stack):
            raise KitError(f"device {device} is not available in stack {stack}: its torch "
                           f"reports {', '.join(devices_of(stack))} only")
        return device
    reason = plat.device_reason(device)
    if reason:
        raise KitError(f"device {device} is not available here: {reason}")
    return device


def _torch_target(factor, plat, opts) -> tuple:
    """(the torch stack, the device compared with the CPU, or "cpu" for the other factors)."""
    name = opts.torch_stack
    if name:
        stack_status(name, plat)  # an unknown name raises here, with the fix
        if not devices_of(name):
            raise KitError(f"stack {name} has no torch; `kit stacks` lists the ones that do")
    device = accelerator(plat, opts.device, name) if factor == "torch-device" else "cpu"
    return (name or torch_stack(plat, device)), device


def required_stacks(factors, plat: Platform, stack: str = "host",
                    opts: "PlanOptions | None" = None) -> list:
    """The stacks a set of factors runs in, in catalogue order."""
    names = []
    for f in factors:
        if f in STACK_FACTORS:
            names += [n for a, _, b, _, _ in stack_pairs(f, plat) for n in (a, b)]
        elif f in TORCH_FACTORS:
            names += [HOST, _torch_target(f, plat, opts or PlanOptions())[0]]
        else:
            if "pipeline" not in uses_of(stack):
                stack_status(stack, plat)  # an unknown name raises here
                raise KitError(f"stack {stack} has no scikit-learn: the pipeline factors need "
                               "a pipeline stack (`kit stacks` lists them)")
            names.append(stack)
    return list(dict.fromkeys(names))


def reference_embedding(dataset_hash: str, get=get_stack) -> RunSpec:
    """The pipeline run whose randomized embedding every torch run trains on."""
    host = get(HOST)
    return RunSpec(dataset=dataset_hash, stack=host.name, stack_id=host.identity, threads=1,
                   host=host_id())


def plan(factor: str, dataset_hash: str, opts: PlanOptions = PlanOptions(), stack: str = "host",
         plat: Platform | None = None, get=get_stack) -> list:
    """The pairs that measure ``factor`` on one dataset (``get`` turns a stack name into a Stack).

    Torch factors train on ``reference_embedding``'s output, which must be run first.
    """
    return [Pair(p.factor, p.level, p.a.with_(host=host_id()), p.b.with_(host=host_id()), p.label)
            for p in _plan(factor, dataset_hash, opts, stack, plat, get)]


def _plan(factor, dataset_hash, opts, stack, plat, get) -> list:
    if factor == "perturb":
        return _perturb_plan(dataset_hash, opts, get)
    if factor in STACK_FACTORS:
        return _stack_plan(factor, dataset_hash, opts, plat or detect(), get)
    if factor in TORCH_FACTORS:
        return _torch_plan(factor, dataset_hash, opts, plat or detect(), get)
    if factor not in FACTORS:
        raise KitError(f"unknown factor {factor!r}; choose from {', '.join(ALL_FACTORS)}")
    stack = get(stack)
    threads = tuple(opts.threads) or default_threads()
    base = RunSpec(dataset=dataset_hash, stack=stack.name, stack_id=stack.identity,
                   threads=threads[0])
    if factor == "repeat":
        return [Pair(factor, "", base.with_(threads=t), base.with_(threads=t, replicate=1),
                     f"{t} thread(s), run twice") for t in threads]
    if factor == "threads":
        others = [t for t in threads if t != 1]
        if not others:
            raise KitError("the threads factor needs a count other than 1 (--threads 1,2)")
        return [Pair(factor, "", base.with_(threads=1), base.with_(threads=t), f"1 vs {t} threads")
                for t in others]
    if factor == "precision":
        return [Pair(factor, "", base.with_(threads=t), base.with_(threads=t, dtype="float32"),
                     f"float64 vs float32, {t} thread(s)") for t in sorted({1, max(threads)})]
    if factor == "svd-iters":
        vals = tuple(opts.seeds) or SVD_ITER_SEEDS
        _need_two(vals)
        return [p for it in opts.svd_iters
                for p in _seed_pairs(factor, base, vals, level=str(it), svd_iters=it)]
    if factor == "svd-solver":
        vals = tuple(opts.seeds) or SVD_ITER_SEEDS  # the same seeds as svd-iters: comparable rows
        _need_two(vals)
        return _seed_pairs(factor, base, vals, embedding="arpack")
    vals = tuple(opts.seeds) or SEEDS
    _need_two(vals)
    return _seed_pairs(factor, base, vals)


def _stack_plan(factor, dataset_hash, opts, plat, get) -> list:
    threads = (tuple(opts.threads) or (1,))[0]
    seed = (tuple(opts.seeds) or (0,))[0]

    def spec(name, env):
        st: Stack = get(name)
        return RunSpec(dataset=dataset_hash, stack=st.name, stack_id=st.identity,
                       threads=threads, seeds=seeds(seed), env=env)

    return [Pair(factor, "", spec(a, ea), spec(b, eb), label)
            for a, ea, b, eb, label in stack_pairs(factor, plat)]


def _perturb_plan(dataset_hash, opts, get) -> list:
    from ..analysis.amplify import DRAWS, EPS, PRECISION_LEVEL, level_name

    base = reference_embedding(dataset_hash, get)
    draws = tuple(opts.seeds) or tuple(range(DRAWS))  # --seeds chooses the noise draws here
    out = []
    for eps in (tuple(opts.eps) or EPS):
        for d in draws:
            b = base.with_(kind="perturb", input=base.run_id, perturb=f"noise:{eps!r}:{d}")
            out.append(Pair("perturb", level_name(eps), base, b, f"eps {eps:g}, noise draw {d}"))
    b = base.with_(kind="perturb", input=base.run_id, perturb="float32")
    return out + [Pair("perturb", PRECISION_LEVEL, base, b, "embedding rounded to float32")]


def _torch_plan(factor, dataset_hash, opts, plat, get) -> list:
    name, device = _torch_target(factor, plat, opts)
    st: Stack = get(name)
    base = RunSpec(dataset=dataset_hash, stack=st.name, stack_id=st.identity, kind="torch",
                   input=reference_embedding(dataset_hash, get).run_id, seeds=torch_seeds(0))
    if factor == "torch-seed":
        vals = tuple(opts.seeds) or SEEDS
        _need_two(vals)
        a = base.with_(seeds=torch_seeds(vals[0]))
        return [Pair(factor, "", a, base.with_(seeds=torch_seeds(s)), f"torch seed {vals[0]} vs {s}")
                for s in vals[1:]]
    if factor == "torch-threads":
        cores = len(default_threads())
        counts = [t for t in (tuple(opts.threads) or (2, 4, 8)) if 1 < t <= cores]
        if not counts:
            raise KitError(f"torch-threads needs a thread count from 2 to the {cores} core(s) here")
        return [Pair(factor, "", base, base.with_(threads=t), f"torch 1 vs {t} threads")
                for t in counts]
    if factor == "torch-deterministic":
        return [Pair(factor, "", base, base.with_(deterministic=True),
                     "deterministic algorithms off vs on")]
    return [Pair(factor, "", base, base.with_(device=device), f"cpu vs {device}"),
            Pair(factor, "", base.with_(deterministic=True),
                 base.with_(device=device, deterministic=True), f"cpu vs {device}, deterministic")]


def _need_two(vals):
    if len(vals) < 2:
        raise KitError("a seed factor needs at least two seeds (e.g. --seeds 0-9)")


def availability(plat: Platform | None = None, device: str | None = None,
                 torch_stack: str | None = None) -> list:
    """Every factor with whether it can run here, why not, and whether its stacks are built."""
    plat = plat or detect()
    out = []
    for f, what in ALL_FACTORS.items():
        row = {"factor": f, "description": what, "stacks": [], "available": True,
               "reason": None, "built": True}
        if f == "threads" and len(default_threads()) < 2:
            row.update(available=False, reason="this machine has one core")
        if f in STACK_FACTORS or f in TORCH_FACTORS:
            try:
                row["stacks"] = [s for s in required_stacks([f], plat, opts=PlanOptions(device=device,
                                                                         torch_stack=torch_stack))
                                 if s != HOST]
            except KitError as e:
                row.update(available=False, reason=str(e), built=False)
            for name in row["stacks"]:
                st, why = stack_status(name, plat)
                if st == "unavailable" and row["available"]:
                    row.update(available=False, reason=f"stack {name}: {why}")
                row["built"] = row["built"] and st == "built"
        out.append(row)
    return out


def devices(plat: Platform | None = None) -> dict:
    """torch devices: None where usable here, else the one-line reason (for the CLI and TUI)."""
    plat = plat or detect()
    return {d: plat.device_reason(d) for d in ("cpu", "mps", "cuda")}
