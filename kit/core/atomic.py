"""Write files so that a reader sees the old content or the whole new one, never a part.

Each file is written to a temporary name beside it, ``.NAME.kitPID-XXXXXXXX.tmp``, on which its
writer holds an ``flock`` until the rename; a writer killed midway (kill -9, a power cut) leaves
that file behind, and the next write into the same folder removes it once its lock can be taken
and its writer is gone (``sweep_tmp``: the rule of kit.core.spools), never a live writer's. A
folder outside KIT_HOME (a user's ``--out``) may see no later write: a write there is noted under
KIT_HOME first (``_note``), and the next command that opens the store removes what a killed one
left (``sweep_notes``).
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

# the worker says a full disk the same way (it runs alone in foreign interpreters, so the one
# function lives there)
from ..worker.disk import mount_of as _mount
from .errors import KitError
from .paths import StrPath, kit_home, subdir
from .small_files import read_small
from .spools import STALE_S, abandoned, age, held

_UMASK: list[int] = []
_UMASK_LOCK = threading.Lock()


def umask() -> int:
    """The process's umask, read once. Linux shows it in /proc without changing it; elsewhere it
    is set and put back under a lock, the only way POSIX offers to read it."""
    with _UMASK_LOCK:
        if not _UMASK:
            _UMASK.append(_read_umask())
        return _UMASK[0]


def _read_umask() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o077)
    os.umask(old)
    return old


def _as_the_user_would(path: StrPath) -> None:
    """mkstemp makes files 0600; a report, bundle or dataset is the user's file like any other,
    so it gets the mode `open` would give it: 0666 less the umask."""
    os.chmod(path, 0o666 & ~umask())


def make_dir(path: StrPath) -> Path:
    """``path`` as a folder that exists (made if need be); one can't be made is a KitError."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise KitError(f"cannot make the folder {path}: {_why(e, path)}") from None
    return path


def _nearest(path: Path) -> Path:
    """``path``, or the nearest path above it that exists (a link counts, whatever it points at)."""
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def _why(e: OSError, path: Path) -> str:
    """Why nothing could be made at or in ``path``, in words: "No such file or directory" where
    the folder exists means a file system that takes nothing new (/proc, /sys), not a typo."""
    if e.errno == errno.ENOENT:
        above = _nearest(path)
        if above.is_dir() and os.path.lexists(above):
            where = "it" if above == path else str(above)
            return (
                f"{where} takes no new files or folders (a virtual file system such as "
                "/proc or /sys)"
            )
    return e.strerror or str(e)


# what a rename would replace rather than write: a link (and not what it points to), a pipe, a
# socket or a device (as root, `--out /dev/full` replaced the device by a regular file)
_NOT_WRITTEN = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFBLK: "a block device",
    stat.S_IFCHR: "a character device",
}


def refuse_special(dest: StrPath) -> None:
    """KitError, one line, if ``dest`` exists as anything but a regular file or a folder. Read
    with lstat: a link is never followed (nor replaced), and a FIFO never opened."""
    try:
        st = os.lstat(dest)
    except (FileNotFoundError, NotADirectoryError):  # nothing there (a folder above it may
        return  # be a file: said by whoever makes the folders)
    except OSError as e:
        raise KitError(f"cannot write {dest}: {e.strerror or e}") from None
    what = _NOT_WRITTEN.get(stat.S_IFMT(st.st_mode))
    if what is None:
        return

    if what == "a symbolic link":
        raise KitError(
            f"cannot write {dest}: it is a symbolic link, and kit neither follows nor "
            f"replaces one: give the path of a regular file or folder (the link's "
            f"target, if that is what you meant)"
        )
    raise KitError(
        f"cannot write {dest}: it is {what}, not a regular file or folder: kit writes "
        f"only those, never onto a device, pipe or socket; give another path"
    )


