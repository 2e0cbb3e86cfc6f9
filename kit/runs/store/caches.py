"""The store's two caches (comparisons, verdicts), each row sealed by a digest of what it came from.

A cached row holds ``{"digest": D, "result": R}`` where D is the sha256 of the measure's name and
version, the runs' recorded stages (hash, dtype, shape) and manifests, and R itself. A row whose
digest does not match (computed from other runs' numbers, edited by hand, written before digests
existed, or imported from elsewhere) is treated as absent: the caller recomputes it from the
arrays and writes it again. The digest does not make a row secret; it makes a stale or edited
row noticed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .locked import LockedConnection


Key = int | str  # a cache row's version: the measure's, or a cluster bootstrap's text key


def _canonical(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()


class Caches:
    """Mixed into the Store: needs ``self.db`` (the locked connection), ``self._tx`` and
    ``self.read_only`` (nothing is cached in a store this user cannot write)."""

    db: LockedConnection  # sqlite3's, behind the store's lock
    read_only: bool
    _tx: Callable[..., AbstractContextManager[LockedConnection]]  # (count=True): Store._tx

    def _basis(self, run: str) -> str:
        """What a run's numbers are computed from: its stages' records and its manifest."""
        h = hashlib.sha256(run.encode())
        for row in self.db.execute(
            "SELECT stage, sha256, dtype, shape FROM stages WHERE run=? ORDER BY stage", (run,)
        ):
            h.update(_canonical(list(row)))
        row = self.db.execute("SELECT manifest FROM runs WHERE id=?", (run,)).fetchone()
        # a damaged page's text came back with surrogates (locked.py): hashed, never raised on
        h.update(b"manifest:" + (row[0].encode("utf-8", "surrogateescape") if row else b"none"))
        return h.hexdigest()

    def _digest(self, kind: str, version: Key, runs: tuple[str, ...], result: object) -> str:
        h = hashlib.sha256(f"{kind}:{version}".encode())
        for r in runs:
            h.update(self._basis(r).encode())
        h.update(_canonical(result))
        return h.hexdigest()

    def _sealed(
        self, kind: str, version: Key, runs: tuple[str, ...], text: str | None
    ) -> dict[str, Any] | None:
        """The cached result if its digest holds, else None (recompute it)."""
        if text is None:
            return None
        try:
            row = json.loads(text)
            result, digest = row["result"], row["digest"]
        except (ValueError, TypeError, KeyError):
            return None
        if not isinstance(result, dict) or digest != self._digest(kind, version, runs, result):
            return None  # every result cached is an object: another is no cache of kit's
        return result

    def _seal(self, kind: str, version: Key, runs: tuple[str, ...], result: dict[str, Any]) -> str:
        result = json.loads(_canonical(result))  # what a reader will see, digested as read back
        return json.dumps(
            {"digest": self._digest(kind, version, runs, result), "result": result}, sort_keys=True
        )

    # -- comparisons: one per ordered pair of runs and measure version --------------------------
    def comparison(self, a: str, b: str, version: int) -> dict[str, Any] | None:
        row = self.db.execute(
            "SELECT result FROM comparisons WHERE a=? AND b=? AND version=?", (a, b, version)
        ).fetchone()
        return self._sealed("comparison", version, (a, b), row and row[0])

    def cache_comparison(self, a: str, b: str, version: int, result: dict[str, Any]) -> None:
        if self.read_only:  # computed again next time: reading needs no write
            return
        sealed = self._seal("comparison", version, (a, b), result)
        with self._tx(count=False) as db:  # derived, checked by its digest as it is read
            db.execute(
                "INSERT OR REPLACE INTO comparisons VALUES (?,?,?,?)", (a, b, version, sealed)
            )

    # -- verdicts: one per run and bootstrap version (and clustering, for the cluster bootstrap) --
    # A cluster bootstrap's row is keyed by the version and the clustering's digest folded into
    # one text key, "VERSION:cluster:DIGEST" (SQLite keeps text in the INTEGER column as text):
    # the protein bootstrap's rows, keyed by the bare version, are untouched by it.
    @staticmethod
    def _verdicts_key(version: int, clustering: str | None) -> Key:
        return version if clustering is None else f"{version}:cluster:{clustering}"

    def verdicts(
        self, run: str, version: int, clustering: str | None = None
    ) -> dict[str, Any] | None:
        key = self._verdicts_key(version, clustering)
        row = self.db.execute(
            "SELECT result FROM verdicts WHERE run=? AND version=?", (run, key)
        ).fetchone()
        return self._sealed("verdicts", key, (run,), row and row[0])

    def cache_verdicts(
        self, run: str, version: int, result: dict[str, Any], clustering: str | None = None
    ) -> None:
        if self.read_only:
            return
        key = self._verdicts_key(version, clustering)
        sealed = self._seal("verdicts", key, (run,), result)
        with self._tx(count=False) as db:  # derived, checked by its digest as it is read
            db.execute("INSERT OR REPLACE INTO verdicts VALUES (?,?,?)", (run, key, sealed))
