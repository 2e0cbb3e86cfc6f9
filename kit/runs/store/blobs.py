"""Content-addressed stage arrays: every file is verified (hash, dtype, shape) before it is trusted.

A file's verification is remembered under its identity (device, inode, size, modification and
change times): an edit changes the change time, which no user tool can set back, so a
remembered file is the bytes that were hashed, and a changed one is hashed again.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.errors import Damaged
from ...worker.dtypes import sha256_of

if TYPE_CHECKING:  # the store holds its blobs: its type only, for annotations
    from .index import Store

Shape = Sequence[int]  # as a run records it: a manifest's list, a record's tuple
Noted = list[tuple[str, str | None]]  # (blob key, file identity) for the caller's transaction


class DamagedArray(Damaged):
    """A stored array no longer holds what its run recorded."""


def array_sha256(a: np.ndarray) -> str:
    """The paper's stage hash: SHA-256 of the C-contiguous bytes (dtype and shape kept beside
    it), the worker's own (kit.worker.dtypes.sha256_of: never a copy of a C-order array)."""
    return sha256_of(a)


def blob_key(sha: str, dtype: str, shape: Shape) -> str:
    """Equal bytes with another dtype or shape are another array."""
    return hashlib.sha256(f"{sha}:{dtype}:{tuple(shape)}".encode()).hexdigest()


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISSOCK, "a socket"),
)


def not_regular(mode: int) -> str | None:
    """Why a file of ``mode`` is no array (a FIFO would block every reader that opened it), or
    None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a file")
    return f"not a regular file but {kind}: never opened"


def _ident(path: str | Path) -> str | None:
    try:
        st = os.lstat(path)  # a link is not followed: the store's own files are never links
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _open(path: str | Path) -> io.BufferedReader:
    """``path`` opened for reading if it is a regular file, else DamagedArray: lstat decides
    before it is opened, and the open neither blocks nor follows a link (a FIFO or link swapped
    in between is refused by fstat)."""
    try:
        if why := not_regular(os.lstat(path).st_mode):
            raise DamagedArray(why)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as e:
        raise DamagedArray(f"not a readable .npy array ({e.strerror or e})") from None
    if why := not_regular(os.fstat(fd).st_mode):
        os.close(fd)
        raise DamagedArray(why)
    return os.fdopen(fd, "rb")


def check_array(a: np.ndarray, sha: str, dtype: str, shape: Shape) -> str | None:
    """Why ``a`` is not the recorded array, or None when it is."""
    if a.dtype.str != dtype:
        return f"dtype {a.dtype.str}, recorded {dtype}"
    if list(a.shape) != list(shape):
        return f"shape {list(a.shape)}, recorded {list(shape)}"
    if array_sha256(a) != sha:
        return "bytes do not match the recorded sha256"
    return None


def npy_header(head: bytes, limit: int = 10_000) -> tuple[int, tuple[int, ...], bool, str]:
    """(header length, shape, Fortran order, dtype string) of a .npy file's first bytes (at
    most ``limit`` of header), or ValueError: numpy's own parser, whatever it raises on junk."""
    fp = io.BytesIO(head)
    try:
        dtype, shape, fortran, _ = _parsed(fp, limit)
    except Exception as e:  # noqa: BLE001 -- numpy's header parser raises many kinds on junk
        raise ValueError(f"not a readable .npy header ({type(e).__name__})") from None
    return fp.tell(), tuple(shape), bool(fortran), dtype.str


def _parsed(
    f: io.BufferedIOBase, limit: int = 10_000
) -> tuple[np.dtype[Any], tuple[int, ...], bool, int]:
    """(dtype, shape, Fortran order, data bytes) the .npy header at ``f`` declares; ``f`` left at
    its first byte of data."""
    fmt = np.lib.format
    version = fmt.read_magic(f)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f"unknown .npy version {version}")
    read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
    shape, fortran, dtype = read(f, max_header_size=limit)
    return dtype, shape, fortran, int(np.prod(shape, dtype=object)) * dtype.itemsize


