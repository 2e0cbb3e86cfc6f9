"""The store of runs: the SQLite index (``index``), content-addressed arrays (``blobs``), the
one locked connection (``locked``), its schema versions (``schema``), the records it hands out
(``records``), and its check and repair (``check``)."""

from .blobs import DamagedArray, array_sha256
from .index import Store
from .records import DatasetSummary, Stage, StoredPair, StoredRun

__all__ = [
    "Store",
    "StoredRun",
    "StoredPair",
    "Stage",
    "DatasetSummary",
    "DamagedArray",
    "array_sha256",
]
