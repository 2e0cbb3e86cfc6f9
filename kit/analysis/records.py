"""What analysis hands out: typed budget rows (dicts only at the JSON edge, ``to_json()``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


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
    labels: list = field(default_factory=list)
    n_test: int = 0
    stages: list = field(default_factory=list)
    identical: dict = field(default_factory=dict)  # {stage: pairs identical there}
    all_identical: int = 0                         # pairs identical at every stage
    emb_rel_max: float | None = None
    emb_rel_median: float | None = None
    emb_rel_seed_units: float | None = None
    arpack_rel_max: float | None = None
    runs: list = field(default_factory=list)
    sv_rel_max: float | None = None
    digits_min: dict = field(default_factory=dict)
    emb_digits_min: float | None = None
    components_median: list | None = None
    values_median: list | None = None
    sign_flips_max: int | None = None
    kmeans_ari_min: float | None = None
    kmeans_ari_median: float | None = None
    knn_jaccard_min: float | None = None
    knn_jaccard_median: float | None = None
    models: dict = field(default_factory=dict)     # {model: ModelBudget}
    verdicts_changed_max: int | None = None
    verdict_changes: dict = field(default_factory=dict)
    confounds: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)