def _header(f: io.BufferedIOBase) -> tuple[np.dtype[Any], tuple[int, ...], bool, int]:
    """(dtype, shape, Fortran order, data bytes) a .npy header declares, ``f`` left at its data;
    the file's size is checked against them before a byte of data is read, so a damaged header
    never allocates what it claims. DamagedArray for any header that does not parse or fit
    (numpy's parser raises TokenError, SyntaxError, ValueError ... on a changed byte)."""
    try:
        dtype, shape, fortran, nbytes = _parsed(f)
    except Exception as e:  # noqa: BLE001 -- whatever the damage, it is one kind of error
        raise DamagedArray(
            f"not a readable .npy array: its header is damaged ({type(e).__name__})"
        ) from None
    start = f.tell()
    end = f.seek(0, io.SEEK_END)
    if end - start != nbytes:
        raise DamagedArray(
            f"not a readable .npy array: its header declares {nbytes} "
            f"bytes of data, the file holds {end - start}"
        )
    if dtype.hasobject:  # pickled Python objects: never unpickled
        raise DamagedArray("not a readable .npy array: it holds Python objects")
    f.seek(start)
    return dtype, shape, fortran, nbytes


def _source(data_or_path: bytes | str | Path) -> io.BufferedIOBase:
    return io.BytesIO(data_or_path) if isinstance(data_or_path, bytes) else _open(data_or_path)


def load_npy(data_or_path: bytes | str | Path) -> np.ndarray:
    """np.load without pickles, its header parsed once (np.load would parse it again); a file
    that is not a readable .npy is a DamagedArray."""
    try:
        with _source(data_or_path) as f:
            dtype, shape, fortran, nbytes = _header(f)
            buf = bytearray(nbytes)  # writable, as np.load's arrays are
            if f.readinto(buf) != nbytes:
                raise DamagedArray("not a readable .npy array: its data is cut short")
            a = np.frombuffer(buf, dtype=dtype) if nbytes else np.empty(0, dtype)
            return a.reshape(shape, order="F" if fortran else "C")
    except (OSError, ValueError, EOFError) as e:
        raise DamagedArray(f"not a readable .npy array ({e})") from None


def file_problem(
    data_or_path: bytes | str | Path, sha: str, dtype: str, shape: Shape
) -> str | None:
    """Why a .npy file (or its bytes) is not the recorded array, or None when it is: read once,
    its header against the recorded dtype and shape, its data hashed as it streams by, no
    array made (the stage hash is of the C-order bytes, which a C-order file's data is)."""
    try:
        with _source(data_or_path) as f:
            got, got_shape, fortran, _ = _header(f)
            if got.str != dtype:
                return f"dtype {got.str}, recorded {dtype}"
            if list(got_shape) != list(shape):
                return f"shape {list(got_shape)}, recorded {list(shape)}"
            if fortran:  # numpy reorders a Fortran-order file's data: hashed as an array
                return check_array(load_npy(data_or_path), sha, dtype, shape)
            if hashlib.file_digest(f, "sha256").hexdigest() != sha:
                return "bytes do not match the recorded sha256"
    except DamagedArray as e:
        return str(e)
    except (OSError, ValueError, EOFError) as e:
        return f"not a readable .npy array ({e})"
    return None