def out_file(path: StrPath, example: str = "out") -> Path:
    """The one rule of every ``--out FILE``: ``path`` (~ expanded) may be a regular file (then
    replaced whole) or nothing yet (its missing folders are made when it is written, by
    atomic_path); a folder, a link, a FIFO, a socket or a device there, a folder's name (one
    that ends in a slash, there or not), or a file where one of its folders would go, is a
    KitError of one line, said before any work (nothing made). An empty ``path`` too."""
    text = _given(path, "a file's name")
    path = Path(text).expanduser()
    refuse_special(path)
    # a name that ends in a slash is a folder's, there or not yet: never written as a file
    folder = (
        "a folder"
        if path.is_dir()
        else "a folder's name (it ends in a slash)"
        if text.endswith(("/", os.sep))
        else None
    )
    if folder:
        raise KitError(
            f"cannot write {path if path.is_dir() else text}: it is {folder}: give a "
            f"file's name, e.g. {path / example}"
        )
    _can_write(_can_make(path.parent))
    return path


def _given(path: StrPath, what: str) -> str:
    """--out's text; KitError for an empty one (an unset shell variable, `--out "$DIR"`),
    which would otherwise name the current folder."""
    text = os.fspath(path)
    if not text.strip():
        raise KitError(f"--out is empty: give {what}")
    return text


def _can_make(folder: Path) -> Path:
    """KitError, as make_dir would say it, if ``folder`` could not be made: the nearest path
    above it that exists is not a folder. That folder, else."""
    above = _nearest(folder)
    if not above.is_dir():
        raise KitError(f"cannot make the folder {folder}: {above} is not a folder")
    return above


def _can_write(folder: Path) -> None:
    """KitError, as atomic_path would say it, if no file can be made in ``folder`` (read-only,
    not this user's, /proc): said before the work, not after it (`kit export --out
    /proc/x.kit` read and counted every run first). A file made and removed at once: the
    permission bits do not tell for root, nor on a read-only mount."""
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".kit-probe-", suffix=".tmp")
    except OSError as e:
        raise KitError(
            no_space(folder)
            if e.errno in FULL
            else f"cannot write into {folder}: {_why(e, folder)}"
        ) from None
    os.close(fd)
    os.unlink(probe)


def out_folder(path: StrPath, files: Iterable[str] = (), make: bool = True) -> Path:
    """The one rule of every ``--out FOLDER``: ``path`` (~ expanded) is a folder, made with any
    missing folders above it; a file, a link, a FIFO, a socket or a device there is a KitError
    of one line (each file written into it is held to the same rule by atomic_path). ``files``:
    the names about to be written into it, each checked now, so that a refusal comes before
    the first of them is written, not halfway through. An empty ``path`` is a KitError.
    ``make=False``: checked only, before the work; the folder is made when there is something
    to write into it (out_folder again), so a command that then fails leaves no empty folder."""
    path = Path(_given(path, "a folder's name")).expanduser()
    refuse_special(path)
    if not path.exists():  # a file above it: the words out_file says (not "Not a directory")
        _can_make(path)
    for name in files:
        refuse_special(path / name)
    if path.exists() and not path.is_dir():
        raise KitError(
            f"cannot write into {path}: it is a file: give a folder, e.g. "
            f"{path.parent / 'kit-report'}"
        )
    return make_dir(path) if make else path


# a temporary file's name: its destination's, this kit's pid, mkstemp's random part
_TMP = re.compile(r"^\..+\.kit(\d{1,9})-[a-z0-9_]+\.tmp$")
_OLD_TMP = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")  # an older kit's: no pid, no lock
_swept: set[str] = set()  # folders this process has swept: once each
_swept_lock = threading.Lock()


def _temporary(dest: Path) -> tuple[int, str, _Note]:
    """A new temporary file beside ``dest``, locked as this writer's: (fd, path, note). The fd
    holds the lock; close it once the file is renamed or removed, then ``_forget`` the note."""
    _sweep_once(dest.parent)
    note = _note(dest)
    try:
        fd, tmp = tempfile.mkstemp(
            dir=dest.parent, prefix=f".{dest.name}.kit{os.getpid()}-", suffix=".tmp"
        )
    except BaseException:
        _forget(note)
        raise
    _lock(fd)
    return fd, tmp, note


