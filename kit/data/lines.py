"""Read a protein file as numbered text lines in bounded chunks: size-limited, UTF-8 per line.

The whole file is never read at once: it is read 1 MiB at a time, a line may be at most
``MAX_LINE`` bytes, and blank lines cost no Python object (a run of them is counted, not split),
so 500 MiB of newlines is refused in seconds with little memory. A byte that is not UTF-8 is
one line naming the file, the line and the fix.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ..core.errors import KitError

MAX_BYTES = 512 * 2**20  # a few times Swiss-Prot's reviewed FASTA; more is not a protein file
LIMIT_ENV = "KIT_IMPORT_MAX_MIB"  # raises (or lowers) MAX_BYTES, in MiB
MAX_LINE = 4 * 2**20  # titin is 35,000 residues; a longer line is not a protein row
_CHUNK = 2**20
_TEXT = re.compile(rb"[^\r\n]+")  # a line's text; \n, \r\n and a lone \r end lines
_BOM = b"\xef\xbb\xbf"


def max_bytes() -> int:
    """The size limit: ``MAX_BYTES``, or KIT_IMPORT_MAX_MIB when set."""
    value = os.environ.get(LIMIT_ENV, "").strip()
    if not value:
        return MAX_BYTES
    try:
        mib = float(value)
    except ValueError:
        mib = -1.0
    if not 0 < mib <= 2**20:
        raise KitError(f"{LIMIT_ENV} must be a size in MiB (1 to 1048576), not {value!r}")
    return int(mib * 2**20)


def _open(path: Path, limit: int):
    try:
        st = os.stat(path)
    except OSError as e:
        raise KitError(f"cannot read {path}: {e.strerror or e}") from e
    if not stat.S_ISREG(st.st_mode):
        raise KitError(
            f"{path} is not a regular file (a device, a pipe or a folder); "
            "save the proteins to a file first"
        )
    if st.st_size > limit:
        raise KitError(
            f"{path} is {st.st_size / 2**20:.0f} MiB; at most {limit / 2**20:.0f} "
            f"MiB of proteins are imported (set {LIMIT_ENV} to raise the limit)"
        )
    try:
        return open(path, "rb")
    except OSError as e:
        raise KitError(f"cannot read {path}: {e.strerror or e}") from e


def numbered_lines(path, limit: int | None = None):
    """Yield (line number, text) of every line that is not blank; a byte-order mark is dropped."""
    path = Path(path)
    limit = max_bytes() if limit is None else limit
    no, tail, seen = 0, b"", 0
    with _open(path, limit) as f:
        while True:
            try:
                block = f.read(_CHUNK)
            except OSError as e:
                raise KitError(f"cannot read {path}: {e.strerror or e}") from e
            seen += len(block)
            if seen > limit:  # it grew while we read
                raise KitError(
                    f"{path} is larger than {limit / 2**20:.0f} MiB (set {LIMIT_ENV} "
                    "to raise the limit)"
                )
            if seen == len(block) and block.startswith(_BOM):
                block = block[len(_BOM) :]
            data = tail + block if tail else block
            if not data:
                return
            cut = len(data) if not block else data.rfind(b"\n") + 1
            if cut == 0:  # no line ends in this chunk: it is all one line
                if len(data) > MAX_LINE:
                    raise KitError(
                        f"{path}:{no + 1}: a line longer than {MAX_LINE // 2**20} MiB "
                        "is not a protein row or sequence line; is it a binary file, "
                        "or one saved without line breaks?"
                    )
                tail = data
                continue
            whole, tail = data[:cut], data[cut:]
            if whole.isspace():  # blank lines only: counted, never split
                no += _breaks(whole)
            else:
                no = yield from _split(whole, no, path)
            if not block:
                return


def _breaks(data: bytes) -> int:
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


def _split(data: bytes, no: int, path: Path):
    """Yield the non-blank lines of ``data`` (whole lines); returns the last line number."""
    end = 0
    for m in _TEXT.finditer(data):
        no += _breaks(data[end : m.start()])
        end = m.end()
        raw = m.group()
        if raw.isspace():
            continue
        if len(raw) > MAX_LINE:
            raise KitError(
                f"{path}:{no + 1}: a line longer than {MAX_LINE // 2**20} MiB is not a "
                "protein row or sequence line; is it a binary file?"
            )
        try:
            yield no + 1, raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise KitError(
                f"{path}:{no + 1}: byte 0x{raw[e.start]:02x} (column {e.start + 1}) is "
                "not UTF-8 text; save the file as UTF-8 (is it compressed, binary or "
                "Latin-1?)"
            ) from None
    return no + _breaks(data[end:])
