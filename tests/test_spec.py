"""kit.core.spec: the run id is a stable hash of every field that defines a run."""

import pytest

from kit.core.spec import RunSpec, seeds


def base():
    return RunSpec(dataset="d" * 64, stack="host", stack_id="s" * 64)


def test_id_is_stable_and_round_trips():
    a = base()
    assert a.run_id == base().run_id and len(a.run_id) == 64
    assert RunSpec.from_json(a.to_json()) == a


@pytest.mark.parametrize("change", [
    {"threads": 2}, {"dtype": "float32"}, {"svd_iters": 10}, {"seeds": seeds(1)},
    {"seeds": seeds(0, svd=1)}, {"env": (("OPENBLAS_CORETYPE", "Haswell"),)}, {"replicate": 1},
    {"dataset": "e" * 64}, {"stack_id": "t" * 64}, {"embedding": "arpack"}])
def test_every_field_changes_the_id(change):
    assert base().with_(**change).run_id != base().run_id


def test_seeds_helper():
    assert dict(seeds(3)) == {"svd": 3, "kmeans": 3, "mlp": 3, "hgb": 3, "rf": 3}
    assert dict(seeds(0, svd=5))["svd"] == 5
    with pytest.raises(ValueError):
        seeds(0, split=1)
    with pytest.raises(ValueError):
        base().with_(dtype="float16")


def test_fields_added_later_keep_the_ids_of_runs_stored_before_them():
    # this spec's id under kit 0.1.0's RunSpec, before `embedding` existed: stores keep their runs
    assert base().run_id == "f297b89734d77376d264740ad6597542851b8302bdd1f091e5e2581404caabc0"
    assert "embedding" not in base().to_json()
    a = base().with_(embedding="arpack")
    assert '"embedding":"arpack"' in a.to_json() and RunSpec.from_json(a.to_json()) == a
    old = base().to_json()  # what an older store or bundle holds: no embedding key at all
    assert RunSpec.from_json(old).run_id == base().run_id
    with pytest.raises(ValueError, match="embedding must be one of"):
        base().with_(embedding="exact")
