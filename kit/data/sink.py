"""The rows of an import as they are read: kept records spilled to disk, the bad ones counted.

A kept record is written to an unnamed temporary file in the datasets folder (gone on close, on
an exception and on kill -9), not held: a file refused for a bad row near its end costs no
memory for the rows before it. Only when the whole file is accepted are the columns read back,
straight into split order, and only then are accessions checked for repeats.
"""

from __future__ import annotations

import tempfile
from array import array
from collections import Counter

import numpy as np

from ..core.errors import KitError
from ..worker.pipeline import AMINO_ACIDS
from .dataset import MAX_LEN, MIN_LEN
from .strings import Strings

_STANDARD = frozenset(AMINO_ACIDS)
_TEXT = ("ids", "seqs", "orgs")  # spilled as UTF-8 lines: no kept string holds \n or \r
_BATCH = 2**18  # characters buffered before a write


class Sink:
    """Rows as they are read: kept records spilled column by column (labels, one byte each, in
    memory), rejected and dropped rows only counted, with the first few kept for the message."""

    def __init__(
        self, path, check=True, min_len=MIN_LEN, max_len=MAX_LEN, keep_going=False, spill_dir=None
    ):
        self.path, self.check, self.min_len, self.max_len = path, check, min_len, max_len
        self.keep_going = keep_going  # False: the first bad row dooms the file; stop keeping
        self.spill_dir, self._files, self.doomed = spill_dir, None, False
        self.kept, self.labels, self._batch, self._chars = 0, bytearray(), ([], [], []), 0
        self._lines = array("q")
        self.parsed, self.rejects, self.first_reject = 0, 0, None
        self.dropped, self.shown = Counter(), []  # {reason: rows}, the first five (acc, why, line)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        """Drop the spill (its files are unnamed: closing them frees the disk)."""
        for f in (self._files or {}).values():
            f.close()
        self._files, self._batch, self._lines = None, ([], [], []), array("q")

    def reject(self, r) -> None:
        self.rejects += 1
        self.first_reject = self.first_reject or r
        self._doom()

    def _doom(self) -> None:
        """The file will be refused: keep nothing more, and drop what was spilled."""
        if not self.keep_going and not self.doomed:
            self.doomed = True
            self.close()
            self.kept, self.labels = 0, bytearray()

    def add(self, row, length=None) -> None:
        acc, seq, label, org, no = row
        self.parsed += 1
        if self.check:
            odd = sorted(set(seq) - _STANDARD)
            length = len(seq) if length is None else length
            if odd or not self.min_len <= length <= self.max_len:
                if odd:
                    self.dropped["non-standard residues"] += 1
                    why = f"non-standard residue(s) {''.join(odd)[:20]}"
                else:
                    self.dropped[f"lengths outside {self.min_len}-{self.max_len}"] += 1
                    why = f"length {length} outside {self.min_len}-{self.max_len}"
                if len(self.shown) < 5:
                    self.shown.append((acc, why, no))
                return self._doom()
        if self.doomed:
            return
        for col, text in zip(self._batch, (acc, seq, org), strict=True):
            col.append(text)
        self.labels.append(label)
        self._lines.append(no)
        self.kept += 1
        self._chars += len(acc) + len(seq) + len(org)
        if self._chars >= _BATCH:
            self._flush()

    def _flush(self) -> None:
        try:
            if self._files is None:
                # open until the sink is closed: the spilled batches are read back from them
                self._files = {
                    k: tempfile.TemporaryFile(dir=self.spill_dir)  # noqa: SIM115
                    for k in (*_TEXT, "lines")
                }
            for key, col in zip(_TEXT, self._batch, strict=True):
                if col:
                    self._files[key].write(("\n".join(col) + "\n").encode())
            self._lines.tofile(self._files["lines"])
        except OSError as e:
            where = self.spill_dir or tempfile.gettempdir()
            raise KitError(
                f"cannot write the records of {self.path} to a temporary file in "
                f"{where}: {e.strerror or e}; free space there (nothing was "
                "imported)"
            ) from None
        self._batch, self._chars, self._lines = ([], [], []), 0, array("q")

    def _column(self, key, order=None):
        """A spilled text column in ``order`` (the file's order when None): accessions and
        sequences as Strings (one buffer), organisms as a tuple of one str per organism."""
        f, n, i, tail = self._files[key], self.kept, 0, b""
        f.seek(0)
        if key != "orgs":
            return Strings.from_file(f, order)
        out = np.empty(n, dtype=object)
        names = {}
        while True:
            block = f.read(2**20)
            data = tail + block
            cut = data.rfind(b"\n") + 1
            texts = [names.setdefault(t, t) for t in data[:cut].decode().split("\n")[:-1]]
            tail = data[cut:]
            out[i : i + len(texts)] = texts
            i += len(texts)
            if not block:
                break
        return tuple(out if order is None else out[order])

    def columns(self, order=None):
        """(ids, seqs, labels, organisms) of the kept records in ``order`` (the file's order
        when None); a KitError naming both lines when an accession repeats."""
        self._flush()
        if not self.kept:
            return Strings(), Strings(), (), ()
        order = np.arange(self.kept) if order is None else order
        ids = self._column("ids")
        self._refuse_repeats(ids)
        ids = ids.take(order)
        seqs = self._column("seqs", order)
        labels = tuple(np.frombuffer(self.labels, dtype=np.uint8)[order].tolist())
        return ids, seqs, labels, self._column("orgs", order)

    def _refuse_repeats(self, ids) -> None:
        """Accessions are compared by hash first (8 bytes a row), strings only where they meet."""
        hashes = np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids))
        hashes.sort()
        met = set(hashes[1:][hashes[1:] == hashes[:-1]].tolist())
        if not met:
            return
        first: dict = {}
        for i, acc in enumerate(ids):
            if hash(acc) in met:
                if acc in first:
                    lines = self._files["lines"]
                    raise KitError(
                        f"{self.path}:{self._line(lines, i)}: accession {acc!r} appears "
                        f"more than once (first on line {self._line(lines, first[acc])})"
                    )
                first[acc] = i

    @staticmethod
    def _line(f, i: int) -> int:
        f.seek(8 * i)
        return array("q", f.read(8))[0]

    def refuse_rejects(self):
        r, more = self.first_reject, self.rejects - 1
        raise KitError(
            f"{self.path}:{r.no}: {r.why}"
            + (f" (and {more} more rows)" if more else "")
            + "; pass --filter to drop such rows"
        )
