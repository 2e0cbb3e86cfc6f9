"""The container kind: a catalogue stack's lock installed in an image on a Debian base.

``NAME@container`` is stack NAME on the default base (Debian bookworm), ``NAME@trixie`` on
another one (kit.envs.containers.bases). It is built from the same lock as NAME's venv, after
that venv (uv's cache then holds every wheel, and the build needs no network); it runs the
worker inside its image, named by the image id (kit.envs.containers.command).
"""

from __future__ import annotations

import platform

from ...core import scratch
from ...core.errors import Failed, KitError
from ..containers import bases, images, loaded, pythons, routes
from ..containers.command import InImage
from ..containers.routes import InApptainer, InCharliecloud
from ..containers.runtime import Runtime, missing, runtime
from ..launch import container_mounts
from ..platforms import Platform, detect
from ..stacks import Stack
from .base import BuildableStack
from .catalogue import CatalogueStack

CONTAINER = "container"  # the suffix of a stack on the default base


def split_name(name: str) -> tuple | None:
    """(stack, base) of a container stack's name, None for any other name; "NAME@bookworm"
    is the default base's, whose one name is NAME@container."""
    if "@" not in name:
        return None
    stack, tail = name.rsplit("@", 1)
    return stack, bases.DEFAULT if tail == CONTAINER else tail


def container_name(stack: str, base: str) -> str:
    return f"{stack}@{CONTAINER}" if base == bases.DEFAULT else f"{stack}@{base}"


def _mounts() -> list:
    """The folders a worker in a container is given (kit.envs.launch), and where its runs'
    folders are made: an HPC image needs a mount point for each."""
    return [p for p, _ in container_mounts()] + [scratch.root()]


