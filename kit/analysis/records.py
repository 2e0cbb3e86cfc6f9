"""What analysis hands out: comparisons, budget rows and verdicts as records (dicts only at
the JSON edge, ``to_json()``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # digits imports numpy: its type only, for annotations
    from .digits import Agreement


def _keys(d: dict[str, Any], sort: bool) -> dict[str, Any]:
    return dict(sorted(d.items())) if sort else d


@dataclass(frozen=True)
class EmbeddingDiff:
    """Two runs' embeddings (one SVD) after sign alignment."""

    rel_fro: float  # the whole embedding's relative difference
    sign_flips: int
    components: list[float]  # each column's relative difference
    values: list[float] | None  # each singular value's (None: a perturbed run has none)
    sv_rel_max: float | None

    def to_json(self, sort: bool = False) -> dict[str, Any]:
        return _keys(asdict(self), sort)


@dataclass(frozen=True)
class ModelDiff:
    """One model's test-set predictions in two runs."""

    flips: int
    max_dp: float
    one_class_a: bool  # it predicted one class for every protein in run a
    one_class_b: bool
    acc_a: float
    acc_b: float
    d_acc: float
    auc_a: float  # NaN when the test set holds one class
    auc_b: float
    d_auc: float

    def to_json(self, sort: bool = False) -> dict[str, Any]:
        return _keys(asdict(self), sort)


@dataclass(frozen=True)
class Comparison:
    """How far two runs differ; a measure their kind of run lacks is None (a torch run has no
    embedding, a perturbed one no ARPACK embedding, k-means or neighbours)."""

    identical: dict[str, bool]  # {display stage: bitwise identical}
    n_test: int
    embedding: str  # the SVD the models used: "svd_rand" or "svd_arpack"
    svd_rand: EmbeddingDiff | None = None
    svd_arpack: EmbeddingDiff | None = None
    digits: dict[str, Agreement] = field(default_factory=dict)  # {stage: digits kept}
    kmeans_ari: float | None = None
    kmeans_inertia_rel: float | None = None
    knn_jaccard: float | None = None
    models: dict[str, ModelDiff] = field(default_factory=dict)
    env_diff: dict[str, list[Any]] = field(default_factory=dict)  # {attribute: [a, b]}
    # True: a run's arrays are not here (a hash-only bundle), so only ``identical`` (from the
    # recorded stage digests), ``n_test`` and ``env_diff`` are known; None (left out) otherwise
    digests_only: bool | None = None
    # True: the two runs were tested on different proteins (another split seed), so nothing of
    # them is compared (``identical`` and ``models`` are empty); None (left out) otherwise
    different_test: bool | None = None
    # read back from the store's cache, whose JSON has sorted keys: the JSON edge writes it
    # back so, and a fresh one in the order it was measured, as before there were records
    cached: bool = field(default=False, compare=False, repr=False)

    @property
    def used(self) -> EmbeddingDiff | None:
        """The comparison of the embedding the models used (None for torch runs)."""
        return self.svd_arpack if self.embedding == "svd_arpack" else self.svd_rand

    @classmethod
    def from_cache(cls, d: dict[str, Any]) -> Comparison:
        emb: dict[str, EmbeddingDiff] = {
            k: EmbeddingDiff(**d[k]) for k in ("svd_rand", "svd_arpack") if k in d
        }
        models = {m: ModelDiff(**v) for m, v in d["models"].items()}
        fields_: dict[str, Any] = {**d, **emb, "models": models}
        return cls(**fields_, cached=True)

    def to_json(self) -> dict[str, Any]:
        """The measures a pair lacks left out, keys in the order described at ``cached``."""
        out: dict[str, Any] = {}
        sort = self.cached
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "cached" or (v is None and f.default is None):
                continue
            out[f.name] = (
                {m: x.to_json(sort) for m, x in v.items()}
                if f.name == "models"
                else v.to_json(sort)
                if isinstance(v, EmbeddingDiff)
                else v
            )
        return _keys(out, sort)


@dataclass(frozen=True)
class ModelBudget:
    """One model's predictions over a factor's pairs."""

    flips_median: float | None = None
    flips_max: int = 0
    max_dp: float = 0.0
    max_abs_d_acc: float = 0.0
    flips_median_seed_units: float | None = None  # None: no seed unit for this model
    flips_max_seed_units: float | None = None
    one_class_runs: int = 0  # runs in which it predicted a single class


