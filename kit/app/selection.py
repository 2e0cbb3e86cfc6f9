"""What a command is about: a command's words (--dataset/--n, or --pipeline FILE.py|HASH) made
one Subject (kit.core.subject), the one place they are read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core import factors
from ..core.errors import KitError, NotFound, Refused
from ..core.subject import DATASET, PIPELINE, Subject, of_dataset, of_pipeline
from ..data import load_dataset
from ..data.dataset import SYNTHETIC
from ..data.pipelines import pipeline_info, read_pipeline
from ..runs.store import Store


@dataclass(frozen=True)
class Selection:
    sha256: str
    summary: dict
    why: str  # shown beside the dataset's name: a read command never surprises


def _base_name(summary: dict) -> str:
    """The name to load a stored run's dataset by again: synthetic-600 -> synthetic, x[:10] -> x;
    "" for a bundle's dataset that is not on this machine (kit.app.bundle.unverified): its
    "name" is a label to show, never one to load."""
    if summary.get("verified") is False:
        return ""
    if summary.get("source") == SYNTHETIC and not summary.get("split"):  # a split: its own name
        return SYNTHETIC
    return str(summary.get("name", "")).split("[:")[0]


def load_name(summary: dict) -> str:
    """How a user names a stored run's dataset on the command line: 'synthetic --n 600',
    'mine', 'mine --n 500' (a head of it)."""
    base = _base_name(summary) or "NAME"
    name = str(summary.get("name", ""))
    cut = base == SYNTHETIC or "[:" in name
    return base + (f" --n {summary['rows']}" if cut and summary.get("rows") else "")


def select_dataset(
    store: Store, name: str | None = None, n: int | None = None, first: str = "repeat"
) -> Selection:
    """The dataset ``name`` (at ``n`` proteins), else the most recent run's (at ``n`` if given);
    on an empty store, NotFound names `kit run --factor FIRST` (a command about one factor,
    `kit explain seed`, passes it: that factor's pairs are what it needs, so one run suffices)."""
    if name:
        ds = load_dataset(name, n, generate=False)
        summary = store.datasets().get(ds.sha256) or ds.summary()
        return Selection(ds.sha256, summary, "as asked")
    latest = store.latest_dataset()
    if latest is None:
        labs = sorted({s.pipeline for s in store.specs().values() if s.pipeline})
        if labs:  # a lab pipeline's runs alone: its readers take --pipeline
            raise NotFound(
                f"no dataset's runs stored, only pipeline files' ("
                f"{', '.join(h[:12] for h in labs)}): add --pipeline FILE.py|HASH"
            )

        first = first if factors.get(first) is not None else "repeat"
        raise NotFound(f"the store is empty: run `kit run --factor {first}` first")
    summary = store.datasets().get(latest, {"sha256": latest})
    others = len(store.subjects(DATASET)) - 1
    more = f"; {others} other dataset(s) stored, `kit runs` lists them" if others > 0 else ""
    if n is None:
        return Selection(
            latest, summary, "the most recent run's; --dataset NAME [--n N] chooses" + more
        )
    base = _base_name(summary)
    if not base and summary.get("verified") is False:
        raise Refused(
            f"--n needs --dataset here: the most recent run's dataset, {latest[:12]}, came in a "
            "bundle and is not on this machine, so there is none to take --n proteins of "
            "(without --n the command reads its runs)"
        )
    if not base:
        raise Refused("--n needs --dataset here: the most recent run's dataset has no name")
    ds = load_dataset(base, n, generate=False)
    return Selection(
        ds.sha256,
        store.datasets().get(ds.sha256) or ds.summary(),
        f"the most recent run's dataset, {base}, at --n {n}",
    )


def opening_dataset(store: Store, default_n: int) -> tuple:
    """(name, n) the TUI opens on: the most recent run's dataset, as the read commands show
    by default; on an empty store the built-in set at ``default_n``."""
    latest = store.latest_dataset()
    summary = store.datasets().get(latest, {}) if latest else {}
    base = _base_name(summary) if summary else ""
    if base and summary.get("rows"):
        return base, int(summary["rows"])
    return SYNTHETIC, default_n


def select_pipeline(store: Store, text: str) -> dict:
    """The lab pipeline a read command shows: a file (FILE.py, read without being stored or
    imported) or the hash prefix `kit runs` shows; its info as kit.data.pipelines records it.
    KitError, one line: no such file, or no stored pipeline with that prefix (or two)."""
    path = Path(text).expanduser()
    looks_like_hash = len(text) >= 4 and all(c in "0123456789abcdef" for c in text.lower())
    if path.is_file() or (path.exists() and not looks_like_hash):  # a FIFO, a device: refused
        return read_pipeline(path)[0]
    stored = sorted({s.pipeline for s in store.specs().values() if s.pipeline})
    if not looks_like_hash:
        raise NotFound(
            f"no pipeline file {text}: give FILE.py or the hash prefix `kit runs` "
            f"shows (at least 4 characters)"
        )
    hits = [h for h in stored if h.startswith(text.lower())]
    if len(hits) != 1:
        known = ", ".join(h[:12] for h in stored) or "none"
        raise (Refused if hits else NotFound)(
            f"{'no' if not hits else 'more than one'} stored pipeline with hash "
            f"prefix {text} (stored: {known}; `kit runs` lists them)"
        )
    try:
        return pipeline_info(hits[0])
    except KitError:  # imported runs of a file this KIT_HOME never saw: what their bundle's
        # file declared (kit.app.bundle_pipelines.summary), else what the runs say
        spec = next(s for s in store.specs().values() if s.pipeline == hits[0])
        summary = store.datasets().get(hits[0], {})
        kinds = summary.get("kinds")
        return {
            "sha256": hits[0],
            "name": summary.get("pipeline", hits[0][:12]),
            "seeds": list(spec.seed_dict),
            "kinds": kinds if isinstance(kinds, dict) else {},
            "dtype": summary.get("dtype") is True,
        }


def pipeline_or_dataset(pipeline, dataset, n=None, words=("--pipeline", "--dataset/--n")) -> None:
    """A lab pipeline reads its own data: naming a dataset too is one line (``words``: how the
    caller spells the two options, the CLI's or the notebook's)."""
    if pipeline and (dataset or n):
        raise Refused(f"{words[0]} and {words[1]} choose two different things: give one")


def pipeline_runs(store: Store, sha: str) -> list:
    """The stored runs of lab pipeline ``sha`` (never a dataset's run that shares the hash)."""
    return store.runs(sha, subject=PIPELINE)


def own_datasets(store: Store) -> dict:
    """{sha256: summary} of the datasets kit's own pipeline ran on: no lab pipeline's hash."""
    return {d.sha256: d.to_json() for d in store.subjects(DATASET)}


def select(
    store: Store,
    dataset: str | None = None,
    n: int | None = None,
    pipeline: str | None = None,
    clash: str | None = None,
    only_with_pipeline: str | None = None,
    first: str = "repeat",
) -> Subject:
    """The Subject a command's words name: ``pipeline`` (a FILE.py, or the hash prefix `kit runs`
    shows) is a lab's pipeline; else kit's own pipeline on the dataset ``dataset`` at ``n``, or
    the most recent run's (its ``why`` says which). A pipeline chosen by its file keeps the path
    in its summary's "file" (what runs it, what tolerances name), and the words as typed in
    "given". Refused, one line: both kinds named (``clash``: the command's own line for it), or
    an option ``only_with_pipeline`` (given) without --pipeline; NotFound: nothing such stored
    (``first``: the factor whose `kit run` an empty store's line names)."""
    if only_with_pipeline and not pipeline:
        raise Refused(
            f"{only_with_pipeline} goes with --pipeline FILE.py (kit's own runs: --dataset NAME)"
        )
    if pipeline:
        if clash and (dataset or n):
            raise Refused(clash)
        pipeline_or_dataset(pipeline, dataset, n)
        info = select_pipeline(store, pipeline)
        path = Path(pipeline).expanduser()
        extra = {"given": pipeline, **({"file": str(path)} if path.is_file() else {})}
        return of_pipeline(info, "as asked", {**info, **extra})
    sel = select_dataset(store, dataset, n, first)
    return of_dataset(sel.sha256, sel.summary, sel.why)


def scope(
    store: Store, dataset: str | None = None, n: int | None = None, pipeline: str | None = None
) -> Subject | None:
    """The Subject named, or None when no word names one (`kit runs` lists every run)."""
    return select(store, dataset, n, pipeline) if (dataset or n or pipeline) else None


def as_selection(subject: Subject) -> Selection:
    """A dataset Subject as the Selection kit's own analysis takes."""
    return Selection(subject.sha256, dict(subject.summary), subject.why)


def pipeline_info_of(subject: Subject) -> dict:
    """A pipeline Subject as the info dict kit's lab analysis takes (kit.data.pipelines')."""
    return {k: v for k, v in subject.summary.items() if k not in ("given", "file")}
