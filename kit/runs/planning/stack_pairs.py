"""Pairs across environments: stacks from the catalogue, and the PyTorch MLP's stacks and
devices. Each function plans one kind of factor of the table (kit.core.factors)."""

from __future__ import annotations

import platform
import re

from ...core.errors import KitError
from ...core.spec import RunSpec, seeds, torch_seeds
from ...envs.catalogue import HOST, catalogue, definitions, reference, torch_stack
from ...envs.containers import bases
from ...envs.kinds import container_name, split_name, stack_kind
from ...envs.platforms import Platform
from .options import SEEDS, Pair, default_threads, need_two_seeds

CONTAINER_FACTORS = ("container", "os")  # pairs of a stack's venv and images, not the catalogue's


def stack_pairs(factor: str, plat: Platform, stack: str = HOST, built: bool = False) -> list:
    """[(stack a, env a, stack b, env b, label)] realising a stack factor on this platform;
    ``stack``: the stack the container factors image (--stack; the reference by default);
    ``built``: only the pairs whose two stacks are built here (`kit run --built`).

    Raises KitError with a one-line reason where the factor cannot run here.
    """
    out = _all_pairs(factor, plat, stack)
    if not built:
        return out
    kept = [p for p in out if not unbuilt_of(p, plat)]
    if not kept:
        raise KitError(
            f"factor {factor!r}: no pair of its stacks is built here ("
            + "; ".join(f"{p[4]}: {', '.join(unbuilt_of(p, plat))} not built" for p in out[:3])
            + ")"
        )
    return kept


def unbuilt_of(pair: tuple, plat: Platform) -> list:
    """The stacks of a stack pair that are not built here."""
    return [
        n
        for n in dict.fromkeys((pair[0], pair[2]))
        if n != HOST and stack_kind(n).status(plat)[0] != "built"
    ]


def _all_pairs(factor: str, plat: Platform, stack: str) -> list:
    if factor in CONTAINER_FACTORS:
        return container_pairs(factor, stack)
    cat = catalogue()
    # (stack a, a's settings, stack b, b's settings, label); settings: ((variable, value), ...)
    out: list[tuple] = [
        (a, (), b, (), f"{a} vs {b}")
        for a, b in cat.get("pairs", {}).get(factor, {}).get(plat.key, [])
    ]
    if factor == "arch":
        for cp in cat.get("codepaths", {}).get(plat.key, {}).values():
            ok = [v for v in cp["values"] if cp.get("needs", {}).get(v) in (None, *plat.cpu_flags)]
            if len(ok) < 2:
                continue
            var, best = cp["variable"], ok[-1]
            out += [
                (
                    cp["stack"],
                    ((var, best),),
                    cp["stack"],
                    ((var, v),),
                    f"{cp['stack']}: {var}={best} vs {v}",
                )
                for v in ok[:-1]
            ]
    if not out:
        raise KitError(f"factor {factor!r} has no stack pairs on {plat.key}")
    return out


def imaged(stack: str) -> str:
    """The catalogue stack the container factors image: ``stack`` (or the one a container
    stack's name holds), the reference where it is the host."""
    parts = split_name(stack)
    name = parts[0] if parts else stack
    if name == HOST:
        return reference()
    d = definitions().get(name)
    if d is None or d.kind != "pipeline":
        raise KitError(
            f"the container factors image a pipeline stack of the catalogue, and "
            f"{name} is none (`kit stacks` lists them)"
        )
    return name


def os_pairs(stack: str) -> tuple:
    """([(base a, base b)] the os factor can run here, [(base, reason)] it cannot): the
    default base against each other one whose glibc runs the interpreter kit copies in (the
    host's, built against this machine's glibc: an older one lacks its symbols)."""
    host = platform.libc_ver()[1] or "0"
    runs, cannot = [], []
    for name, b in bases.BASES.items():
        if name == bases.DEFAULT:
            continue
        if _version(b.glibc) < _version(host):
            cannot.append(
                (
                    name,
                    f"{b.release} ({name}) has glibc {b.glibc}, older than this "
                    f"machine's {host}, which built the interpreter copied into "
                    "every image: it cannot start there",
                )
            )
        else:
            runs.append((bases.DEFAULT, name))
    return runs, cannot


