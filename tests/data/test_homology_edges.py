"""The search edges and leakage hits (real MMseqs2), their cache, and the GraphPart split they
make: on chains of ~40%-identical families, where a split by whole clusters leaks by
construction and GraphPart's must not; its record recomputed by a second kit."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from places import ROOT, SUPPORT

from kit.core.errors import KitError
from kit.data.dataset import load_dataset, make_dataset, save_dataset
from kit.data.homology_edges import Edges, edges, edges_digest, hits, stored_edges, stored_hits
from tests.data.test_homology import _have_mmseqs

AMINO = np.array(list("ACDEFGHIKLMNPQRSTVWY"))


# its module fixtures (real runs, an MMseqs2 search) are made once: the module's tests share one xdist worker
pytestmark = [
    pytest.mark.skipif(not _have_mmseqs(), reason="no MMseqs2 on this platform"),
    pytest.mark.xdist_group("data/test_homology_edges"),
]


def chains(seed=5, n_chains=8, length=6, sub=0.55, size=200):
    """``n_chains`` chains of ``length`` families: each family's parent is the previous one with
    55% of its residues redrawn (~40% identical to its neighbours in the chain, ~20% to the next
    but one), members at 5% from their parent. MMseqs2 clusters at 30% cut a chain into several
    clusters that stay above 30% to each other: cluster splitting leaks by construction."""
    rng = np.random.default_rng(seed)
    seqs = []
    for _ in range(n_chains):
        parent = rng.choice(AMINO, size)
        for f in range(length):
            if f:
                parent = parent.copy()
                where = rng.random(size) < sub
                parent[where] = rng.choice(AMINO, int(where.sum()))
            for k in range(1 + rng.integers(1, 5)):
                s = parent.copy()
                if k:
                    w = rng.random(size) < 0.05
                    s[w] = rng.choice(AMINO, int(w.sum()))
                seqs.append("".join(s))
    n = len(seqs)
    return make_dataset(
        "chain",
        "import:chains.tsv",
        [f"C{i:05d}" for i in range(n)],
        seqs,
        rng.integers(0, 2, n),
        ["Human"] * n,
    )


def kit(*args, home):
    env = dict(os.environ, PYTHONPATH=str(ROOT), KIT_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "kit", *args], capture_output=True, text=True, env=env
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The chain set split both ways by the CLI, each split's leakage measured by search."""
    home = tmp_path_factory.mktemp("chains-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_HOME", str(home))
        save_dataset(chains())
    out = {"home": home}
    for method in ("graphpart", "clusters"):
        p = kit(
            "data",
            "split",
            "chain",
            "--homology",
            "--method",
            method,
            "--name",
            f"chain-{method}",
            "--json",
            home=home,
        )
        assert p.returncode == 0, p.stderr
        out[method] = json.loads(p.stdout)
        p = kit("data", "homology", f"chain-{method}", "--json", home=home)
        assert p.returncode == 0, p.stderr
        out[f"{method}-after"] = json.loads(p.stdout)
    return out


@pytest.mark.slow
def test_clusters_leak_across_and_graphpart_does_not(world):
    assert world["clusters-after"]["test_with_train_hit"] > 5  # the construction holds
    after = world["graphpart-after"]
    assert after["test_with_train_hit"] == 0 and after["split"]["method"] == "graphpart"
    split = world["graphpart"]
    assert split["method"] == "graphpart" and split["partitions"] == 3
    assert abs(split["test"] - split["target_test"]) <= split["target_test"] / 2


@pytest.mark.slow
def test_the_split_by_clusters_says_its_paragraph_without_runs_of_spaces(world, monkeypatch):
    """Piped, "at 30% identity,<5 spaces>80% coverage": a message split over source lines (#43);
    the clustering the world's split stored is reused."""
    monkeypatch.setenv("COLUMNS", "120")  # at 80 the run happened to fall at a line's end
    p = kit(
        "data",
        "split",
        "chain",
        "--homology",
        "--method",
        "clusters",
        "--name",
        "chain-said",
        home=world["home"],
    )
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert not [ln for ln in lines if "  " in ln.strip()] and max(map(len, lines)) <= 120
    assert "% identity, 80% coverage (MMseqs2" in " ".join(p.stdout.split())


@pytest.mark.slow
def test_the_removed_are_named_and_on_neither_side(world, monkeypatch):
    monkeypatch.setenv("KIT_HOME", str(world["home"]))
    new = load_dataset("chain-graphpart", generate=False)
    source = load_dataset("chain", generate=False)
    removed = world["graphpart"]["removed"]
    assert list(new.meta["removed_ids"]) == removed and new.meta["removed"] == len(removed)
    assert not set(removed) & set(new.ids)
    assert sorted([*new.ids, *removed]) == sorted(source.ids)
    assert "removed_ids" not in new.summary()


