"""kit.core.spec: the run id is a stable hash of every field that defines a run."""

import pytest

from kit.core.spec import RunSpec, seeds


def base():
    return RunSpec(dataset="d" * 64, stack="host", stack_id="s" * 64)


def test_id_is_stable_and_round_trips():
    a = base()
    assert a.run_id == base().run_id and len(a.run_id) == 64
    assert RunSpec.from_json(a.to_json()) == a


@pytest.mark.parametrize(
    "change",
    [
        {"threads": 2},
        {"dtype": "float32"},
        {"svd_iters": 10},
        {"seeds": seeds(1)},
        {"seeds": seeds(0, svd=1)},
        {"env": (("OPENBLAS_CORETYPE", "Haswell"),)},
        {"replicate": 1},
        {"dataset": "e" * 64},
        {"stack_id": "t" * 64},
        {"embedding": "arpack"},
    ],
)
def test_every_field_changes_the_id(change):
    assert base().with_(**change).run_id != base().run_id


def test_seeds_helper():
    assert dict(seeds(3)) == {"svd": 3, "kmeans": 3, "mlp": 3, "hgb": 3, "rf": 3}
    assert dict(seeds(0, svd=5))["svd"] == 5
    with pytest.raises(ValueError):
        seeds(0, split=1)
    with pytest.raises(ValueError):
        base().with_(dtype="float16")
    # what is wrong is named (#43): a forged bundle's spec says which value it holds
    with pytest.raises(ValueError, match="^threads and svd_iters must be positive, not 0 and 5$"):
        base().with_(threads=0, svd_iters=5)
    with pytest.raises(ValueError, match="^kind must be one of .*, not 'torchh'$"):
        base().with_(kind="torchh")
    with pytest.raises(ValueError, match="^device must be one of .*, not 'tpu'$"):
        base().with_(device="tpu")


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


def test_the_feed_field_keeps_every_existing_run_id():
    """Ids computed by kit before `feed` existed (pipeline, perturb, torch, every later field)."""
    b = base()
    assert [
        s.run_id
        for s in (
            b,
            b.with_(kind="perturb", input="a" * 64, perturb="noise:1e-07:0"),
            b.with_(kind="torch", input="a" * 64, device="cuda"),
            b.with_(
                embedding="arpack", process="fresh", threads=2, dtype="float32", seeds=seeds(3)
            ),
        )
    ] == [
        "f297b89734d77376d264740ad6597542851b8302bdd1f091e5e2581404caabc0",
        "0c8d5dad24415f62ccb4bd38b9c9ade0538afa54febb0f6e02c89582a7ec42b0",
        "b4aa1ace108fa73ba9892d05aeef5f84017586968e9f09f5c215225141338254",
        "b272b2f37123b2db0462bbd6bb88e0422d05f1c1d76d3cdf2561c11a0295d892",
    ]
    assert "feed" not in b.to_json()


def test_a_feed_run_names_its_input_and_first_stage():
    fed = base().with_(kind="feed", input="a" * 64, feed="svd")
    assert RunSpec.from_json(fed.to_json()) == fed and '"feed":"svd"' in fed.to_json()
    assert len({fed.with_(feed=f).run_id for f in ("tfidf", "svd", "models")}) == 3
    for bad in ({"feed": "kmer"}, {"feed": ""}, {"input": ""}):
        with pytest.raises(ValueError):
            fed.with_(**bad)
    with pytest.raises(ValueError, match="a feed run, and only one"):
        base().with_(feed="svd")


def test_env_holds_only_the_variables_kit_sets():
    """A spec's env becomes the worker's environment: a bundle's PYTHONWARNINGS or BROWSER ran
    a shell command at the worker's start-up, and OMP_NUM_THREADS hid behind threads=1."""
    for var, value in [
        ("PYTHONWARNINGS", "ignore::antigravity.Foo"),
        ("BROWSER", "/bin/sh -c 'touch PWNED'"),
        ("OMP_NUM_THREADS", "4"),
        ("LD_PRELOAD", "/tmp/x.so"),
    ]:
        with pytest.raises(ValueError, match=var):
            base().with_(env=((var, value),))
    for value in ["Haswell; rm -rf /", "Has well", "", "x" * 40, "Haswell\n"]:
        with pytest.raises(ValueError, match="not a value kit writes"):
            base().with_(env=(("OPENBLAS_CORETYPE", value),))


def test_every_code_path_of_the_catalogue_is_an_env_a_spec_may_hold():
    """The arch factor's sets_env is the catalogue's [codepaths] written down in the registry:
    the two must not drift."""
    from kit.core.factors import spec_env
    from kit.envs.catalogue import catalogue

    paths = [cp for plat in catalogue()["codepaths"].values() for cp in plat.values()]
    assert paths
    for cp in paths:
        for value in cp["values"]:
            base().with_(env=((cp["variable"], value),))  # accepted
    assert {cp["variable"] for cp in paths} == set(spec_env())
