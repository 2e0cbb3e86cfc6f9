"""Strings: an immutable tuple of str held as one UTF-8 buffer and an offsets array."""

from __future__ import annotations

import numpy as np

_CHUNK = 65536  # rows joined at a time when a column is built or reordered


class Strings:
    """A tuple of str at ~1 byte a character and 8 bytes a row (a tuple of str costs ~57 bytes a
    row more): a dataset's accessions and sequences, millions of short strings, kept this way."""

    __slots__ = ("_buf", "_off", "_hash")

    def __init__(self, values=()):
        if isinstance(values, Strings):
            self._buf, self._off, self._hash = values._buf, values._off, values._hash
            return
        parts, lengths = [], []
        batch = []
        for v in values:
            if not isinstance(v, str):
                raise TypeError(f"Strings holds str, not {type(v).__name__}")
            batch.append(v.encode())
            if len(batch) == _CHUNK:
                parts.append(b"".join(batch))
                lengths.extend(map(len, batch))
                batch = []
        parts.append(b"".join(batch))
        lengths.extend(map(len, batch))
        self._set(b"".join(parts), np.fromiter(lengths, dtype=np.int64, count=len(lengths)))

    def _set(self, buf, lengths) -> None:
        off = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=off[1:])
        self._buf, self._off, self._hash = buf, off, None

    @classmethod
    def from_file(cls, f, order=None, window: int = 2**25) -> Strings:
        """The rows of the open binary file ``f`` (each ended by b"\\n", UTF-8), in ``order`` (file
        order when None): read ``window`` bytes at a time and each row copied into its place in
        one buffer, so that the peak is that buffer and a window, never the file twice."""
        f.seek(0)
        blocks: list[np.ndarray] = []  # each window's row ends, as offsets in the file
        at = 0
        while block := f.read(window):
            blocks.append(np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10) + at)
            at += len(block)
        ends = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.int64)
        starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64)
        order = np.arange(len(ends)) if order is None else np.asarray(order, dtype=np.int64)
        lengths = ends - starts
        out = cls.__new__(cls)
        out._set(bytearray(int(lengths.sum())), lengths[order])
        place = np.empty(len(ends), dtype=np.int64)  # where each file row goes in the buffer
        place[order] = out._off[:-1]
        buf, lo = out._buf, 0
        while lo < len(ends):  # rows [lo, hi): whole rows within one window of the file
            hi = max(lo + 1, int(np.searchsorted(ends, starts[lo] + window, side="right")))
            base = int(starts[lo])
            f.seek(base)
            data = f.read(int(ends[hi - 1]) - base)
            for a, b, p in zip(
                (starts[lo:hi] - base).tolist(),
                (ends[lo:hi] - base).tolist(),
                place[lo:hi].tolist(),
                strict=True,
            ):
                buf[p : p + b - a] = data[a:b]
            lo = hi
        return out

    def take(self, order) -> Strings:
        """The rows in ``order`` (an array of row positions)."""
        return _gather(self._buf, self._off[:-1], self._off[1:], order)

    def __len__(self) -> int:
        return len(self._off) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                return Strings(self[j] for j in range(start, stop, step))
            stop = max(start, stop)
            out = Strings.__new__(Strings)
            a, b = int(self._off[start]), int(self._off[stop])
            out._buf, out._off, out._hash = self._buf[a:b], self._off[start : stop + 1] - a, None
            return out
        n = len(self)
        i = int(i)
        if not -n <= i < n:
            raise IndexError("Strings index out of range")
        i %= n
        return self._buf[self._off[i] : self._off[i + 1]].decode()

    def __iter__(self):
        buf, off = self._buf, self._off.tolist()
        for a, b in zip(off, off[1:], strict=False):
            yield buf[a:b].decode()

    def __contains__(self, value) -> bool:
        return any(v == value for v in self)

    def __eq__(self, other):
        if isinstance(other, Strings):
            return self._buf == other._buf and np.array_equal(self._off, other._off)
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:  # equal to a tuple of the same strings, so hashes as that tuple
        if self._hash is None:
            self._hash = hash(tuple(self))
        return self._hash

    def __repr__(self) -> str:
        shown = ", ".join(repr(v) for v in self[:3])
        return f"Strings([{shown}{', ...' if len(self) > 3 else ''}], n={len(self)})"

    def __reduce__(self):
        return Strings, (tuple(self),)


def _gather(data: bytes, starts, ends, order=None) -> Strings:
    """Strings of ``data[starts[i]:ends[i]]`` for i in ``order`` (every row when None), copied
    ``_CHUNK`` rows at a time into one buffer (a bytearray: it is never handed out)."""
    order = np.arange(len(ends)) if order is None else np.asarray(order, dtype=np.int64)
    lengths = (ends - starts)[order]
    buf, at = bytearray(int(lengths.sum())), 0  # filled in place: never the chunks and a join
    for i in range(0, len(order), _CHUNK):
        o = order[i : i + _CHUNK]
        part = b"".join(
            [data[a:b] for a, b in zip(starts[o].tolist(), ends[o].tolist(), strict=True)]
        )
        buf[at : at + len(part)] = part
        at += len(part)
    out = Strings.__new__(Strings)
    out._set(buf, lengths)
    return out