@dataclass(frozen=True)
class BudgetRow:
    """One factor (at one level) over its pairs. A measure that the pairs' runs lack is None
    (a torch run has no embedding, a perturbed one no k-means, a torch pair no verdicts)."""

    factor: str
    level: str = ""
    pairs: int = 0
    labels: list[str] = field(default_factory=list)
    n_test: int = 0
    stages: list[str] = field(default_factory=list)
    identical: dict[str, int] = field(default_factory=dict)  # {stage: pairs identical there}
    all_identical: int = 0  # pairs identical at every stage
    emb_rel_max: float | None = None
    emb_rel_median: float | None = None
    emb_rel_seed_units: float | None = None
    arpack_rel_max: float | None = None
    runs: list[str] = field(default_factory=list)
    sv_rel_max: float | None = None
    digits_min: dict[str, float] = field(default_factory=dict)
    emb_digits_min: float | None = None
    components_median: list[float] | None = None
    values_median: list[float] | None = None
    sign_flips_max: int | None = None
    kmeans_ari_min: float | None = None
    kmeans_ari_median: float | None = None
    knn_jaccard_min: float | None = None
    knn_jaccard_median: float | None = None
    models: dict[str, ModelBudget] = field(default_factory=dict)
    verdicts_changed_max: int | None = None
    verdict_changes: dict[str, int] = field(default_factory=dict)  # {verdict: pairs}
    confounds: dict[str, list[str]] = field(default_factory=dict)  # {attribute: [a -> b]}
    # a factor that changes what is measured (seed:split): its runs' accuracy spread and verdict
    # stability (kit.analysis.splits); None, and left out of the JSON, for every other row
    splits: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        if d["splits"] is None:
            del d["splits"]
        return d


@dataclass(frozen=True)
class RunVerdict:
    """One run's verdict in a stability row: the difference of the two models, its 95%
    interval, and which way it points (">", "<" or "=")."""

    run: str
    label: str
    diff: float
    lo: float
    hi: float
    verdict: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Verdict:
    """One of the twelve verdicts over a set of run groups: does it hold within every group?"""

    verdict: str  # its key, e.g. "hgb-mlp acc"
    runs: int  # distinct runs
    groups: int
    groups_changed: int  # groups whose runs disagree on it
    counts: dict[str, int]  # {">": runs, "<": runs, "=": runs}
    stable: bool
    per_run: list[RunVerdict]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ClusterVerdict:
    """One run's verdict under the protein bootstrap and under the cluster bootstrap."""

    verdict: str  # its key, e.g. "hgb-mlp acc"
    diff: float  # the two models' difference on the whole test set (both share it)
    protein_lo: float
    protein_hi: float
    protein_verdict: str  # ">", "<" or "="
    cluster_lo: float
    cluster_hi: float
    cluster_verdict: str
    width_ratio: (
        float | None
    )  # cluster width / protein width; None: the protein interval is a point
    changed: bool  # the verdict differs under clusters
    lost: bool = False  # ... and what was significant (">" or "<") is not under clusters

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ModelLeakage:
    """One model in one run: accuracy and AUC on the test proteins whose cluster holds a train
    protein against those whose cluster does not. None where a side cannot say: no protein on
    it (accuracy, AUC) or one class only (AUC)."""

    n_with: int
    n_without: int
    acc_with: float | None
    acc_without: float | None
    auc_with: float | None
    auc_without: float | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class HomologyModel:
    """One model over a dataset's runs: medians of its leakage split, with [min, max] ranges
    (None where no run could measure it)."""

    acc_with_homolog: float | None
    acc_without_homolog: float | None
    auc_with_homolog: float | None
    auc_without_homolog: float | None
    acc_with_homolog_range: list[float] | None  # [min, max]
    acc_without_homolog_range: list[float] | None
    auc_with_homolog_range: list[float] | None
    auc_without_homolog_range: list[float] | None


@dataclass(frozen=True)
class HomologyVerdict:
    """One of the twelve verdicts over a dataset's runs, under proteins and under clusters."""

    verdict: str
    width_ratio: float | None  # median over the runs that have one
    width_ratio_range: list[float] | None
    changed: int  # runs whose verdict differs under clusters
    lost: int  # ... runs where a significant verdict is not under clusters
    runs: int
    diff: float | None  # median (None: no run measured)
    protein: dict[str, float | None]  # {"lo", "hi"}: medians
    cluster: dict[str, float | None]


@dataclass(frozen=True)
class HomologySummary:
    """What `kit homology` shows for a dataset's runs with verdicts: leakage and both bootstraps."""

    dataset: str
    runs: int
    n_with_homolog: int  # test proteins whose cluster holds a train protein
    n_without_homolog: int
    models: dict[str, HomologyModel]
    verdicts: list[HomologyVerdict]  # in kit's order of the twelve
    too_narrow: float | None  # median width ratio over every verdict and run
    rest_on_homologs: int  # significant verdicts that are not under clusters in some run
    significant_only_under_clusters: int = 0  # "=" that turns significant (read with care)
    n_with_homolog_range: list[float] | None = None  # over the runs (re-splits differ)
    n_without_homolog_range: list[float] | None = None
    left_out: list[Any] = field(default_factory=list)  # run ids, with why (kit.analysis.homology)
    clustering: dict[str, Any] = field(
        default_factory=dict
    )  # kit.data.homology.Clustering.summary()

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
