"""The rows of an import as they are read: the kept records in columns, the bad ones counted."""

from __future__ import annotations

from array import array
from collections import Counter

from ..core.errors import KitError
from ..worker.pipeline import AMINO_ACIDS
from .dataset import MAX_LEN, MIN_LEN

_STANDARD = frozenset(AMINO_ACIDS)


class Sink:
    """Rows as they are read: the kept records in columns (no object per row beyond its
    strings), rejected and dropped rows only counted, with the first few kept for the message."""

    def __init__(self, path, check=True, min_len=MIN_LEN, max_len=MAX_LEN, keep_going=False):
        self.path, self.check, self.min_len, self.max_len = path, check, min_len, max_len
        self.keep_going = keep_going  # False: the first bad row dooms the file; stop keeping
        self.ids, self.seqs, self.orgs, self.labels, self.lines = [], [], [], bytearray(), array("q")
        self.seen, self._orgs = set(), {}
        self.parsed, self.rejects, self.first_reject = 0, 0, None
        self.dropped, self.shown = Counter(), []  # {reason: rows}, the first five (acc, why, line)

    def reject(self, r) -> None:
        self.rejects += 1
        self.first_reject = self.first_reject or r
        self._doom()

    def _doom(self) -> None:
        """The file will be refused: hold no records while the rest is read and counted."""
        if not self.keep_going and self.seen is not None:
            self.ids, self.seqs, self.orgs, self.labels, self.seen = [], [], [], bytearray(), None
            self.lines = array("q")

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
        if self.seen is None:
            return
        if acc in self.seen:
            first = self.lines[self.ids.index(acc)]
            raise KitError(f"{self.path}:{no}: accession {acc!r} appears more than once "
                           f"(first on line {first})")
        self.seen.add(acc)
        self.ids.append(acc)
        self.seqs.append(seq)
        self.labels.append(label)
        self.orgs.append(self._orgs.setdefault(org, org))  # one string per organism
        self.lines.append(no)

    def refuse_rejects(self):
        r, more = self.first_reject, self.rejects - 1
        raise KitError(f"{self.path}:{r.no}: {r.why}"
                       + (f" (and {more} more rows)" if more else "")
                       + "; pass --filter to drop such rows")
