"""The kinds of stack, one module each (as asv's environment plugins), and ``stack_kind``.

``stack_kind(name)`` picks the kind once (as pooch's ``choose_downloader`` picks a downloader):
``host`` (kit's own interpreter), ``catalogue`` (stacks/stacks.toml, built with uv) or
``external`` (an interpreter a user registered); a release scan's probe stack is a catalogue
stack whose lock lives under KIT_HOME (kit.envs.probes), and so is a pipeline's derived stack
(kit.envs.derived: a catalogue stack plus its REQUIRES). Every caller then asks the object the same
questions (kit.envs.kinds.base): its status here, what it can run, which torch devices it has,
its runnable form, its row in `kit stacks`, and whether and how it is built.
"""

from __future__ import annotations

from ...core.errors import KitError
from ...core.paths import subdir
from ...worker.names import unknown
from ..catalogue import HOST, definitions
from ..containers import bases
from ..containers.bases import BASES, DEFAULT, is_digest
from ..containers.images import recorded
from ..containers.loaded import is_loaded
from ..containers.loaded import recorded as loaded
from ..containers.runtime import missing
from ..derived import definition as derived_definition
from ..derived import locked as locked_derived
from ..external import registry
from ..platforms import Platform, detect
from ..probes import definition as probe_definition
from ..probes import locked as locked_probes
from .base import BuildableStack as BuildableStack  # the front ends narrow a kind to it
from .base import StackKind
from .catalogue import CatalogueStack
from .container import ContainerStack, LoadedStack, container_name, split_name
from .external import ExternalStack
from .host import HostStack


class UnknownStack(KitError):
    """A name that is no stack kit knows: a typed name's mistake (the command line says it as a
    usage error, kit.cli.common.known_stack), not a broken catalogue."""


def stack_kind(name: str) -> StackKind:
    """The kind of the stack called ``name``; UnknownStack, naming the fix, when there is none."""
    if name == HOST:
        return HostStack(name)
    defs = definitions()
    if name in defs:
        return CatalogueStack(defs[name])
    parts = split_name(name)
    if parts is not None:
        return _container(name, *parts)
    # a release scan's probe stack, under KIT_HOME (kit.envs.probes), before an external one:
    # its prefix is kept for probes, so one added before that rule cannot shadow a probe
    probe = probe_definition(name)
    if probe is not None:
        return CatalogueStack(probe)
    derived = derived_definition(name)  # its own prefix too (req-): no external one shadows it
    if derived is not None:
        return CatalogueStack(derived)
    ext = registry()
    if name in ext:
        return ExternalStack(name, ext[name])
    raise UnknownStack(
        unknown("unknown stack", name, [HOST, *names()], "; `kit stacks` lists them")
    )


def _container(name: str, stack: str, base: str) -> ContainerStack:
    """A container stack's kind: a catalogue stack (never a probe, derived or external one,
    whose interpreter kit does not copy into an image) on a known base."""
    defs = definitions()
    if stack not in defs:
        raise UnknownStack(
            unknown(
                "unknown stack",
                stack,
                list(defs),
                after=f" (in {name}: a container stack is a catalogue stack's image)",
            )
        )
    if is_loaded(base):  # a bundle's image, loaded by kit compare --trust-image
        return LoadedStack(name, CatalogueStack(defs[stack]))
    if base not in BASES and not is_digest(base):
        raise UnknownStack(
            unknown(
                "unknown base",
                base,
                ["container", *(b for b in BASES if b != DEFAULT)],
                after=f" (in {name}: NAME@container, or NAME@BASE)",
            )
        )
    if name != container_name(stack, base):
        raise UnknownStack(
            f"unknown stack {name!r}: the default base's image is called "
            f"{container_name(stack, base)}"
        )
    if defs[stack].kind != "pipeline":
        raise UnknownStack(
            f"unknown stack {name!r}: {stack} is a torch stack, and kit builds "
            "images of pipeline stacks only"
        )
    return ContainerStack(name, CatalogueStack(defs[stack]), base)