class ContainerStack(BuildableStack):
    """A catalogue stack's image on a Debian base: built with the runtime found here."""

    kind = "container"
    buildable = True

    def __init__(self, name: str, inner: CatalogueStack, base: str):
        super().__init__(name)
        self.inner = inner
        self.base = base

    # -- status ---------------------------------------------------------------------------
    def _runtime(self) -> Runtime:
        return runtime()

    def _record(self) -> dict | None:
        """The build record of the current lock, else None."""
        rec = images.record(self.inner.name, self.base)
        try:
            current = self.inner.d.lock_sha256()
        except KitError:
            return None
        return rec if rec is not None and rec.get("lock_sha256") == current else None

    def unavailable_reason(self, plat: Platform) -> str | None:
        """Why it cannot exist here, in one line, found without starting anything (None: it can;
        whether podman starts a container is probed when one is built or run)."""
        why = self.inner.unavailable_reason(plat, check_python=False) or routes.unavailable(
            routes.chosen()
        )
        if why:
            return why
        if bases.record(self.base) is None:
            return bases.unavailable(self.base)
        return None

    def status(self, plat):
        why = self.unavailable_reason(plat)
        if why:
            return "unavailable", why
        rec = self._record()
        if rec is None:
            return "not built", None
        route = routes.chosen()
        if route != "podman":  # an HPC route runs the image as it converted it
            if routes.made(route, rec["id"]) is None:
                return "not built", (
                    f"its image is not made for {route} yet: `kit stacks build "
                    f"{self.inner.name} --container` makes it"
                )
            return "built", None
        try:
            there = images.present(self._runtime(), rec)
        except KitError as e:  # podman does not start a container here, or the probe failed
            return "unavailable", str(e)
        if not there:
            return "broken", (
                f"its image {rec['id'][7:19]} is no longer in podman's store; "
                f"`kit stacks build {self.inner.name} --container` builds it again"
            )
        return "built", None

    # -- what it is -----------------------------------------------------------------------
    def uses(self):
        return self.inner.uses()

    def devices(self):
        return ["cpu"] if self.inner.devices() else []

    def built(self, plat: Platform | None = None) -> Stack | None:
        rec = self._record()
        if rec is None:
            return None
        command = self._command(rec)
        if command is None:
            return None
        inner = self.inner.built(plat)
        attrs = dict(inner.attributes) if inner is not None else {**self.inner.d.versions}
        attrs.update(
            image=rec["id"],
            base=self.base,
            release=rec.get("release"),
            glibc=rec.get("glibc"),
            machine=platform.machine(),
            base_id=rec.get("base_id"),
            diff_ids=list(rec.get("diff_ids") or []),
        )
        return Stack(self.name, command, rec["id"], attrs)

    @staticmethod
    def _command(rec: dict):
        """How this machine runs the image ``rec`` names (kit.envs.containers.routes), or None
        when it cannot yet (podman missing or without the image; no HPC image made)."""
        route = routes.chosen()
        if route == "charliecloud":
            folder = routes.made(route, rec["id"])
            return folder and InCharliecloud(str(folder), rec["id"], images.PYTHON)
        if route == "apptainer":
            sif = routes.made(route, rec["id"])
            return sif and InApptainer(str(sif), rec["id"], images.PYTHON)
        if missing():
            return None
        rt = runtime()
        return InImage(rt, rec["id"], images.PYTHON) if images.present(rt, rec) else None

    def runnable(self):
        st = self.built()
        if st is None:
            why = self.unavailable_reason(detect())
            if why:
                raise KitError(f"stack {self.name!r} cannot run here: {why}")
            raise KitError(
                f"stack {self.name!r} is not built: run `kit stacks build "
                f"{self.inner.name} --container"
                f"{'' if self.base == bases.DEFAULT else ' --base ' + self.base}`"
            )
        return st

    def row(self, plat):
        row = self.inner.row(plat)
        st, reason = self.status(plat)
        rec = images.record(self.inner.name, self.base) or {}
        return {
            **row,
            "name": self.name,
            "kind": "container",
            "status": st,
            "reason": reason,
            "reference": False,
            "venv": None,
            "image": {
                "id": rec.get("id"),
                "size": rec.get("size"),
                "base": self.base,
                "base_id": rec.get("base_id"),
                "release": rec.get("release"),
                "glibc": rec.get("glibc"),
                "diff_ids": rec.get("diff_ids") or [],
                "tag": images.tag(self.inner.name, self.base),
                "python_fetched": rec.get("python_fetched"),
            },
        }

    def expected_blas(self, plat):
        return self.inner.expected_blas(plat)

    def download_bytes(self, plat: Platform) -> int | None:
        """What building it downloads: its venv's wheels (the image installs them from uv's
        cache); Debian's packages for a base that is not bootstrapped yet are not counted."""
        return self.inner.download_bytes(plat)

    def build_record(self) -> dict | None:
        return self.inner.build_record()

    def lock(self, upgrade: bool = False, python: str | None = None) -> None:
        raise KitError(
            f"{self.name} is built from {self.inner.name}'s lock: kit stacks lock {self.inner.name}"
        )

    # -- build ----------------------------------------------------------------------------
    def build(self, plat=None, log=lambda msg: None):
        """The stack's venv (its lock's wheels then in uv's cache), then its image; False when
        the image of the current lock is built already."""
        plat = plat or detect()
        why = self.unavailable_reason(plat)
        if why:
            raise Failed(f"stack {self.name} cannot be built here: {why}", reason=why)
        self.inner.build(plat, log)
        if self.built(plat) is not None:
            return False
        rec = self._record()
        if rec is None or not images.present(self._runtime(), rec):
            rec = self.make(log)
        route = routes.chosen()
        if route != "podman":  # the image podman built, made runnable by the HPC route
            routes.make(route, rec["id"], images.tag(self.inner.name, self.base), _mounts(), log)
        return True

    def make(
        self,
        log=lambda msg: None,
        again: bool = False,
        rt: Runtime | None = None,
        python: str | None = None,
        pin: pythons.Pin | None = None,
    ) -> dict:
        """Build the image now with ``rt`` (the runtime found here by default) and the
        interpreter ``python`` (the venv's by default) copied in, or, where it cannot be
        (a Mac, another architecture) or ``pin`` names one, a fetched CPython of its version;
        its record (``again``: images.build's)."""
        rt = rt or self._runtime()
        python = python or (self.inner.build_record() or {}).get("interpreter")
        if not python:
            raise Failed(f"stack {self.name}: its venv {self.inner.name} is not built")
        if pin is None:
            arch = pythons.image_arch(rt)
            why = pythons.not_copyable(python, arch)
            if why:
                version = pythons.version_of(python)
                log(f"{self.name}: {why}: the image gets CPython {version} for {arch}, fetched")
                pin = pythons.pin(version, arch)
        d = self.inner.d
        return images.build(
            rt, d.name, d.lock_dir(), d.lock_sha256(), python, self.base, log, again, pin
        )

    def verify(self, log=lambda msg: None) -> dict:
        """Rebuild the image from the same inputs, nothing cached (its base bootstrapped again
        from the mirror too), and compare: {"same", "old", "new", "difference"}."""
        old = self._record()
        if old is None or not images.present(self._runtime(), old):
            raise KitError(
                f"stack {self.name} is not built: nothing to verify (`kit stacks "
                f"build {self.inner.name} --container` first)"
            )
        log(f"{self.name}: building it again from its recipe in an empty store")
        with images.separate_store(self._runtime()) as rt:  # the recorded inputs, again
            pin = pythons.Pin.from_dict(old.get("python_fetched"))
            new = self.make(log, True, rt, old.get("interpreter"), pin)
        same = new["id"] == old["id"]
        return {
            "same": same,
            "old": old,
            "new": new,
            "difference": None if same else images.layer_difference(old, new),
        }


