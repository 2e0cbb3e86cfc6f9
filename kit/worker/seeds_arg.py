"""The seeds a lab's run receives: a plain dict of {name: int} that remembers which were read."""

from __future__ import annotations


class UnknownSeed(KeyError):
    """run read a seed SEEDS does not name (kit.worker.contract says so in one line); ``name``
    is the key it asked for."""

    def __init__(self, name: object):
        super().__init__(name)
        self.name = name


class Seeds(dict):
    """The seeds run receives: a plain dict that remembers which names were read (iterating it
    counts as reading them all: which one was used then cannot be told)."""

    def __init__(self, items):
        super().__init__(items)
        self.read = set()

    def __getitem__(self, k):
        if k not in self:
            raise UnknownSeed(k)
        self.read.add(k)
        return super().__getitem__(k)

    def get(self, k, default=None):
        if k in self:
            self.read.add(k)
        return super().get(k, default)

    def _all(self):
        self.read.update(dict.keys(self))

    def __iter__(self):
        self._all()
        return super().__iter__()

    def keys(self):
        self._all()
        return super().keys()

    def values(self):
        self._all()
        return super().values()

    def items(self):
        self._all()
        return super().items()

    def copy(self):
        self._all()
        return dict(dict.items(self))