def _image_rows(plat: Platform) -> list:
    """The rows of the stack images built here (each NAME@container or NAME@BASE with a
    record), the images that can be built from a venv built here (not built), then those loaded
    from bundles (NAME@bundle-ID12), after the venvs; a record whose stack left the catalogue is
    listed as broken."""
    rows = []
    for name in [container_name(*sb) for sb in recorded()] + _offered(plat) + loaded():
        parts = split_name(name)  # each is a container stack's name
        base = parts[1] if parts else None
        try:
            rows.append(stack_kind(name).row(plat))
        except KitError as e:
            rows.append(
                {
                    "name": name,
                    "lock": None,
                    "kind": "container",
                    "uses": [],
                    "devices": [],
                    "platforms": [],
                    "reference": False,
                    "attributes": {"python": "-", "blas": None, "arch": "native"},
                    "status": "broken",
                    "reason": str(e),
                    "venv": None,
                    "image": {"id": None, "base": base},
                }
            )
    return rows


def _offered(plat: Platform) -> list:
    """NAME@container of each pipeline stack whose venv is built here and whose image is not
    (the image is built from the venv's wheels), where a container can be built at all: what
    `kit stacks` and the TUI's Setup offer to build."""
    if missing() or (bases.record(bases.DEFAULT) is None and bases.unavailable(bases.DEFAULT)):
        return []
    have = {stack for stack, base in recorded() if base == bases.DEFAULT}
    out = []
    for name, d in definitions().items():
        if (
            d.kind == "pipeline"
            and name not in have
            and plat.key in d.platforms
            and CatalogueStack(d).status(plat)[0] == "built"
        ):
            out.append(container_name(name, bases.DEFAULT))
    return out


def names() -> list:
    """Every listed stack: the catalogue's, then the external ones."""
    return list(definitions()) + list(registry())


def listing(plat: Platform | None = None, probes: bool = False) -> list:
    """Every stack with its attributes and status: what `kit stacks --json` prints; with
    ``probes``, also the release scans' probe stacks under KIT_HOME, each marked "probe" with
    the stack it changes, the release it pins and its folder, and the pipelines' derived
    stacks, each marked "derived" with its base stack, the packages it adds and its folder."""
    plat = plat or detect()
    rows = [stack_kind(n).row(plat) for n in names()]
    rows += _image_rows(plat)
    for n in locked_probes() if probes else []:
        try:
            probe = probe_definition(n)
            row = stack_kind(n).row(plat)
        except KitError as e:  # one damaged probe is listed as such; the others as they are
            rows.append(
                {
                    "name": n,
                    "status": "broken",
                    "reason": str(e),
                    "probe": {
                        "base": None,
                        "package": None,
                        "version": None,
                        "folder": str(subdir("probes") / n),
                    },
                }
            )
            continue
        if probe is None or row is None:  # removed since it was listed, or not a listed stack
            continue
        rows.append(
            {
                **row,
                "probe": {
                    "base": probe.base,
                    "package": probe.package,
                    "version": probe.version,
                    "folder": str(probe.lock_dir()),
                },
            }
        )
    for n in locked_derived() if probes else []:
        try:
            derived = derived_definition(n)
            row = stack_kind(n).row(plat)
        except KitError as e:  # as a damaged probe: listed as such
            rows.append(
                {
                    "name": n,
                    "status": "broken",
                    "reason": str(e),
                    "derived": {"base": None, "requires": [], "folder": str(subdir("derived") / n)},
                }
            )
            continue
        if derived is None or row is None:  # removed since it was listed, or not a listed stack
            continue
        rows.append(
            {
                **row,
                "derived": {
                    "base": derived.base,
                    "requires": list(derived.requires),
                    "folder": str(derived.lock_dir()),
                },
            }
        )
    return rows