class LoadedStack(ContainerStack):
    """An image a bundle carried, loaded by ``kit compare --trust-image`` (never built here):
    ``NAME@bundle-ID12`` (kit.envs.containers.loaded)."""

    kind = "container"
    buildable = False

    def __init__(self, name: str, inner: CatalogueStack):
        super().__init__(name, inner, str((loaded.record(name) or {}).get("base", "?")))

    def _record(self) -> dict | None:
        return loaded.record(self.name)

    def runnable(self):
        st = self.built()
        if st is None:
            raise KitError(
                f"stack {self.name!r} cannot run here: "
                f"{self.unavailable_reason(detect()) or self.status(detect())[1]}"
            )
        return st

    def unavailable_reason(self, plat: Platform) -> str | None:
        why = missing()
        if why:
            return why
        if self._record() is None:
            return (
                "an image from a bundle, loaded only by `kit compare BUNDLE --trust-image`; "
                "none is loaded here under this name"
            )
        return None

    def status(self, plat):
        st, why = super().status(plat)
        if st == "broken":  # removed from podman's store: loading it again is the way back
            why = (
                "its image is no longer in podman's store; `kit compare BUNDLE --trust-image`"
                " loads it again"
            )
        return st, why

    def row(self, plat):
        row = super().row(plat)
        rec = self._record() or {}
        row["image"].update(
            id=rec.get("id"),
            size=rec.get("size"),
            base=rec.get("base"),
            base_id=rec.get("base_id"),
            release=rec.get("release"),
            glibc=rec.get("glibc"),
            diff_ids=rec.get("diff_ids") or [],
            tag=loaded.tag(self.inner.name, rec["id"]) if rec else None,
            bundle=rec.get("bundle_sha256"),
        )
        return row

    def build(self, plat=None, log=lambda msg: None):
        raise KitError(
            f"{self.name} is an image a bundle carried: kit never builds it "
            f"(`kit stacks build {self.inner.name} --container` builds its own)"
        )

    def verify(self, log=lambda msg: None) -> dict:
        raise KitError(
            f"{self.name} is an image a bundle carried; `kit compare BUNDLE` rebuilds "
            "it from the bundle's recipe and compares the ids"
        )
