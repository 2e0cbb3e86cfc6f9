"""`kit stacks`: list, build, check, lock, and add or remove interpreters of your own."""

from __future__ import annotations

import argparse

from ..core import factors
from ..core.errors import Refused
from ..envs.catalogue import definitions
from ..envs.platforms import detect
from .common import Parser, known_stack, path, print_json


def add(sub) -> None:
    p = sub.add_parser("stacks", help="pinned environments: list, build, doctor, lock")
    p.add_argument("--json", action="store_true")
    ssub = p.add_subparsers(dest="stacks_cmd", metavar="ACTION", parser_class=Parser)
    q = ssub.add_parser(
        "build", help="build stacks from their lock files (default: all available here)"
    )
    q.add_argument("names", nargs="*")
    q.add_argument(
        "--estimate",
        action="store_true",
        help="build nothing: say which of them are not built yet, their download size "
        "and about how long building them takes here (at a measured rate)",
    )
    _container_options(q)
    q = ssub.add_parser(
        "verify",
        help="rebuild a stack's image from the same inputs, nothing "
        "cached, and say whether its image id is the same (docs/containers.md)",
    )
    q.add_argument("names", nargs="+")
    _container_options(q)
    q = ssub.add_parser("doctor", help="import each built stack and record what it really has")
    q.add_argument("names", nargs="*")
    q.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    q = ssub.add_parser(
        "factors",
        help="the cross-stack factors with a pair of stacks built "
        "here (--json: every one, each pair's unbuilt stacks)",
    )
    q.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    q = ssub.add_parser(
        "add",
        help="register an existing interpreter (a cluster's or GPU "
        "image's PyTorch, a conda env) as a stack",
    )
    q.add_argument("name")
    q.add_argument("python", type=path, help="path of its python executable")
    q = ssub.add_parser("remove", help="forget an external stack (its interpreter is untouched)")
    q.add_argument("name")
    q = ssub.add_parser("lock", help="regenerate uv.lock files from the stacks' pyproject.toml")
    q.add_argument("names", nargs="*")
    q.add_argument("--upgrade", action="store_true", help="allow newer versions where not pinned")
    p.set_defaults(func=_cmd_stacks)


def _container_options(q) -> None:
    from ..envs.containers.bases import BASES, DEFAULT

    q.add_argument(
        "--container",
        action="store_true",
        help="the stack's image (NAME@container): its lock installed on a Debian base, "
        "built offline with podman (docs/containers.md)",
    )
    q.add_argument(
        "--base",
        default=None,
        metavar="BASE",
        help=f"the image's base: a Debian release kit makes ({', '.join(BASES)}; "
        f"default {DEFAULT}; NAME@BASE names the stack), or an image named by its "
        "digest, REF@sha256:HEX, pulled where a registry is reachable "
        "(NAME@digest-HEX12)",
    )


def _container_names(args, names: list) -> list:
    """The container stacks NAME --container [--base B] names (NAME@container, NAME@B)."""
    from ..envs.containers.bases import BASES, DEFAULT, digest_name
    from ..envs.kinds import container_name, split_name

    if getattr(args, "base", None) and not args.container:
        args.parser.error("argument --base: it chooses a container's base; add --container")
    if not getattr(args, "container", False):
        return names
    base = args.base or DEFAULT
    if base not in BASES:  # REF@sha256:HEX, else a usage error naming both forms
        try:
            base = digest_name(base)
        except Refused as e:
            args.parser.error(f"argument --base: {e.reason}")
    out = []
    for n in names:
        if split_name(n) is not None:
            args.parser.error(
                f"argument --container: {n} names a container stack already; "
                "name the catalogue stack (NAME --container) or drop --container"
            )
        out.append(container_name(n, base))
    return out


