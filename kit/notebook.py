"""kit in a notebook: ``kit.open()`` and pandas DataFrames of runs, pairs, budget, verdicts,
stages and advice, computed by the same library functions as the CLI's ``--json``.

    import kit
    k = kit.open()                 # $KIT_HOME, or kit.open("/path/to/home")
    k.budget()                     # one row per factor
    k.pairs("threads")             # one row per pair, every measure of its comparison
    k.homology()                   # the verdicts under a cluster bootstrap (kit data homology)
    k.budget(pipeline="lab.py")    # a lab's own pipeline (kit run --pipeline): file or hash prefix
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .app.facade import Kit
from .core.errors import KitError, NotFound
from .core.subject import Subject
from .views.frames import (
    advice_frame,
    budget_frame,
    pairs_frame,
    records_frame,
    runs_frame,
    stages_frame,
    verdicts_frame,
)
from .views.verbs import as_json

__all__ = ["KitError", "Notebook", "open"]  # KitError: what every reader raises, one line

# the CLI's line when both kinds are named, in the notebook's words
_CLASH = "pipeline= and dataset= choose two different things: give one"


class Notebook:
    """One KIT_HOME read as DataFrames: kit.Kit (``.kit``, every verb's record) plus frames of
    its records, computed as the CLI's ``--json`` is. ``dataset``: a stored dataset's name or
    sha256 prefix; by default the most recent run's, as the CLI chooses. Every frame of one
    dataset or pipeline says which: ``.attrs["dataset"]`` (or ``["pipeline"]``),
    ``.attrs["chosen"]`` (why that one) and a first column of its name."""

    def __init__(self, home=None):
        self.kit = Kit(home)

    @property
    def store(self):
        """The home's store (kit.Kit's)."""
        return self.kit.store

    def __repr__(self):
        names = [d.get("name", h[:12]) for h, d in self.kit.own_datasets().items()]
        runs = len(self.kit.runs().runs)
        return f"<kit store {self.kit.store.root}: {runs} runs; datasets {names}>"

    def _dataset(self, dataset: str | None) -> Subject:
        """Kit's own runs' dataset ``dataset`` (a name or hash prefix), else the CLI's default
        (a lab pipeline's hash is chosen by pipeline=, not here)."""
        if dataset is not None:
            subject = self.kit.dataset(dataset)
            self._read = ("dataset", subject.summary.get("name") or subject.sha256[:12], "as asked")
            return subject
        if not self.kit.has_dataset_runs():
            raise NotFound("the store is empty: run `kit run --factor repeat` first")
        picked = self.kit.subject()
        # the CLI's choice in the CLI's words, said with the keyword a notebook takes
        self._read = (
            "dataset",
            (picked.summary.get("name") or picked.sha256[:12]),
            picked.why.replace("--dataset NAME [--n N]", "dataset=NAME"),
        )
        return picked

    def _pipeline(self, pipeline: str, dataset: str | None) -> Subject:
        """The Subject of a lab pipeline (a file or a stored hash prefix), as the CLI reads it."""
        subject = self.kit.subject(dataset, pipeline=pipeline, clash=_CLASH)
        self._read = ("pipeline", subject.name, "as asked")
        return subject

    def _said(self, frame):
        """``frame`` stamped with what it read: ``attrs`` "dataset" or "pipeline" (its name),
        "chosen" (why that one, as the CLI says it: the default is the most recent run's), and a
        column of the name, so that frames of two datasets concatenated keep it apart."""
        if frame is None:
            return None
        kind, name, why = self._read
        frame.attrs.update({kind: name, "chosen": why})
        frame.insert(0, kind, name) if kind not in frame.columns else None
        return frame

    def datasets(self):
        return records_frame(list(self.kit.stored_datasets().values()), "sha256")

    def runs(self, dataset: str | None = None, pipeline: str | None = None):
        if pipeline is not None:
            rec = self.kit.runs(self._pipeline(pipeline, dataset))
            return self._said(runs_frame(as_json(list(rec.runs))))
        if dataset is None:  # every stored run: of no one dataset
            return runs_frame(as_json(list(self.kit.runs().runs)))
        return self._said(runs_frame(as_json(list(self.kit.runs(self._dataset(dataset)).runs))))

    def pairs(self, factor: str | None = None, dataset: str | None = None):
        rows = self.kit.pairs(self._dataset(dataset), factor)
        return self._said(pairs_frame(as_json(list(rows))))

    def budget(self, dataset: str | None = None, pipeline: str | None = None):
        """One row per factor; with ``pipeline`` (a file or hash prefix), one row per factor
        and output of that pipeline, its largest difference in its kind's measures."""
        if pipeline is None:
            return self._said(budget_frame(as_json(self.kit.budget(self._dataset(dataset)).data)))
        b = self.kit.budget(self._pipeline(pipeline, dataset)).data
        rows = [
            {
                "factor": f,
                "output": n,
                "kind": o["kind"],
                "pairs": r["pairs"],
                "pairs_changed": o["changed"],
                **(o["worst"] or {}),
            }
            for f, r in b["factors"].items()
            for n, o in r["outputs"].items()
        ]
        frame = pd.DataFrame(rows, columns=None if rows else ["factor", "output"])
        frame.attrs.update(loose=b["loose"], loose_line=b["loose_line"], shapes=b["shapes"])
        return self._said(frame.set_index(["factor", "output"]))

    def verdicts(self, dataset: str | None = None, pipeline: str | None = None):
        """The stability of each verdict per run set; with ``pipeline``, one row per factor and
        verdict of its models (``.attrs``: models, truth, accuracy spread per factor)."""
        if pipeline is None:
            return self._said(
                verdicts_frame(as_json(self.kit.verdicts(self._dataset(dataset)).data))
            )
        v = self.kit.verdicts(self._pipeline(pipeline, dataset)).data
        rows = [
            {
                "factor": f,
                "verdict": k,
                "pairs": r["pairs"],
                "changed": row["changed"],
                "stable": row["stable"],
                **row["counts"],
            }
            for f, r in v["factors"].items()
            for k, row in r["verdicts"].items()
        ]
        frame = pd.DataFrame(rows, columns=None if rows else ["factor", "verdict"])
        frame.attrs.update(
            models=v["models"],
            truth=v["truth"],
            why=v["why"],
            spread={f: r["spread"] for f, r in v["factors"].items()},
        )
        return self._said(frame.set_index(["factor", "verdict"]))

    def advice(self, dataset: str | None = None, pipeline: str | None = None):
        if pipeline is not None:
            steps = self.kit.advise(self._pipeline(pipeline, dataset)).data["steps"]
            return self._said(pd.DataFrame(steps))
        return self._said(advice_frame(self.kit.advise(self._dataset(dataset)).data))

    def _homology(self, subject: Subject, identity=None, coverage=None, data=None) -> Any:
        """The summary of the subject's reading under homology; None: kit's own dataset has no
        clustering stored (`kit data homology` makes it)."""
        try:
            r = self.kit.homology(subject, identity, coverage, data).data
        except NotFound:
            if subject.kind == "pipeline":
                raise
            return None
        return r["summary"] if subject.kind == "pipeline" else r

    def homology(
        self,
        dataset: str | None = None,
        identity: float | None = None,
        coverage: float | None = None,
        pipeline: str | None = None,
        data: str | None = None,
    ):
        """The twelve verdicts under the protein and the cluster bootstrap (one row each), on
        the dataset's stored clustering (`kit data homology` makes it); None without one.
        ``.attrs`` holds the clustering, the leakage split per model and the summary figures.
        With ``pipeline``: its models' verdicts, its runs' protein ids read in ``data``'s
        clustering (default: as `kit homology --pipeline` chooses; KitError without one)."""
        subject = (
            self._pipeline(pipeline, dataset) if pipeline is not None else self._dataset(dataset)
        )
        h = self._homology(subject, identity, coverage, data)
        if h is None:
            return None
        j = h.to_json()
        frame = (
            pd.json_normalize(j["verdicts"])
            if j["verdicts"]  # one model: no pair
            else pd.DataFrame(columns=["verdict"])
        ).set_index("verdict")
        frame.attrs.update(
            {
                k: j[k]
                for k in (
                    "clustering",
                    "models",
                    "too_narrow",
                    "rest_on_homologs",
                    "runs",
                    "left_out",
                )
            }
        )
        return self._said(frame)

    def leakage(self, dataset: str | None = None):
        """Per model: accuracy and AUC on test proteins with and without a train homolog."""
        h = self._homology(self._dataset(dataset))
        return None if h is None else self._said(pd.DataFrame(h.to_json()["models"]).T)

    def stages(self, run: str):
        return stages_frame(self.kit.stored_run(run))

    def array(self, run: str, stage: str):
        """A stored array (verified on read), e.g. ``k.array(run, "svd_rand")``."""
        return self.kit.array(run, stage)


def open(home=None) -> Notebook:  # noqa: A001  (kit.open, as the issue and the docs name it)
    return Notebook(home)
