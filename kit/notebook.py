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

import os

from .core.errors import KitError
from .views.frames import (
    advice_frame,
    budget_frame,
    pairs_frame,
    records_frame,
    runs_frame,
    stages_frame,
    verdicts_frame,
)
from .worker.names import unknown


class Kit:
    """One KIT_HOME's store, read as DataFrames. ``dataset``: a stored dataset's name or sha256
    prefix; by default the most recent run's, as the CLI chooses. Every frame of one dataset or
    pipeline says which: ``.attrs["dataset"]`` (or ``["pipeline"]``), ``.attrs["chosen"]`` (why
    that one) and a first column of its name."""

    def __init__(self, home=None):
        from .runs.store import Store

        if home is not None:  # as if KIT_HOME had been set before Python started
            os.environ["KIT_HOME"] = str(home)
        self.store = Store()

    def __repr__(self):
        from .app.selection import own_datasets

        names = [d.get("name", h[:12]) for h, d in own_datasets(self.store).items()]
        return f"<kit store {self.store.root}: {len(self.store.runs())} runs; datasets {names}>"

    def _dataset(self, dataset: str | None) -> str:
        from .app.selection import own_datasets, select_dataset

        known = own_datasets(self.store)  # a lab pipeline's hash is chosen by pipeline=, not here
        if dataset is None:
            if self.store.latest_dataset() is None:
                raise KitError("the store is empty: run `kit run --factor repeat` first")
            # the CLI's choice in the CLI's words, said with the keyword a notebook takes
            picked = select_dataset(self.store)
            self._read = (
                "dataset",
                (picked.summary.get("name") or picked.sha256[:12]),
                picked.why.replace("--dataset NAME [--n N]", "dataset=NAME"),
            )
            return picked.sha256
        hits = [h for h, d in known.items() if d.get("name") == dataset or h.startswith(dataset)]
        if len(hits) != 1:
            names = [d.get("name", h[:12]) for h, d in known.items()]
            raise KitError(
                unknown(
                    f"{'no' if not hits else 'more than one'} stored dataset",
                    dataset,
                    names if not hits else (),
                    f" (stored: {', '.join(names) or 'none'})",
                )
            )
        self._read = ("dataset", known[hits[0]].get("name") or hits[0][:12], "as asked")
        return hits[0]

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

    def _lab(self, pipeline: str, dataset: str | None) -> tuple:
        """(budget, verdicts) of a lab pipeline, as `kit budget --pipeline` reads them."""
        from .analysis.budget import output_budget
        from .analysis.verdicts import output_verdicts

        subject = self._pipeline(pipeline, dataset)
        return output_budget(self.store, subject), output_verdicts(self.store, subject)

    def _pipeline(self, pipeline: str, dataset: str | None):
        """The Subject of a lab pipeline (a file or a stored hash prefix), as the CLI reads it."""
        from .app.selection import pipeline_or_dataset, select_pipeline
        from .core.subject import of_pipeline

        pipeline_or_dataset(pipeline, dataset, words=("pipeline=", "dataset="))
        subject = of_pipeline(select_pipeline(self.store, pipeline))
        self._read = ("pipeline", subject.name, "as asked")
        return subject

    def datasets(self):
        return records_frame(list(self.store.datasets().values()), "sha256")

    def runs(self, dataset: str | None = None, pipeline: str | None = None):
        from .runs.store.records import as_json

        if pipeline is not None:
            from .app.selection import pipeline_runs

            sha = self._lab(pipeline, dataset)[0]["pipeline"]
            return self._said(runs_frame(as_json(pipeline_runs(self.store, sha))))
        if dataset is None:  # every stored run: of no one dataset
            return runs_frame(as_json(self.store.runs()))
        return self._said(runs_frame(as_json(self.store.runs(self._dataset(dataset)))))

    def pairs(self, factor: str | None = None, dataset: str | None = None):
        from .analysis.budget import pair_details
        from .runs.store.records import as_json

        sha = self._dataset(dataset)
        return self._said(pairs_frame(as_json(pair_details(self.store, sha, factor))))

    def budget(self, dataset: str | None = None, pipeline: str | None = None):
        """One row per factor; with ``pipeline`` (a file or hash prefix), one row per factor
        and output of that pipeline, its largest difference in its kind's measures."""
        from .analysis.budget import budget
        from .runs.store.records import as_json

        if pipeline is not None:
            import pandas as pd

            b = self._lab(pipeline, dataset)[0]
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

        sha = self._dataset(dataset)
        return self._said(
            budget_frame(as_json(budget(self.store, sha, self.store.datasets().get(sha))))
        )

    def verdicts(self, dataset: str | None = None, pipeline: str | None = None):
        """The stability of each verdict per run set; with ``pipeline``, one row per factor and
        verdict of its models (``.attrs``: models, truth, accuracy spread per factor)."""
        from .analysis.verdicts import stability_report
        from .runs.store.records import as_json

        if pipeline is not None:
            import pandas as pd

            v = self._lab(pipeline, dataset)[1]
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

        sha = self._dataset(dataset)
        return self._said(verdicts_frame(as_json(stability_report(self.store, sha))))

    def advice(self, dataset: str | None = None, pipeline: str | None = None):
        from .analysis.advice import advise
        from .analysis.budget import budget

        if pipeline is not None:
            import pandas as pd

            from .analysis.advice import output_advice

            return self._said(pd.DataFrame(output_advice(*self._lab(pipeline, dataset))["steps"]))

        sha = self._dataset(dataset)
        return self._said(
            advice_frame(
                advise(self.store, sha, budget(self.store, sha, self.store.datasets().get(sha)))
            )
        )

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
        import pandas as pd

        if pipeline is not None:
            from .analysis.homology import find_clustering, output_homology

            subject = self._pipeline(pipeline, dataset)
            r = output_homology(
                self.store, subject, *find_clustering(self.store, subject, data, identity, coverage)
            )
            h = r["summary"]
        else:
            from .analysis.homology import for_dataset

            h = for_dataset(self.store, self._dataset(dataset), identity, coverage)
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
        import pandas as pd

        from .analysis.homology import for_dataset

        h = for_dataset(self.store, self._dataset(dataset))
        return None if h is None else self._said(pd.DataFrame(h.to_json()["models"]).T)

    def stages(self, run: str):
        hits = [r for r in self.store.runs() if r.id.startswith(run)]
        if len(hits) != 1:
            raise KitError(f"{'no' if not hits else 'more than one'} run {run!r} stored")
        return stages_frame(hits[0])

    def array(self, run: str, stage: str):
        """A stored array (verified on read), e.g. ``k.array(run, "svd_rand")``."""
        return self.store.array(run, stage)


def open(home=None) -> Kit:  # noqa: A001  (kit.open, as the issue and the docs name it)
    return Kit(home)