def _cmd_stacks(args) -> int:
    from rich.console import Console

    from ..app.facade import Kit
    from ..envs.kinds import BuildableStack, CatalogueStack, stack_kind
    from ..views.tables import stacks_text

    plat = detect()
    err = Console(stderr=True)
    if args.stacks_cmd in ("add", "remove"):
        return _stacks_external(args, err)
    names = getattr(args, "names", None) or []
    if args.stacks_cmd in ("build", "verify"):
        if args.stacks_cmd == "verify" and not args.container and not all("@" in n for n in names):
            args.parser.error(
                "kit stacks verify checks a stack's image: add --container (or name NAME@container)"
            )
        if args.stacks_cmd == "build" and args.container and not names:
            args.parser.error("argument --container: name the stacks whose images to build")
        names = _container_names(args, names)
        if args.stacks_cmd == "build" and args.container and args.base and "@sha256:" in args.base:
            from ..envs.containers.bases import pull
            from ..envs.containers.runtime import runtime

            with err.status(f"pulling {args.base}") as status:
                pull(runtime(), args.base, status.update)  # the one step that needs a registry
    known_stack(args, None, *names)  # an unknown name is refused here, with the fix
    if args.stacks_cmd == "verify":
        return _verify(names, err)
    kinds = {n: stack_kind(n) for n in names}
    if args.stacks_cmd in ("build", "lock"):
        for kind in kinds.values():
            if not kind.buildable:
                kind.build(plat)  # says why it is never built (an external one)
    if args.stacks_cmd == "build":
        # every venv available here; images are built by name (NAME --container), never
        # all at once (each is minutes and a Debian base)
        avail = [
            s["name"]
            for s in Kit().stacks(plat)
            if s["status"] != "unavailable"
            and s.get("kind") != "container"
            and stack_kind(s["name"]).buildable
        ]
        if args.estimate:
            from ..envs.build_time import estimate, said

            todo = [stack_kind(n) for n in names or avail]
            todo = [
                k
                for k in todo
                if isinstance(k, BuildableStack) and k.buildable and k.built(plat) is None
            ]

            from ..views.fit import para

            print("\n".join(para(line, "  ", "") for line in said(estimate(todo, plat))))
            return 0
        _build_stacks(names or avail, plat, err)
        return 0
    if args.stacks_cmd == "lock":
        defs = definitions()
        for n in names:
            kind = kinds[n]  # buildable: any other kind was refused above
            if n not in defs and isinstance(kind, BuildableStack):
                kind.lock()  # a container's lock is its stack's (it says so); probes lock themselves
        for lk in dict.fromkeys(defs[n].lock for n in (names or defs)):
            first = next(n for n, d in defs.items() if d.lock == lk)  # stacks may share a lock
            with err.status(f"locking {lk}"):
                CatalogueStack(defs[first]).lock(upgrade=args.upgrade)
            err.print(f"locked stacks/{lk}/uv.lock")
        return 0
    if args.stacks_cmd == "factors":
        from ..runs.planning.availability import availability

        rows = [r for r in availability(plat) if r["factor"] in factors.names(factors.STACKS)]
        if args.json:
            print_json(rows)
        else:
            # a factor with one pair of built stacks runs (`kit run --built` runs those pairs)
            print(
                "\n".join(
                    r["factor"]
                    for r in rows
                    if r["available"] and any(not p["not_built"] for p in r.get("pairs", ()))
                )
            )
        return 0
    if args.stacks_cmd == "doctor":
        from ..envs.probe import stack_doctor

        report = stack_doctor(names, plat)
        print_json(report) if args.json else print(stacks_text(report, doctor=True))
        return 0
    rows = Kit().stacks(plat, probes=True)
    if args.json:
        print_json(rows)
    else:
        from ..views.probes import derived_text, probes_text

        # the catalogue's and external ones; the ones under KIT_HOME in sections of their own
        kept = [r for r in rows if not (r.get("probe") or r.get("derived"))]
        print(f"platform {plat.key}\n" + stacks_text(kept) + probes_text(rows) + derived_text(rows))
    return 0


def _verify(names, err) -> int:
    """Rebuild each image, nothing cached; exit 1 when an id differs (the line says which
    layer)."""
    from ..envs.kinds import stack_kind

    differ = 0
    for n in names:
        with err.status(f"verifying {n}") as status:
            got = stack_kind(n).verify(log=lambda msg: status.update(msg))
        old, new = got["old"], got["new"]
        if got["same"]:
            print(
                f"{n}: the same image id from its recipe again: {old['id']} "
                f"({len(new['diff_ids'])} layers, base {old['base']} {old['base_id'][7:19]})"
            )
        else:
            differ += 1
            print(
                f"{n}: a different image id from the same recipe: {old['id']} was built, "
                f"{new['id']} now; {got['difference']}"
            )
    return 1 if differ else 0


def _build_stacks(names, plat, err) -> None:
    """Build each named stack that is not built yet, one status line per step."""
    from ..envs.kinds import stack_kind

    for n in names:
        with err.status(f"stack {n}") as status:
            if stack_kind(n).build(plat, log=lambda msg: status.update(msg)):
                err.print(f"built stack {n}")


def _stacks_external(args, err) -> int:
    from ..envs import external

    if args.stacks_cmd == "remove":
        external.remove(args.name)
        err.print(f"removed external stack {args.name} (its interpreter is untouched)")
        return 0
    with err.status(f"probing {args.python}"):
        e = external.add(args.name, args.python)
    f = e["facts"]
    pk = ", ".join(f"{k} {v}" for k, v in f["packages"].items() if k != "torch")
    torch = f["torch"]
    print(
        f"added external stack {args.name}: Python {f['python']} ({f['machine']}), {pk}"
        + (f", torch {torch['version']} (devices: {', '.join(f['devices'])})" if torch else "")
    )
    uses = external.uses(f)
    if "pipeline" in uses:
        print(f"  pipeline factors: kit run --factor seed --stack {args.name}")
    if "torch" in uses:
        print(f"  torch factors:    kit run --factor torch-seed --torch-stack {args.name}")
    return 0
