"""Which dataset a read command shows, and why: the one named, or the most recent run's."""

from __future__ import annotations

from dataclasses import dataclass

from ..data import load_dataset
from ..data.dataset import SYNTHETIC
from ..core.errors import KitError
from ..runs.store import Store


@dataclass(frozen=True)
class Selection:
    sha256: str
    summary: dict
    why: str      # shown beside the dataset's name: a read command never surprises


def _base_name(summary: dict) -> str:
    """The name to load a stored run's dataset by again: synthetic-600 -> synthetic, x[:10] -> x."""
    if summary.get("source") == SYNTHETIC:
        return SYNTHETIC
    return str(summary.get("name", "")).split("[:")[0]


def load_name(summary: dict) -> str:
    """How a user names a stored run's dataset on the command line: 'synthetic --n 600',
    'mine', 'mine --n 500' (a head of it)."""
    base = _base_name(summary) or "NAME"
    name = str(summary.get("name", ""))
    cut = base == SYNTHETIC or "[:" in name
    return base + (f" --n {summary['rows']}" if cut and summary.get("rows") else "")


def select_dataset(store: Store, name: str | None = None, n: int | None = None) -> Selection:
    """The dataset ``name`` (at ``n`` proteins), else the most recent run's (at ``n`` if given)."""
    if name:
        ds = load_dataset(name, n, generate=False)
        summary = store.datasets().get(ds.sha256) or ds.summary()
        return Selection(ds.sha256, summary, "as asked")
    latest = store.latest_dataset()
    if latest is None:
        raise KitError("the store is empty: run `kit run --factor repeat` first")
    summary = store.datasets().get(latest, {"sha256": latest})
    others = len(store.datasets()) - 1
    more = (f"; {others} other dataset(s) stored, `kit runs` lists them" if others > 0 else "")
    if n is None:
        return Selection(latest, summary, "the most recent run's; --dataset NAME [--n N] chooses"
                         + more)
    base = _base_name(summary)
    if not base:
        raise KitError("--n needs --dataset here: the most recent run's dataset has no name")
    ds = load_dataset(base, n, generate=False)
    return Selection(ds.sha256, store.datasets().get(ds.sha256) or ds.summary(),
                     f"the most recent run's dataset, {base}, at --n {n}")


def opening_dataset(store: Store, default_n: int) -> tuple:
    """(name, n) the TUI opens on: the most recent run's dataset, as the read commands show
    by default; on an empty store the built-in set at ``default_n``."""
    latest = store.latest_dataset()
    summary = store.datasets().get(latest, {}) if latest else {}
    base = _base_name(summary) if summary else ""
    if base and summary.get("rows"):
        return base, int(summary["rows"])
    return SYNTHETIC, default_n