def _lock(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:  # a file system without locks: its pid alone keeps it from a sweep
        pass


NOTES = "writes"  # under KIT_HOME: a note of each write in progress outside it
_Note = tuple[int, str] | None  # (fd, path) of a write's note, or None: none was made
_NOTE = re.compile(r"^(\d{1,9})-[a-z0-9_]+\.note$")
_NOTE_MAX = 4096  # a path's length, at most (PATH_MAX)


def _note(dest: Path) -> _Note:
    """(fd, path) of a note of a write to ``dest`` outside KIT_HOME, else None. A killed write's
    temporary file waits for the next write into its folder, and a user's --out folder may see
    none (`kit export` killed left 115 MB there): so the write is noted first, before its file
    is made, as ``KIT_HOME/writes/PID-XXXX.note`` holding ``dest``'s path, locked as the file
    is; the next command that opens the store reads it (sweep_notes). Under KIT_HOME, or with
    no KIT_HOME to write, nothing is noted: the write goes on as before."""
    if _under_kit_home(dest):
        return None
    try:
        fd, note = tempfile.mkstemp(dir=subdir(NOTES), prefix=f"{os.getpid()}-", suffix=".note")
    except (OSError, KitError):
        return None
    _lock(fd)
    try:  # one write: a note is the whole path or, killed before it, empty
        os.write(fd, os.fsencode(os.path.abspath(dest)))
    except OSError:
        _forget((fd, note))
        return None
    return fd, note


def _forget(note: _Note) -> None:
    """The write's file is renamed or removed: its note goes (then its lock)."""
    if note is not None:
        Path(note[1]).unlink(missing_ok=True)
        os.close(note[0])


def sweep_notes(home: StrPath) -> int:
    """Forget the notes under ``home`` of writes outside KIT_HOME whose writer is gone and that
    left nothing (``_note``); returns how many. Nothing outside KIT_HOME is removed on a note's
    word: a note is a file anyone who can write KIT_HOME can plant, and one naming a user's
    folder made kit delete a user's file there. What a killed write left outside is said by
    `kit store check` (``stale_notes``), and goes with the next write into that folder
    (``sweep_tmp``, of a folder the user named)."""
    forgotten = 0
    for note, _, left in stale_notes(home):
        if not left:
            note.unlink(missing_ok=True)
            forgotten += 1
    return forgotten


def stale_notes(home: StrPath) -> list[tuple[Path, Path | None, list[str]]]:
    """(note, destination or None, leftovers) of each note under ``home`` whose writer is gone
    (the rule of kit.core.spools): the leftovers are the temporary files of its pid beside the
    destination that sweep_tmp's rule finds abandoned (regular files, unlocked; never a link,
    nor a name that merely starts as one)."""
    folder = Path(home) / NOTES
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    out = []
    for name in names:
        mine = _NOTE.match(name)
        note = folder / name
        if not mine or not abandoned(note, int(mine.group(1)), note):
            continue
        dest, left = _noted(note), list[str]()
        if dest is not None:
            prefix = f".{dest.name}.kit{mine.group(1)}-"
            left = [
                str(dest.parent / n)
                for n in _names(dest.parent)
                if n.startswith(prefix)
                and _TMP.match(n)
                and abandoned(dest.parent / n, int(mine.group(1)), dest.parent / n)
            ]
        out.append((note, dest, left))
    return out


def _noted(note: Path) -> Path | None:
    """The destination a note holds: an absolute path, else None (an empty or foreign note, or
    not a file: read bounded, never through a link or from a FIFO)."""
    data = read_small(note, _NOTE_MAX)
    text = os.fsdecode(data or b"")
    if not data or "\0" in text or not os.path.isabs(text):
        return None
    return Path(text)


def _names(folder: StrPath) -> list[str]:
    """The names of temporary files a write may have left in ``folder``."""
    try:
        return [n for n in os.listdir(folder) if n.endswith(".tmp") and n.startswith(".")]
    except OSError:
        return []


def _sweep_once(folder: Path) -> None:
    key = os.path.abspath(folder)
    with _swept_lock:
        if key in _swept:
            return
        _swept.add(key)
    sweep_tmp(folder)


def sweep_tmp(folder: StrPath) -> int:
    """Remove what atomic writes killed midway left in ``folder``; returns how many. A file
    ``.NAME.kitPID-*.tmp`` goes once its lock can be taken (its writer held it until the rename:
    the kernel dropped it when the writer died) and its pid is gone, or it is older than
    spools.STALE_S (the pid was reused). An older kit's ``.NAME.XXXXXXXX.tmp`` (no pid, no lock)
    goes once older than STALE_S, and only under KIT_HOME: a user's own folder (a report's, an
    export's) may hold a file of that shape that is not kit's."""
    return _remove_leftovers(folder, _names(folder))


def _remove_leftovers(folder: StrPath, names: Iterable[str]) -> int:
    """sweep_tmp's rule, for ``names`` in ``folder``: those whose writer is gone are removed."""
    removed = 0
    for name in names:
        path = Path(folder) / name
        mine = _TMP.match(name)
        if mine:  # held() keeps a link, a FIFO or a device of that name: never opened, never kit's
            if not abandoned(path, int(mine.group(1)), path):
                continue
        elif not (
            _OLD_TMP.match(name)
            and _under_kit_home(path)
            and age(path) > STALE_S
            and held(path) is False
        ):
            continue
        try:
            path.unlink()
            removed += 1
        except OSError:
            pass
    return removed


def _under_kit_home(path: Path) -> bool:
    home: StrPath | None = os.environ.get("KIT_HOME")
    if not home:
        try:
            home = kit_home(writing=False)
        except Exception:  # noqa: BLE001 - no usable KIT_HOME: nothing is known to be kit's
            return False
    return Path(os.path.abspath(home)) in Path(os.path.abspath(path)).parents


@contextmanager
def atomic_path(dest: StrPath) -> Iterator[Path]:
    """Yield a temporary path beside ``dest``; rename it onto ``dest`` only if the block succeeds.
    ``dest`` a link, a FIFO, a socket or a device: a KitError, and nothing is replaced."""
    dest = Path(dest)
    refuse_special(dest)
    make_dir(dest.parent)
    try:
        fd, tmp, note = _temporary(dest)
    except OSError as e:
        raise KitError(
            no_space(dest.parent)
            if e.errno in FULL
            else f"cannot write into {dest.parent}: {_why(e, dest.parent)}"
        ) from None
    try:
        yield Path(tmp)
        _as_the_user_would(tmp)
        refuse_special(dest)  # again: one may have been put there while the block wrote
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)  # the lock goes: the file is dest now, or gone
        _forget(note)