class Blobs:
    """The arrays folder of a store; ``index`` (the store) remembers which files were verified
    (``verified_ident``, ``note_verified``, ``forget_verified``)."""

    def __init__(self, root: Path, index: Store):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._root = str(self.root)
        self.index = index

    def path(self, key: str) -> Path:
        return Path(self._file(key))

    def _file(self, key: str) -> str:  # as a string: a Path costs more than the stat it serves
        return f"{self._root}/{key[:2]}/{key}.npy"

    def exists(self, key: str) -> bool:
        return os.path.exists(self._file(key))

    def _remembered(self, key: str, ident: str) -> bool:
        return self.index.verified_ident(key) == ident

    def _remember(self, key: str, path: str | Path, noted: Noted | None = None) -> None:
        if noted is None:
            self.index.note_verified(key, _ident(path))
        else:  # written by the caller, in the transaction that indexes the run
            noted.append((key, _ident(path)))

    def _verified(
        self,
        key: str,
        sha: str,
        dtype: str,
        shape: Shape,
        force: bool = False,
        noted: Noted | None = None,
    ) -> tuple[bool, str | None]:
        """(whether the file of ``key`` is here, why it is not the recorded array or None),
        hashed unless remembered as verified (``force``: hashed anyway)."""
        path = self._file(key)
        ident = _ident(path)
        if ident is None:
            return False, None
        if not force and self._remembered(key, ident):
            return True, None
        why = file_problem(path, sha, dtype, shape)
        if why is None:
            self._remember(key, path, noted)
        return True, why

    def problem(
        self,
        key: str,
        sha: str,
        dtype: str,
        shape: Shape,
        force: bool = False,
        noted: Noted | None = None,
    ) -> str | None:
        """Why the stored file of ``key`` is not the recorded array (None: it is, or it is absent
        and that is the caller's to judge). ``force`` hashes it even if remembered; ``noted``:
        as put_file's."""
        return self._verified(key, sha, dtype, shape, force, noted)[1]

    def holds(
        self, key: str, sha: str, dtype: str, shape: Shape, noted: Noted | None = None
    ) -> bool:
        """Whether the file of ``key`` is here and is the recorded array (hashed unless
        remembered as verified; ``noted``: as put_file's)."""
        here, why = self._verified(key, sha, dtype, shape, noted=noted)
        return here and why is None

    def load(self, key: str, sha: str, dtype: str, shape: Shape, what: str) -> np.ndarray | None:
        """The verified array; DamagedArray (naming ``what``, the file and the repair) if not."""
        path = self._file(key)
        ident = _ident(path)
        if ident is None:
            return None
        remembered = self._remembered(key, ident)
        try:
            a = load_npy(path)
            why = None if remembered else check_array(a, sha, dtype, shape)
        except DamagedArray as e:
            why = str(e)
        self._judged(key, path, remembered, why, what)
        return a

    def verified_file(self, key: str, sha: str, dtype: str, shape: Shape, what: str) -> Path | None:
        """The file of ``key`` if it is the recorded array (hashed as it streams by unless
        remembered; never loaded), None when absent; DamagedArray as ``load`` says it."""
        path = self._file(key)
        ident = _ident(path)
        if ident is None:
            return None
        remembered = self._remembered(key, ident)
        why = None if remembered else file_problem(path, sha, dtype, shape)
        self._judged(key, path, remembered, why, what)
        return Path(path)

    def _judged(self, key: str, path: str, remembered: bool, why: str | None, what: str) -> None:
        if why:
            raise DamagedArray(
                f"the stored array of {what} is damaged ({why}; {path}); "
                "`kit store check --repair` drops it and what was computed "
                "from it, and the next `kit run` makes it again"
            )
        if not remembered:  # a write (a commit) only when something new was learnt
            self._remember(key, path)

    def put_file(
        self,
        src: str | Path,
        key: str,
        sha: str,
        dtype: str,
        shape: Shape,
        noted: Noted | None = None,
    ) -> None:
        """Move a verified file in; an existing copy is kept only if it verifies itself.
        ``noted``: the file's verified identity is appended there, for the caller to write in
        its own transaction, instead of being written at once."""
        if self.holds(key, sha, dtype, shape, noted):
            os.unlink(src)
            return
        dest = self._file(key)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        os.replace(src, dest)  # same file system: atomic; replaces a damaged copy
        self._remember(key, dest, noted)

    def files(self) -> dict[str, Path]:
        """{key: path} of every array file present."""
        return {p.stem: p for p in self.root.glob("??/*.npy")}

    def forget(self, key: str) -> None:
        """Delete the file of ``key``; a folder in its place is moved to ``damaged/`` beside the
        arrays (kept: it may hold anything), a FIFO or link removed (neither holds data here)."""
        path = self.path(key)
        try:
            folder = stat.S_ISDIR(os.lstat(path).st_mode)
        except FileNotFoundError:
            folder = False
        if folder:
            self.set_aside(key, self.root.parent / "damaged")
        else:
            path.unlink(missing_ok=True)
        self.index.forget_verified(key)

    def set_aside(self, key: str, folder: Path) -> None:
        """Move the file of ``key`` into ``folder`` (same layout), kept rather than deleted."""
        dest = Path(folder) / key[:2] / f"{key}.npy"
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(self.path(key), dest)
        except FileNotFoundError:
            pass
        self.index.forget_verified(key)
