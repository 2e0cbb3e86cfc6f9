"""A lab's pipeline file kept by the sha256 of its bytes: the copy every worker imports, verified."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Annotated

import msgspec

from ..core.atomic import write_bytes
from ..core.documents import decode
from ..core.errors import KitError, one_line
from ..core.home_files import PIPELINE
from ..core.paths import subdir
from ..core.small_files import NotKits, read_home
from ..worker.contract import ContractError, check_kinds, check_seeds
from .requires import check_requires

MAX_FILE_BYTES = 4 * 1024**2  # a pipeline file is code: its data are read by path
_checked: dict = {}  # path -> (size, mtime) last verified: a file is re-hashed once per change


def add_pipeline(path) -> dict:
    """Keep the file at ``path`` under its hash (an edited file is another pipeline) and read
    what it declares, without importing it here (its imports are its stack's, not kit's):
    {"sha256", "name" (its file name), "seeds" (SEEDS), "kinds" (KINDS), "dtype" (run takes
    one: the precision factor applies), "requires" (REQUIRES, kit.data.requires)}. KitError:
    one line."""
    info, data = read_pipeline(path)
    sha = info["sha256"]
    folder = subdir("pipelines") / "by-hash"
    if not (folder / f"{sha}.py").exists() or verify(sha):
        write_bytes(folder / f"{sha}.py", data)
    write_bytes(folder / f"{sha}.json", json.dumps(info, sort_keys=True).encode())
    return info


def file_sha256(path) -> str:
    """The hash that names the pipeline in file ``path``, nothing written. KitError: one line."""
    return read_pipeline(path)[0]["sha256"]


def read_pipeline(path) -> tuple:
    """(info as add_pipeline records it, the file's bytes) of the file at ``path``, read and
    hashed, never imported nor kept. KitError: one line."""
    path = Path(path)
    data = _read_bounded(path)
    if path.suffix != ".py":
        raise KitError(f"{path.name}: a pipeline is a Python file (.py)")
    return dict(
        declared(path.name, data), sha256=hashlib.sha256(data).hexdigest(), name=path.name
    ), data


def _read_bounded(path: Path) -> bytes:
    """The bytes of a regular file of at most MAX_FILE_BYTES, its kind and size checked by
    stat before it is opened (a FIFO would hang the open, /dev/zero never ends) and the read
    itself bounded (a file that grew meanwhile). KitError: one line."""
    shown = one_line(path, 200)
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            kind = (
                "a directory"
                if stat.S_ISDIR(st.st_mode)
                else "a FIFO"
                if stat.S_ISFIFO(st.st_mode)
                else "a device"
                if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "not a regular file"
            )
            raise KitError(f"pipeline file {shown} is {kind}: a pipeline is a regular .py file")
        if st.st_size > MAX_FILE_BYTES:
            raise KitError(
                f"pipeline file {shown} holds {st.st_size:,} bytes: a pipeline file "
                f"is at most {MAX_FILE_BYTES // 1024**2} MiB (read data by path)"
            )
        # O_NONBLOCK: a FIFO put in its place since the stat opens without waiting for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise KitError(
                    f"pipeline file {shown} is not a regular file: a pipeline is a regular .py file"
                )
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise KitError(
            f"cannot read pipeline file {shown} ({e.strerror or type(e).__name__})"
        ) from None
    if len(data) > MAX_FILE_BYTES:
        raise KitError(
            f"pipeline file {shown} holds more than {MAX_FILE_BYTES // 1024**2} MiB: "
            f"a pipeline file is at most that (read data by path)"
        )
    return data


def declared(name: str, data: bytes) -> dict:
    """SEEDS, KINDS and REQUIRES as the file assigns them, read as literals, and whether its
    ``def run`` takes a dtype (a second positional parameter named dtype): {"seeds", "kinds",
    "dtype", "requires"}."""
    try:
        tree = ast.parse(data, filename=name)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:  # a NUL byte: no line
        lineno = getattr(e, "lineno", None)
        at = f"{name}:{lineno}" if lineno else name
        why = getattr(e, "msg", None) or str(e) or type(e).__name__
        raise KitError(f"{at}: the pipeline file does not parse ({why})") from None
    found = {}
    dtype = False
    for node in tree.body:
        if (
            isinstance(node, ast.FunctionDef) and node.name == "run"
        ):  # the last def wins, as in Python
            params = [*node.args.posonlyargs, *node.args.args]  # the worker checks the rest
            dtype = len(params) >= 2 and params[1].arg == "dtype"
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value:
            target, value = node.target, node.value
        if (
            isinstance(target, ast.Name)
            and target.id in ("SEEDS", "KINDS", "REQUIRES")
            and value is not None
        ):
            try:
                found[target.id] = ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                raise KitError(
                    f"{name}:{node.lineno}: {target.id} must be written out as a "
                    f"literal (kit reads it without running the file)"
                ) from None
    try:
        return {
            "seeds": list(check_seeds(name, found.get("SEEDS"))),
            "kinds": check_kinds(name, found.get("KINDS", {})),
            "dtype": dtype,
            "requires": check_requires(name, found.get("REQUIRES")),
        }
    except ContractError as e:
        raise KitError(str(e)) from None


class _Info(msgspec.Struct, forbid_unknown_fields=True):
    """What add_pipeline records of a file (its .json beside it): read by this schema, never
    trusted as written (a damaged or planted record is one line, not a reader's KeyError)."""

    sha256: str
    name: Annotated[str, msgspec.Meta(pattern=r"^[^/\x00-\x1f\x7f]{1,252}\.py\Z")]
    seeds: list
    kinds: dict
    dtype: bool
    requires: list = []  # recorded before REQUIRES was read: none


def pipeline_info(sha: str) -> dict:
    """What add_pipeline recorded of pipeline ``sha``; KitError if this KIT_HOME never saw it,
    or if what it recorded is not what add_pipeline writes for that file."""
    path = subdir("pipelines") / "by-hash" / f"{sha}.json"
    raw = read_home(path)
    if raw is None:
        raise KitError(f"pipeline {sha[:12]} is not known here: run it with --pipeline FILE.py")
    try:
        info = decode(raw, _Info, f"pipeline {sha[:12]}'s record")
        if info.sha256 != sha:
            raise KitError(f"pipeline {sha[:12]}'s record names pipeline {info.sha256[:12]}")
        check_seeds(info.name, info.seeds)
        check_kinds(info.name, info.kinds)
        if check_requires(info.name, info.requires) != info.requires:
            raise KitError(f"{info.name}: its recorded REQUIRES is not as kit writes it")
    except (KitError, ContractError) as e:
        raise KitError(
            f"{e}: {path} is damaged; run the file again with --pipeline FILE.py"
        ) from None
    return {"requires": [], **json.loads(raw)}


def pipeline_file(sha: str) -> Path:
    """The file a worker imports for pipeline ``sha``, verified to hash to its name."""
    path = subdir("pipelines") / "by-hash" / f"{sha}.py"
    why = verify(sha)
    if why:
        raise KitError(f"pipeline file {path} {why}: run it again with --pipeline FILE.py")
    return path


def shipment(sha: str) -> dict:
    """What a cluster node is sent of pipeline ``sha`` it has not got: the file's name and
    bytes, read from this KIT_HOME's verified copy (kit.runs.executing.on_node keeps it)."""
    return {
        "sha256": sha,
        "name": pipeline_info(sha)["name"],
        "data": read_home(pipeline_file(sha), PIPELINE),
    }


def keep_shipped(sha: str, got) -> None:
    """Keep a shipment (``shipment``'s dict, as a node received it) of pipeline ``sha`` in this
    KIT_HOME's by-hash folder, its bytes verified to hash to ``sha`` first: nothing unverified
    is written, so nothing unverified is imported. KitError: one line."""
    data = got.get("data") if isinstance(got, dict) else None
    name = got.get("name") if isinstance(got, dict) else None
    if (
        not isinstance(data, bytes)
        or not isinstance(name, str)
        or not name.endswith(".py")
        or "/" in name
        or hashlib.sha256(data).hexdigest() != sha
    ):
        raise KitError(
            f"the pipeline file {sha[:12]} arrived damaged (its bytes do not hash "
            f"to the run's pipeline): nothing of it was kept"
        )
    info = dict(declared(name, data), sha256=sha, name=name)
    folder = subdir("pipelines") / "by-hash"
    if verify(sha):  # missing or damaged here: the verified bytes replace it
        write_bytes(folder / f"{sha}.py", data)
    write_bytes(folder / f"{sha}.json", json.dumps(info, sort_keys=True).encode())


def present(sha: str) -> bool:
    """Whether this KIT_HOME holds pipeline ``sha``'s verified file and what it declares."""
    return verify(sha) is None and (subdir("pipelines") / "by-hash" / f"{sha}.json").is_file()


EDITED = "was edited after it was kept (its bytes no longer hash to its name)"
MISSING = "is missing"


def verify(sha: str) -> str | None:
    """Why the stored file of pipeline ``sha`` is not that pipeline (None: it is)."""
    return kept_problem(subdir("pipelines") / "by-hash" / f"{sha}.py")


def kept_problem(path: Path) -> str | None:
    """Why the kept file ``path`` (``by-hash/SHA.py``) is not pipeline SHA, said after its name:
    ``MISSING``, not a file kit writes (a link, a FIFO, too large), or ``EDITED``; None when
    it is. A file is hashed again once per change of its size or modification time."""
    try:
        st = path.stat()
        ident = (st.st_size, st.st_mtime_ns)
        if _checked.get(path) == ident:
            return None
        data = read_home(path, PIPELINE)
        if data is None:
            return MISSING
        if hashlib.sha256(data).hexdigest() != path.stem:
            return EDITED
    except NotKits as e:
        return e.why
    except OSError:
        return MISSING
    _checked[path] = ident
    return None


def why_absent(sha: str, made_here: bool) -> str:
    """Why this KIT_HOME has no verified file of pipeline ``sha`` to carry, in words: its kept
    file was edited (or is not a file kit writes), an edited copy was set aside by a repair,
    it is gone, or (none of these, ``made_here`` false) its runs came in a bundle."""
    path = subdir("pipelines") / "by-hash" / f"{sha}.py"
    why = verify(sha)
    if why not in (None, MISSING):
        return f"its kept file {path} {why}; `kit store check --repair` sets it aside"
    if any(path.parent.glob(f"{sha}.py.damaged-*")):
        return f"its kept file was edited, and `kit store check --repair` set it aside as {path}.damaged-..."
    if made_here:
        return f"its kept file {path} is gone"
    return "this KIT_HOME has not got its file: its runs came in a bundle"


class LabData:
    """What the runner keeps of a lab pipeline where it keeps a dataset's summary: the
    pipeline reads its own data, so its hash and file name are all kit knows of it."""

    def __init__(self, info: dict):
        self.sha256 = info["sha256"]
        self.name = info["name"]
        self.seeds = tuple(info["seeds"])

    def summary(self) -> dict:
        return {
            "sha256": self.sha256,
            "name": f"pipeline {self.name}",
            "source": "pipeline",
            "pipeline": self.name,
            "synthetic": False,
        }


def known_summary(sha: str) -> dict | None:
    """The store's summary of pipeline ``sha`` when this KIT_HOME has its file, else None (a
    bundle's runs of a pipeline are then recorded as of a dataset not verified here)."""
    try:
        info = pipeline_info(sha)
    except KitError:
        return None
    return LabData(info).summary() if verify(sha) is None else None