def _version(v: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", v.split("-")[0])[:2])


def container_pairs(factor: str, stack: str) -> list:
    """The container factors' pairs: ``container`` the stack's venv against its image on the
    default base; ``os`` its image on the default base against each other base that runs
    here (the same interpreter, lock and wheels in both: only Debian's packages differ)."""
    name = imaged(stack)
    first = bases.BASES[bases.DEFAULT]
    if factor == "container":
        return [
            (
                name,
                (),
                container_name(name, bases.DEFAULT),
                (),
                f"{name}: venv vs image ({first.name})",
            )
        ]
    runs, cannot = os_pairs(name)
    if not runs:
        raise KitError(
            "factor 'os' has no pair of bases that runs here: "
            + "; ".join(why for _, why in cannot)
        )
    return [
        (
            container_name(name, a),
            (),
            container_name(name, b),
            (),
            f"{name}: {a} (glibc {bases.BASES[a].glibc}) vs {b} (glibc {bases.BASES[b].glibc})",
        )
        for a, b in runs
    ]


def listed_pairs(factor: str) -> set:
    """Every (stack a, env a, stack b, env b) a pair of a stack factor may be, on any platform
    of the catalogue: its stack pairs, and for arch each code path a CPU may run against a less
    capable one (which this CPU supports is the exporting machine's to say)."""
    cat = catalogue()
    if factor in CONTAINER_FACTORS:  # any pipeline stack's venv and images, on any base
        names = [n for n, d in definitions().items() if d.kind == "pipeline"]
        if factor == "container":
            return {(n, (), container_name(n, bases.DEFAULT), ()) for n in names}
        return {
            (container_name(n, bases.DEFAULT), (), container_name(n, b), ())
            for n in names
            for b in bases.BASES
            if b != bases.DEFAULT
        }
    out: set[tuple] = {
        (a, (), b, ()) for pairs in cat.get("pairs", {}).get(factor, {}).values() for a, b in pairs
    }
    if factor == "arch":
        for paths in cat.get("codepaths", {}).values():
            for cp in paths.values():
                vs, var = cp["values"], cp["variable"]
                out |= {
                    (cp["stack"], ((var, hi),), cp["stack"], ((var, lo),))
                    for i, hi in enumerate(vs)
                    for lo in vs[:i]
                }
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
        has = stack_kind(stack).devices()
        if device not in has:
            raise KitError(
                f"device {device} is not available in stack {stack}: its torch "
                f"reports {', '.join(has)} only"
            )
        return device
    reason = plat.device_reason(device)
    if reason:
        raise KitError(f"device {device} is not available here: {reason}")
    return device


def torch_target(factor, plat, opts) -> tuple:
    """(the torch stack, the device compared with the CPU, or "cpu" for the other factors)."""
    name = opts.torch_stack
    if name and not stack_kind(name).devices():  # an unknown name raises here, with the fix
        raise KitError(f"stack {name} has no torch; `kit stacks` lists the ones that do")
    device = accelerator(plat, opts.device, name) if factor == "torch-device" else "cpu"
    return (name or torch_stack(plat, device)), device


def torch_thread_counts(opts) -> list:
    """The thread counts torch-threads compares with 1: those of --threads (default 2, 4, 8)
    that where the runs go offers, this machine's cores or, on a cluster, its smallest
    worker's. Known from the options alone, so none fitting is refused before a stack is
    built, not 16-28 s into building the torch stack."""
    cores = len(default_threads(opts.cores))
    counts = [t for t in (tuple(opts.threads) or (2, 4, 8)) if 1 < t <= cores]
    if not counts:
        if opts.host:
            raise KitError(
                f"torch-threads needs 2 threads or more, and the smallest worker of "
                f"the cluster offers at most {cores} core(s) (runs go to node class "
                f"{opts.host})"
            )
        raise KitError(f"torch-threads needs a thread count from 2 to the {cores} core(s) here")
    return counts


def stack_plan(ctx) -> list:
    """The pairs of a stack factor: the catalogue's stack pairs, same data, seed and threads."""
    threads = (tuple(ctx.opts.threads) or (1,))[0]
    seed = (tuple(ctx.opts.seeds) or (0,))[0]

    def spec(name, env):
        st = ctx.get(name)
        return RunSpec(
            dataset=ctx.dataset,
            stack=st.name,
            stack_id=st.identity,
            threads=threads,
            seeds=seeds(seed),
            env=env,
        )

    return [
        Pair(ctx.factor, "", spec(a, ea), spec(b, eb), label)
        for a, ea, b, eb, label in stack_pairs(ctx.factor, ctx.plat, ctx.stack, ctx.opts.built)
    ]


def torch_plan(ctx) -> list:
    """The pairs of a torch factor, on the reference run's embedding (``ctx.reference``)."""
    factor, opts = ctx.factor, ctx.opts
    name, device = torch_target(factor, ctx.plat, opts)
    st = ctx.get(name)
    base = RunSpec(
        dataset=ctx.dataset,
        stack=st.name,
        stack_id=st.identity,
        kind="torch",
        input=ctx.reference().run_id,
        seeds=torch_seeds(0),
    )
    if factor == "torch-seed":
        vals = tuple(opts.seeds) or SEEDS
        need_two_seeds(vals)
        a = base.with_(seeds=torch_seeds(vals[0]))
        return [
            Pair(factor, "", a, base.with_(seeds=torch_seeds(s)), f"torch seed {vals[0]} vs {s}")
            for s in vals[1:]
        ]
    if factor == "torch-threads":
        return [
            Pair(factor, "", base, base.with_(threads=t), f"torch 1 vs {t} threads")
            for t in torch_thread_counts(opts)
        ]
    if factor == "torch-deterministic":
        return [
            Pair(
                factor,
                "",
                base,
                base.with_(deterministic=True),
                "deterministic algorithms off vs on",
            )
        ]
    return [
        Pair(factor, "", base, base.with_(device=device), f"cpu vs {device}"),
        Pair(
            factor,
            "",
            base.with_(deterministic=True),
            base.with_(device=device, deterministic=True),
            f"cpu vs {device}, deterministic",
        ),
    ]