FULL = (errno.ENOSPC, errno.EDQUOT)  # the disk, or the user's quota, is full


def mount_of(path: StrPath) -> Path:
    """The mount point of the file system holding ``path`` (or the nearest folder above it that
    exists): what a user frees space on."""
    return Path(_mount(os.fspath(path)))


def no_space(path: StrPath) -> str:
    """The one line for a full disk: free space where ``path`` lives. Never advice to move or
    remove kit's own files: a full disk loses nothing, and the same command resumes."""
    return (
        f"cannot write {path}: No space left on device; nothing was changed: free space on "
        f"{mount_of(path)} and run the same command again"
    )


def write_bytes(dest: StrPath, data: bytes) -> None:
    """Write ``data`` to ``dest`` whole or not at all; a full disk is a one-line KitError."""
    try:
        with atomic_path(dest) as tmp, open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise KitError(
            no_space(dest)
            if e.errno in FULL
            else f"cannot write {dest}: {e.strerror or e}; nothing was changed"
        ) from None


def create_once(dest: StrPath, data: bytes) -> bytes:
    """Write ``data`` to ``dest`` unless it exists; return what ``dest`` holds afterwards.

    Several processes may race to create the same file (three `kit run`s on a fresh KIT_HOME);
    a hard link of a whole temporary file either succeeds or finds the winner's file, so every
    racer ends up with the same content and none sees a partial one."""
    dest = Path(dest)
    try:
        return dest.read_bytes()
    except FileNotFoundError:
        pass
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp, note = _temporary(dest)
    try:
        with os.fdopen(fd, "wb") as f:  # its close drops the lock: the pid still says it is ours
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        _as_the_user_would(tmp)
        try:
            os.link(tmp, dest)
        except FileExistsError:
            pass
    finally:
        Path(tmp).unlink(missing_ok=True)
        _forget(note)
    return dest.read_bytes()
