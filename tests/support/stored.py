"""Put hand-made stage arrays into a real store, exactly as a worker's output would arrive."""

import json

import numpy as np

from kit.core.spec import RunSpec, seeds
from kit.runs.store import array_sha256


def env(**over):
    base = {
        "python": "3.12.1",
        "implementation": "CPython",
        "machine": "x86_64",
        "rosetta": False,
        "os": "linux",
        "cpu": "test cpu",
        "host": "here",
        "packages": {"numpy": "2.5.5", "scipy": "1.18.1", "scikit-learn": "1.9.1"},
        "threadpools": [
            {
                "user_api": "blas",
                "owner": "numpy",
                "internal_api": "openblas",
                "version": "0.3.34",
                "num_threads": 1,
                "architecture": "Haswell",
                "threading_layer": "pthreads",
            }
        ],
        "env": {"OMP_NUM_THREADS": "1"},
    }
    base.update(over)
    return base


def arrays(seed=0, n=60, n_test=20):
    """A plausible set of stage outputs; different ``seed`` gives different values."""
    rng = np.random.default_rng(seed)
    y = (np.arange(n_test) % 3 == 0).astype(np.int64)
    out = {
        "kmer.data": np.ones(5),
        "kmer.indices": np.arange(5, dtype=np.int32),
        "kmer.indptr": np.array([0, 5], dtype=np.int32),
        "tfidf.data": np.full(5, 0.4),
        "tfidf.indices": np.arange(5, dtype=np.int32),
        "tfidf.indptr": np.array([0, 5], dtype=np.int32),
        "svd_rand": rng.normal(size=(n, 8)),
        "svd_rand.sv": np.linspace(9, 1, 8),
        "svd_arpack": rng.normal(size=(n, 8)),
        "svd_arpack.sv": np.linspace(9, 1, 8),
        "kmeans": rng.integers(0, 3, n),
        "kmeans.inertia": np.array([12.5]),
        "knn": np.argsort(rng.random((n, n)), axis=1)[:, :10],
        "y_test": y,
    }
    for m in ("lr", "mlp", "hgb", "rf"):
        out[m] = np.clip(y * 0.6 + rng.random(n_test) * 0.35, 0, 1)
    return out


def put(store, tmp_path, spec, stage_arrays, manifest_env=None):
    out = tmp_path / f"out-{spec.run_id[:8]}"
    out.mkdir()
    stages = {}
    for name, a in stage_arrays.items():
        np.save(out / f"{name}.npy", a)
        stages[name] = {"sha256": array_sha256(a), "dtype": a.dtype.str, "shape": list(a.shape)}
    manifest = {
        "stages": stages,
        "timings": {},
        "wall_s": 1.0,
        "seeds": spec.seed_dict,
        "env": manifest_env or env(),
        "spec": json.loads(spec.to_json()),
    }
    return store.put_run(spec, out, manifest)


def spec(**kw):
    base = dict(dataset="d" * 64, stack="host", stack_id="s" * 64, seeds=seeds(0))
    base.update(kw)
    return RunSpec(**base)


def _spec_for(dataset):
    return lambda **kw: spec(**dict({"dataset": dataset}, **kw))


def flipped(a, model, k):
    b = dict(a)
    b[model] = a[model].copy()
    b[model][:k] = np.where(a[model][:k] > 0.5, 0.1, 0.9)
    return b


def budget_store(tmp_path, dataset="d" * 64, home=None):
    """Seed pairs (hgb flips 4 and 6), a threads pair with a kernel confound, a repeat pair.

    ``dataset``: a hash, or a Dataset whose summary the store then knows (as after a real run).
    """
    from kit.runs.planning.options import Pair
    from kit.runs.store import Store

    st = Store(home or tmp_path / "home")
    if not isinstance(dataset, str):
        st.note_dataset(dataset.summary())
        dataset = dataset.sha256
    base = arrays(0)
    mk = _spec_for(dataset)
    s0 = mk()
    put(st, tmp_path, s0, base)
    pairs = []
    # seed pairs: the hgb flips 4 and 6 -> median 5 = one seed unit; embedding differs
    for s, k in ((1, 4), (2, 6)):
        b = flipped(dict(base, svd_rand=arrays(s)["svd_rand"]), "hgb", k)
        sb = mk(seeds=seeds(s))
        put(st, tmp_path, sb, b)
        pairs.append(Pair("seed", "", s0, sb, f"seed 0 vs {s}"))
    # a threads pair: hgb flips 2, and the BLAS kernel also changed (a confound)
    st2 = mk(threads=2)
    e2 = env(env={"OMP_NUM_THREADS": "2"})
    e2["threadpools"] = [dict(e2["threadpools"][0], num_threads=2, architecture="Prescott")]
    put(st, tmp_path, st2, flipped(base, "hgb", 2), e2)
    pairs.append(Pair("threads", "", s0, st2, "1 vs 2 threads"))
    sr = mk(replicate=1)
    put(st, tmp_path, sr, base)
    pairs.append(Pair("repeat", "", s0, sr, "run twice"))
    st.add_pairs(pairs)
    return st


def every_kind_store(tmp_path, dataset="d" * 64, home=None):
    """budget_store plus a perturbed pair (rf flips 1 at eps 1e-3) and torch seed and
    deterministic pairs (the torch MLP flips 3 across seeds, none when only determinism
    changes): every kind of run, hand-made, the same on every machine (for snapshots)."""
    from kit.core.spec import torch_seeds
    from kit.runs.planning.options import Pair

    st = budget_store(tmp_path, dataset, home)
    sha = dataset if isinstance(dataset, str) else dataset.sha256
    mk = _spec_for(sha)
    s0 = mk()
    base = arrays(0)
    pb = mk(kind="perturb", input=s0.run_id, perturb="noise:0.001:0")
    pert = flipped({k: base[k] for k in ("svd_rand", "lr", "mlp", "hgb", "rf", "y_test")}, "rf", 1)
    put(st, tmp_path, pb, pert)
    y = base["y_test"]
    t0 = mk(stack="torch-linux-cpu", kind="torch", input=s0.run_id, seeds=torch_seeds(0))
    probs = np.clip(y * 0.6 + np.random.default_rng(5).random(len(y)) * 0.35, 0, 1)
    torch_arrays = {"torch_mlp": probs, "y_test": y}
    put(st, tmp_path, t0, torch_arrays)
    t1 = t0.with_(seeds=torch_seeds(1))
    put(st, tmp_path, t1, flipped(torch_arrays, "torch_mlp", 3))
    td = t0.with_(deterministic=True)
    put(st, tmp_path, td, torch_arrays)
    st.add_pairs(
        [
            Pair("perturb", "1e-03", s0, pb, "eps 0.001, noise draw 0"),
            Pair("torch-seed", "", t0, t1, "torch seed 0 vs 1"),
            Pair("torch-deterministic", "", t0, td, "deterministic algorithms off vs on"),
        ]
    )
    return st
