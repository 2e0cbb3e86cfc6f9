"""The HPC routes into a stack image: Charliecloud and Apptainer, where podman is not the way.

Which route runs a container stack's worker is chosen per machine (a cluster's node decides for
itself): ``KIT_CONTAINER_RUNTIME`` names one (podman, charliecloud, apptainer); otherwise podman
where it is installed, else Charliecloud's ``ch-run``, else Apptainer. Both HPC routes run the
very image podman built (the same image id names the run):

- **Charliecloud** runs a directory image made once by ``ch-convert -i podman -o dir`` under
  ``$KIT_HOME/containers/charliecloud/ID`` (a shared KIT_HOME gives it to every node).
  ``ch-run`` shares the host's network and binds read-write, so kit starts it inside a user,
  mount and network namespace of its own (``unshare``): no network, the read-only folders bound
  read-only there, a private /tmp, and the worker started by ``setpriv`` with no capabilities
  and no new privileges.
- **Apptainer** runs a SIF built from the image's OCI archive (``apptainer build X.sif
  oci-archive://...``) with ``--containall --cleanenv --no-home --no-privs --net --network
  none``, each folder bound at its own path, read-only where it must be. Apptainer cannot be
  installed on this project's machines: its command lines are built and tested as text only.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import Failed, KitError, one_line
from ...core.paths import subdir
from ...core.small_files import read_small
from ...core.spools import discard
from .inside import passed
from .runtime import last_line, missing, runtime

ROUTES = ("podman", "charliecloud", "apptainer")
_MARK = ".kit-image"  # in a converted image: the id it was made from
CONVERT_SECONDS = 1800
# what a worker's capabilities become under Charliecloud (setpriv is util-linux's, in every
# Debian base: Essential)
_SETPRIV = (
    "/usr/bin/setpriv",
    "--no-new-privs",
    "--inh-caps=-all",
    "--ambient-caps=-all",
    "--bounding-set=-all",
)


def chosen() -> str:
    """The route this machine runs container workers by (KIT_CONTAINER_RUNTIME, else the first
    installed of podman, ch-run, apptainer; podman when none is, whose absence is then said)."""
    named = os.environ.get("KIT_CONTAINER_RUNTIME", "").strip().lower()
    if named:
        if named not in ROUTES:
            raise KitError(f"KIT_CONTAINER_RUNTIME={named!r} is not one of {', '.join(ROUTES)}")
        return named
    if shutil.which("podman"):
        return "podman"
    if shutil.which("ch-run"):
        return "charliecloud"
    if shutil.which("apptainer"):
        return "apptainer"
    return "podman"


def unavailable(route: str) -> str | None:
    """Why ``route`` cannot run a worker here, in one line (None: it can)."""
    if route == "podman":
        return missing()
    if route == "charliecloud":
        for tool, pkg in (("ch-run", "charliecloud"), ("unshare", "util-linux")):
            if shutil.which(tool) is None:
                return (
                    f"KIT_CONTAINER_RUNTIME=charliecloud: {tool} is not installed (Debian: "
                    f"apt-get install {pkg})"
                )
        return None
    if shutil.which("apptainer") is None:
        return (
            "KIT_CONTAINER_RUNTIME=apptainer: apptainer is not installed (on an HPC site: "
            "module load apptainer; it cannot be installed on this project's machines)"
        )
    return None


def _folder(route: str) -> Path:
    return subdir("containers") / route


def made(route: str, image: str) -> Path | None:
    """The image ``image`` (an id) as ``route`` runs it, if it has been made here."""
    if route == "charliecloud":
        d = _folder(route) / image[7:]
        mark = read_small(d / _MARK)
        return d if mark is not None and mark.decode(errors="replace").strip() == image else None
    if route == "apptainer":
        sif = _folder(route) / f"{image[7:]}.sif"
        return sif if sif.is_file() and not sif.is_symlink() else None
    return None


def make(route: str, image: str, ref: str, mounts: list, log=lambda msg: None) -> Path:
    """Make image ``image`` (podman's ``ref``) runnable by ``route`` and return it: a directory
    image (Charliecloud, with a mount point for every folder in ``mounts``) or a SIF (Apptainer,
    from the image's OCI archive); whole or not at all."""
    done = made(route, image)
    if done is not None:
        return done
    why = unavailable(route)
    if why:
        raise Failed(why)
    folder = _folder(route)
    folder.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=subdir("tmp"), prefix=f"ctr-{os.getpid()}-convert-"))
    try:
        if route == "charliecloud":
            log(f"converting image {image[7:19]} for Charliecloud (ch-convert, minutes)")
            out = work / "image"

            # ch-convert asks podman for the image: with the options podman needs here
            _call(
                ["ch-convert", "-i", "podman", "-o", "dir", ref, str(out)],
                "ch-convert",
                runtime().env(),
            )
            for m in mounts:  # ch-run binds onto a folder the image has (it cannot make one)
                (out / str(m).lstrip("/")).mkdir(parents=True, exist_ok=True)
            (out / _MARK).write_text(image + "\n")
            dest = folder / image[7:]
            discard(dest)  # a half-made one of a killed conversion has no mark: made anew
            out.rename(dest)
            return dest
        from . import archives

        log(f"building a SIF of image {image[7:19]} for Apptainer")
        archive = archives.save(runtime(), image, work / "image.tar")
        sif = work / "image.sif"
        _call(["apptainer", "build", str(sif), f"oci-archive://{archive}"], "apptainer build")
        dest = folder / f"{image[7:]}.sif"
        sif.rename(dest)
        return dest
    finally:
        discard(work)