@pytest.mark.slow
def test_a_second_kit_recomputes_the_recorded_edges(world, tmp_path, monkeypatch):
    """Another machine's kit, from the source dataset alone, searches again and gets the digest
    the split recorded; and its own split is the same dataset."""
    monkeypatch.setenv("KIT_HOME", str(world["home"]))
    recorded = load_dataset("chain-graphpart", generate=False).meta
    monkeypatch.setenv("KIT_HOME", str(tmp_path))
    ds = chains()
    save_dataset(ds)
    e, reused = edges(ds, recorded["identity"], recorded["coverage"])
    assert not reused and e.digest == recorded["edges"] and e.i.size == recorded["edge_count"]
    assert edges(ds)[1] is True  # cached by dataset hash and parameters
    p = kit("data", "split", "chain", "--homology", "--name", "again", "--json", home=tmp_path)
    assert json.loads(p.stdout)["sha256"] == world["graphpart"]["sha256"]


@pytest.mark.slow
def test_forged_edges_and_hits_are_refused(world, tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_HOME", str(tmp_path))
    ds = chains()
    e, _ = edges(ds)
    hits(ds)
    folder = tmp_path / "datasets" / "homology"
    npz = next(folder.glob("*-edges-*.npz"))
    z = dict(np.load(npz))
    z["similarity"] = z["similarity"].copy()
    z["similarity"][0] = 0.99  # one identity raised, digest kept
    with open(npz, "wb") as f:
        np.savez(f, **z)
    with pytest.raises(KitError, match="do not match their digest"):
        stored_edges(ds)
    z["similarity"][0] = 1.5  # outside [0, 1]: the edge and its values named (#43)
    with open(npz, "wb") as f:
        np.savez(f, **z)
    with pytest.raises(
        KitError,
        match=rf"outside the dataset \(edge 0: proteins {z['i'][0]} "
        rf"and {z['j'][0]} of {ds.n}, identity 1.5\)",
    ):
        stored_edges(ds)
    npz.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(KitError, match="unreadable"):
        stored_edges(ds)
    js = next(folder.glob("*-hits-*.json"))
    doc = json.loads(js.read_text())
    doc["test_with_train_hit"] = []
    js.write_text(json.dumps(doc))
    with pytest.raises(KitError, match="do not match their digest"):
        stored_hits(ds)


def test_the_digest_is_of_the_pairs_and_the_parameters():
    i, j, f = np.array([0, 1]), np.array([2, 3]), np.array([0.5, 0.4])
    d = edges_digest(i, j, f, 0.3, 0.8)
    assert d == Edges("x", 0.3, 0.8, "t", i, j, f).digest
    assert d != edges_digest(i, j, f, 0.3, 0.9)
    assert d != edges_digest(i, j, np.array([0.5, 0.41]), 0.3, 0.8)


@pytest.mark.slow
def test_kit_compare_remakes_a_bundle_s_split_or_says_what_differs(world, tmp_path, monkeypatch):
    """The bundle's dataset summary (what `kit compare` reads) names the split's source, seed,
    parameters and edges' digest: a second machine holding only the source remakes the split,
    bit for bit, or says in one line that its search differs."""
    from kit.app.reproduce import find_dataset

    monkeypatch.setenv("KIT_HOME", str(world["home"]))
    split = load_dataset("chain-graphpart", generate=False)
    summary = split.summary()
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "b"))
    with pytest.raises(KitError, match="GraphPart split of chain, which is not here"):
        find_dataset(summary, split.sha256)
    save_dataset(chains())
    forged = dict(summary, edges="0" * 64)
    with pytest.raises(KitError, match="homology search differs between the machines"):
        find_dataset(forged, split.sha256)
    remade = find_dataset(summary, split.sha256)
    assert remade.sha256 == split.sha256
    assert load_dataset("chain-graphpart", generate=False).sha256 == split.sha256


@pytest.mark.slow
def test_data_homology_reads_the_runs_dataset_by_default(tmp_path):
    """README's `kit data homology && kit homology`: with no name, the dataset the most recent
    runs used (as `kit homology` reads), not a synthetic set nobody stored."""
    sys.path.insert(0, str(SUPPORT))
    from stored import budget_store

    home = tmp_path / "home"
    ds = chains(n_chains=3, length=3)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_HOME", str(home))
        save_dataset(ds)
        budget_store(tmp_path, ds, home=home)
    p = kit("data", "homology", "--json", home=home)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["name"] == "chain"