def _call(argv: list, what: str, env: dict | None = None) -> None:
    env = dict(env or os.environ, USER=os.environ.get("USER") or _user())
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, env=env, timeout=CONVERT_SECONDS
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Failed(f"{what}: {one_line(e)}") from None
    if proc.returncode != 0:
        raise Failed(f"{what} failed: {last_line(proc.stderr or proc.stdout)}")


def _user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


@dataclass(frozen=True)
class InCharliecloud:
    """A worker's interpreter in a directory image run by ``ch-run`` (see the module's text)."""

    folder: str  # the directory image
    image: str  # the image id it was made from
    python: str  # the interpreter inside
    route = "charliecloud"

    def argv(self, name: str, env: dict, cwd, mounts, stdin: bool) -> list:
        ro = [str(p) for p, writable in mounts if not writable]
        # the read-only folders bound read-only in a mount namespace of kit's, then ch-run in it
        script = "".join(
            f"mount --bind {shlex.quote(p)} {shlex.quote(p)} && mount -o "
            f"remount,bind,ro {shlex.quote(p)} && "
            for p in ro
        )
        ch = [
            "ch-run",
            "--private-tmp",
            "--no-passwd",
            "--unset-env=*",
            *(f"--set-env={k}={v}" for k, v in passed(env).items()),
            *(f"--bind={p}" for p, _ in mounts),
        ]
        if cwd is not None:
            ch.append(f"--cd={cwd}")
        ch += [self.folder, "--", *_SETPRIV, self.python]
        script += "exec " + " ".join(shlex.quote(a) for a in ch) + ' "$@"'
        return [
            "unshare",
            "--user",
            "--map-root-user",
            "--mount",
            "--net",
            "sh",
            "-c",
            script,
            "kit-worker",
        ]

    def removal(self, name: str) -> list | None:
        return None  # no daemon holds it: its processes end with the tether's group

    def env(self) -> dict:
        return {"USER": os.environ.get("USER") or _user()}


@dataclass(frozen=True)
class InApptainer:
    """A worker's interpreter in a SIF run by ``apptainer exec`` (see the module's text)."""

    sif: str
    image: str
    python: str
    route = "apptainer"

    def argv(self, name: str, env: dict, cwd, mounts, stdin: bool) -> list:
        out = [
            "apptainer",
            "exec",
            "--containall",
            "--cleanenv",
            "--no-home",
            "--no-privs",
            "--net",
            "--network",
            "none",
        ]
        for p, writable in mounts:
            out += ["--bind", f"{p}:{p}:{'rw' if writable else 'ro'}"]
        for k, v in passed(env).items():
            out += ["--env", f"{k}={v}"]
        if cwd is not None:
            out += ["--pwd", str(cwd)]
        return out + [self.sif, self.python]

    def removal(self, name: str) -> list | None:
        return None

    def env(self) -> dict:
        return {}
