"""The release scan: probe stacks built for real with uv under KIT_HOME, and changes_at read
from the feed runs made in them (scikit-learn 1.5.2 and 1.6.0 at numpy 1.26.4, Python 3.12)."""

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from places import ROOT

from kit.analysis.compare import STAGES
from kit.analysis.explain import PairExplanation, StageOrigin, feed_spec
from kit.analysis.releases import Release, apply_scan, changes
from kit.app.releases import Scan, run_scans, scan_runs, to_build
from kit.core.errors import KitError
from kit.envs.catalogue import definitions
from kit.envs.kinds import stack_kind
from kit.envs.platforms import detect
from kit.envs.probes import prepare, pyproject
from kit.envs.releases import between
from kit.runs.executing.runner import run_all
from kit.runs.planning.options import PlanOptions
from kit.runs.planning.plan import plan
from kit.runs.store import Store
from kit.runs.store.records import StoredPair
from kit.views.explain import release_text
from kit.worker.pipeline import fed_stages

BASE = "np1-sk152"
MODELS = ("kmeans", "knn", "lr", "mlp", "hgb", "rf")


def test_releases_between_two_versions_include_both_ends_oldest_first():
    listed = ["1.4.2", "1.5.2", "1.6.0", "1.6.1", "1.10.0", "1.9.1"]
    assert between("scikit-learn", "1.5.2", "1.9.1", listed) == ["1.5.2", "1.6.0", "1.6.1", "1.9.1"]
    # oldest first whichever end is a: a change is named at the newer release of its transition
    assert between("scikit-learn", "1.9.1", "1.6.0", listed) == ["1.6.0", "1.6.1", "1.9.1"]
    with pytest.raises(KitError, match="only final releases"):
        between("scikit-learn", "1.5.2", "1.6.0rc1", listed)


def test_a_model_identical_at_both_ends_that_changes_and_changes_back_is_read(tmp_path, kit_home):
    """The issue's forest: 1.5.2 -> 1.9.1 scanned, its output changing at 1.6.0 and back at
    1.8.0 (hash for hash), identical between the ends: changes_at ['1.6.0', '1.8.0'], and the
    sentence names the releases on which a collaborator differs from both ends."""
    from stored import arrays, env, put, spec

    from kit.analysis.releases import scan_specs

    pins = {"numpy": "1.26.4", "scipy": "1.13.1"}
    store, a = Store(), spec(stack="np1-sk152")
    put(store, tmp_path, a, arrays(0), env(packages={**pins, "scikit-learn": "1.5.2"}))
    releases = []
    for i, (version, seed) in enumerate(
        (("1.5.2", 10), ("1.6.0", 11), ("1.7.2", 11), ("1.8.0", 10), ("1.9.1", 10))
    ):
        r = Release(version, f"probe-np1-sk152-scikit-learn-{version}", str(i) * 64)
        feed = scan_specs(a, [r], ("models",))[0]
        put(
            store,
            tmp_path,
            feed,
            {n: x for n, x in arrays(seed).items() if n in fed_stages("models")},
            env(packages={**pins, "scikit-learn": version}),
        )
        releases.append(r)
    e = PairExplanation(
        a.run_id,
        "b" * 64,
        "1.5.2 vs 1.9.1",
        "",
        {"rf": StageOrigin("identical"), "lr": StageOrigin("originates", flips=2)},
    )
    got = apply_scan(e, store, a, "scikit-learn", releases)
    assert (got.stages["rf"].changes_at, got.stages["rf"].back_to) == (
        ("1.6.0", "1.8.0"),
        {"1.8.0": "1.5.2"},
    )
    assert got.stages["rf"].origin == "identical"  # between the ends it still is
    said = " ".join(release_text(got).split())
    assert (
        "the forest is identical at both ends but changes at 1.6.0 and back at 1.8.0 "
        "(to its 1.5.2 output): on 1.6.0 to 1.7.2 it differs from both"
    ) in said, said
    assert [n["version"] for n in got.notes] == ["1.6.0", "1.8.0"]


def test_a_probe_s_pyproject_changes_one_pin_and_keeps_this_platform_only():
    plat = detect()
    text = pyproject(definitions()[BASE], "scikit-learn", "1.6.0", plat)
    assert '"scikit-learn==1.6.0"' in text and '"numpy==1.26.4"' in text
    assert '1.5.2"' not in text
    markers = [ln for ln in text.splitlines() if ln.strip().startswith('"sys_platform')]
    assert len(markers) == 2  # environments and required-environments, this platform's only
    with pytest.raises(KitError, match="does not pin torch"):
        pyproject(definitions()[BASE], "torch", "2.0.0", plat)


def one_stack_catalogue(cat: Path) -> Path:
    """A catalogue (KIT_STACKS_DIR) of BASE alone: scikit-learn 1.5.2 at numpy 1.26.4."""
    cat.mkdir()
    shutil.copytree(ROOT / "stacks" / BASE, cat / BASE)
    (cat / "stacks.toml").write_text(
        f'reference = "{BASE}"\n\n[stack.{BASE}]\nlock = "{BASE}"\npython = "3.12"\n'
        'numpy = "1.26.4"\nscipy = "1.13.1"\nscikit-learn = "1.5.2"\n'
        'blas = { linux-x86_64 = "OpenBLAS", macos-arm64 = "OpenBLAS" }\n'
    )
    return cat


@pytest.fixture(scope="module")
def module_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("probes-home")
    one_stack_catalogue(home / "catalogue")
    return home


@pytest.fixture
def probe_home(module_home, monkeypatch):  # builds are shared by the module's slow tests
    monkeypatch.setenv("KIT_HOME", str(module_home / "kit"))
    monkeypatch.setenv("KIT_STACKS_DIR", str(module_home / "catalogue"))
    return module_home / "kit"


def _scan(tiny, versions):
    plat = detect()
    kind = stack_kind(BASE)
    if kind.status(plat)[0] == "unavailable":
        pytest.skip(kind.status(plat)[1])
    kind.build(plat)
    store = Store()
    a = plan("repeat", tiny.sha256, PlanOptions(threads=(1,)))[0].a
    a = a.with_(stack=BASE, stack_id=kind.runnable().identity)
    run_all([a], tiny, store)
    rel = []
    for v in versions:
        name, why = prepare(definitions()[BASE], "scikit-learn", v, plat)
        rel.append(Release(v, name, None, why))
    scan = Scan(
        StoredPair("sklearn", "", a.run_id, a.run_id, "a vs a"), "scikit-learn", rel, ("models",)
    )
    return store, a, scan


@pytest.mark.slow
def test_a_two_release_scan_builds_real_probes_and_reads_every_change(tiny, probe_home):
    store, a, scan = _scan(tiny, ["1.5.2", "1.5.99", "1.6.0"])
    assert run_scans([scan], store, lambda: tiny) == []
    r152, r1599, r160 = scan.releases
    assert r152.built and r160.built
    assert not r1599.built and "1.5.99" in r1599.why  # named with uv's reason; the scan went on
    # cached under KIT_HOME, never in the repository's stacks/
    for r in (r152, r160):
        assert (probe_home / "probes" / r.stack / "uv.lock").exists()
        assert not (ROOT / "stacks" / r.stack).exists()
    runs = {
        r.version: store.run(
            feed_spec(a, a.with_(stack=r.stack, stack_id=r.stack_id), "models").run_id
        )
        for r in (r152, r160)
    }
    assert runs["1.6.0"].manifest["env"]["packages"]["scikit-learn"] == "1.6.0"  # measured
    assert set(runs["1.6.0"].stages) == set(fed_stages("models"))
    whole = store.run(a.run_id).stages  # the probe of a's own release reproduces a
    assert all(runs["1.5.2"].stages[n].sha256 == whole[n].sha256 for n in runs["1.5.2"].stages)
    for stage in MODELS:
        names = STAGES[stage]
        moved = any(runs["1.5.2"].stages[n].sha256 != runs["1.6.0"].stages[n].sha256 for n in names)
        assert changes(store, a, scan.releases, stage) == ((["1.6.0"] if moved else []), {})
    e = PairExplanation(
        a.run_id, a.run_id, "a vs a", "", {s: StageOrigin("originates", flips=1) for s in MODELS}
    )
    e = apply_scan(e, store, a, "scikit-learn", scan.releases)
    assert [r["status"] for r in e.releases] == ["built", "could not build", "built"]
    text = release_text(e)
    assert text.startswith("scikit-learn 1.5.2 -> 1.6.0 (2 of 3 releases scanned)")
    assert "1.5.99 (could not build: " in text
    if any(o.changes_at for o in e.stages.values()):
        assert "https://scikit-learn.org/stable/whats_new/v1.6.html" in text
    json.dumps([r for r in e.releases])


@pytest.mark.slow
def test_a_second_scan_reuses_the_probes_and_runs_nothing(tiny, probe_home):
    store, a, scan = _scan(tiny, ["1.5.2", "1.6.0"])
    run_scans([scan], store, lambda: tiny)  # built and run here when this test runs alone
    store, a, scan = _scan(tiny, ["1.5.2", "1.6.0"])  # as a second `kit explain` would
    assert to_build([scan]) == [] and scan_runs([scan], store) == 0
    assert run_scans([scan], store, lambda: pytest.fail("no run to make")) == []
    assert all(r.built for r in scan.releases)


@pytest.mark.slow
def test_every_transition_is_listed_and_a_change_that_goes_is_named_back(tiny, probe_home):
    """A planted change that comes and goes: kit's own interpreter (numpy 2.x, another
    scikit-learn) scanned as a release between two scans of the same 1.5.2 probe."""
    store, a, scan = _scan(tiny, ["1.5.2"])
    p152 = scan.releases[0]
    scan.releases = [p152, Release("host", "host"), Release("1.5.2 again", p152.stack)]
    assert run_scans([scan], store, lambda: tiny) == []
    out = {
        r.version: store.run(
            feed_spec(a, a.with_(stack=r.stack, stack_id=r.stack_id), "models").run_id
        ).stages
        for r in scan.releases
    }
    moved = []
    for stage in MODELS:
        differs = any(out["host"][n].sha256 != out["1.5.2"][n].sha256 for n in STAGES[stage])
        want = (["host", "1.5.2 again"], {"1.5.2 again": "1.5.2"}) if differs else ([], {})
        assert changes(store, a, scan.releases, stage) == want
        moved += [stage] if differs else []
    assert moved  # planted: numpy 2.x and another scikit-learn move some model


@pytest.mark.slow
def test_kit_explain_asks_before_building_probes_then_scans_them(
    tiny, module_home, tmp_path, monkeypatch, capsys
):
    """A seed pair in the 1.5.2 stack, scanned with --library: refused without a terminal
    until --yes, then every release's status and each originating stage's changes_at."""
    from kit.cli import main
    from kit.data.dataset import save_dataset

    monkeypatch.setenv("KIT_HOME", str(tmp_path / "home"))  # no probe built yet
    monkeypatch.setenv("KIT_STACKS_DIR", str(module_home / "catalogue"))
    stack_kind(BASE).build(detect())
    store = Store()
    pair = plan("seed:models", tiny.sha256, PlanOptions(threads=(1,), seeds=(0, 1)), stack=BASE)[0]
    run_all([pair.a, pair.b], tiny, store)
    store.add_pairs([pair])
    save_dataset(tiny)
    argv = ["explain", "seed:models", "--library", "scikit-learn", "1.5.2", "1.6.0"]
    assert main(argv[:-1] + ["latest"]) == 1
    err = capsys.readouterr().err
    assert "give final releases" in err and len(err.strip().splitlines()) == 1
    # refused (no terminal, no --yes): the origins still print, the scan is named as skipped
    # (no line saying nothing was run: the cross-fed runs were), and the exit status says so
    assert main(argv) == 1
    out = capsys.readouterr()
    assert "The release scan (2 probe stacks) needs stacks" in out.err
    assert "nothing was run" not in out.err
    assert "the difference starts at" in out.out and "releases scanned" not in out.out
    assert (
        "the release scan was skipped (2 probe stack(s) not built: no terminal to ask); `kit "
        "explain seed:models --library scikit-learn 1.5.2 1.6.0 --yes` builds them"
    ) in " ".join(out.out.split())
    assert not list((tmp_path / "home" / "probes").glob("*/venv"))  # nothing built
    assert main(argv + ["--yes", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["pairs"][0]
    assert [(r["version"], r["status"]) for r in got["releases"]] == [
        ("1.5.2", "built"),
        ("1.6.0", "built"),
    ]
    for o in got["stages"].values():
        assert o["changes_at"] in ([], ["1.6.0"]) and (
            o["origin"] == "originates" or o["changes_at"] == []
        )
    assert main(argv) == 0  # stored and built: nothing asked, nothing run
    out = capsys.readouterr()
    assert "scikit-learn 1.5.2 -> 1.6.0 (2 of 2 releases scanned)" in out.out
    assert "0 probe stack(s) to build" in out.err and "0 run(s) to make" in out.err
    _the_scan_travels(tiny, tmp_path, monkeypatch, capsys)


def _the_scan_travels(tiny, tmp_path, monkeypatch, capsys):
    """`kit stacks` lists the probes; `kit export --factor` carries the pairs' cross-fed runs
    and the scan its readers read (none here: a seed pair's runs hold one scikit-learn, so
    the stored explanation reads no --library scan, test_a_scan_exported_from_one_home_...
    has one that is read); another home imports them and explains the pair as here, and `kit
    compare` names the cross-fed runs as explain's (builds none, locks no probe)."""
    from kit.analysis.explain_stored import stored_explanation
    from kit.app.bundle import read
    from kit.cli import main

    assert main(["stacks", "--json"]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out) if r.get("probe")]
    assert sorted((r["probe"]["package"], r["probe"]["version"], r["status"]) for r in rows) == [
        ("scikit-learn", "1.5.2", "built"),
        ("scikit-learn", "1.6.0", "built"),
    ]
    assert all(Path(r["probe"]["folder"]).is_dir() and r["probe"]["base"] == BASE for r in rows)
    assert main(["stacks"]) == 0
    assert "probe stacks (kit explain's release scans)" in capsys.readouterr().out
    here = Store()
    feeds = {s.run_id: s for s in here.specs().values() if s.kind == "feed"}
    probed = {i for i, s in feeds.items() if s.stack.startswith("probe-")}
    assert probed and len(feeds) > len(probed)  # cross-fed runs and the scan's probe runs
    bundle = tmp_path / "scan.kit"
    assert main(["export", "--factor", "seed:models", "--arrays", "--out", str(bundle)]) == 0
    capsys.readouterr()
    doc = read(bundle)
    assert set(feeds) - probed <= {r["id"] for r in doc["runs"]}
    assert not probed & {r["id"] for r in doc["runs"]} and doc["probes"] == {}
    before = stored_explanation(here, tiny.sha256, "seed:models")["pairs"][0]
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "elsewhere"))  # another machine
    assert main(["import", str(bundle)]) == 0
    capsys.readouterr()
    got = stored_explanation(Store(), tiny.sha256, "seed:models")["pairs"][0]
    assert got.stages == before.stages
    from kit.data.dataset import save_dataset

    monkeypatch.setenv("KIT_HOME", str(tmp_path / "third"))
    save_dataset(tiny)
    assert main(["compare", str(bundle), "--yes", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    why = {x["run"]: x["reason"] for x in rep["not_compared"]}
    assert all(why[i].startswith("a cross-fed run of kit explain") for i in set(feeds) - probed)
    assert rep["pairs"] == 2 and not (tmp_path / "third" / "probes").exists()


@pytest.mark.slow
def test_a_sklearn_pair_scans_the_releases_between_its_measured_versions(tiny, probe_home, capsys):
    """The factor's own library, between the versions a's and b's runs measured (b: kit's own
    interpreter, another scikit-learn): every release is locked, none built before asking."""
    from kit.analysis.explain import feeds_needed
    from kit.app.releases import plan_scans

    store, a, _ = _scan(tiny, [])
    b = a.with_(stack="host", stack_id=stack_kind("host").runnable().identity)
    run_all([b], tiny, store)
    pair = StoredPair("sklearn", "", a.run_id, b.run_id, "1.5.2 vs host")
    run_all(feeds_needed(store, [pair]), tiny, store)
    scans, notes = plan_scans(store, "sklearn", [pair])
    hi = store.run(b.run_id).manifest["env"]["packages"]["scikit-learn"]
    assert notes == [] and scans[0].package == "scikit-learn" and scans[0].groups
    assert [r.version for r in scans[0].releases] == between("scikit-learn", "1.5.2", hi)
    assert all(r.stack or r.why for r in scans[0].releases)
    # `kit explain sklearn` with no terminal: the explanation is the answer (exit 0); the
    # pair's own library's scan is optional, skipped with how to run it (an asked --library
    # scan that is skipped stays exit 1: the test above)
    from kit.cli import main
    from kit.data.dataset import save_dataset
    from kit.runs.planning.options import Pair

    store.add_pairs([Pair("sklearn", "", a, b, pair.label)])
    save_dataset(tiny)
    assert main(["explain", "sklearn"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "the release scan was skipped" in out and "no terminal to ask" in out


@pytest.mark.slow
def test_a_python_scan_builds_each_minor_with_an_interpreter_here_and_names_the_rest(
    tiny, probe_home
):
    """Python's releases from uv's own table (offline), minors 3.11 to 3.14 at a's pins
    (numpy 1.26.4): 3.11 and 3.12 built with pyenv's interpreters, 3.13 named with uv's line
    (numpy 1.26.4 has no cp313 wheel), 3.14 with uv's (no interpreter here); the scan goes on."""
    from kit.envs.interpreters import find_python
    from kit.envs.releases import python_releases

    plat = detect()
    if find_python("3.11", None, plat) is None or find_python("3.14", None, plat) is not None:
        pytest.skip("this machine's interpreters are not the ones planted (3.11 here, no 3.14)")
    listed = python_releases()
    assert {"3.11", "3.12", "3.13", "3.14"} <= set(listed) and all(
        v.count(".") == 1 for v in listed
    )
    store, a, _ = _scan(tiny, [])
    rel = [
        Release(v, *(lambda n, w: (n, None, w))(*prepare(definitions()[BASE], "python", v, plat)))
        for v in between("python", "3.11", "3.14", listed)
    ]
    assert [r.version for r in rel] == ["3.11", "3.12", "3.13", "3.14"]
    assert rel[-1].stack is None and rel[-1].why.startswith("No interpreter found for Python 3.14")
    scan = Scan(StoredPair("python", "", a.run_id, a.run_id, "a vs a"), "python", rel, ("models",))
    assert run_scans([scan], store, lambda: tiny) == []
    by = {r.version: r for r in scan.releases}
    assert by["3.11"].built and by["3.12"].built and by["3.11"].stack.endswith("-python-3.11")
    assert not by["3.13"].built and "numpy" in by["3.13"].why  # uv sync's line: no cp313 wheel
    run = {v: store.run(scan_specs_of(a, by[v])) for v in ("3.11", "3.12")}
    assert run["3.11"].manifest["env"]["python"].startswith("3.11.")
    whole = store.run(a.run_id).stages  # the probe of a's own Python reproduces a
    assert all(run["3.12"].stages[n].sha256 == whole[n].sha256 for n in run["3.12"].stages)
    e = PairExplanation(
        a.run_id, a.run_id, "a vs a", "", {s: StageOrigin("originates", flips=1) for s in MODELS}
    )
    e = apply_scan(e, store, a, "python", scan.releases)
    text = release_text(e)
    assert text.startswith("python 3.11 -> 3.14 (2 of 4 releases scanned)")
    assert "3.14 (could not build: No interpreter found for Python 3.14" in text


def scan_specs_of(a, r):
    from kit.analysis.releases import scan_specs

    return scan_specs(a, [r], ("models",))[0].run_id


def _planted_scans(tmp_path):
    """A np1-sk152 run a, b runs at scikit-learn 1.6.0 and at numpy 2.0.0 (two factors' pairs
    sharing a), and the probe runs both scans made on a's arrays, each measuring its release;
    one more named for scikit-learn 1.6.1 but measuring 1.5.2 (mislabelled)."""
    from stored import arrays, env, put, spec

    from kit.analysis.releases import scan_specs
    from kit.runs.store.hosts import host_id

    store = Store()
    pins = {"numpy": "1.26.4", "scipy": "1.13.1", "scikit-learn": "1.5.2"}
    a = spec(stack=BASE, host=host_id())
    put(store, tmp_path, a, arrays(0), env(packages=pins))
    b_sk, b_np = a.with_(stack_id="b" * 64), a.with_(stack_id="c" * 64)
    put(store, tmp_path, b_sk, arrays(1), env(packages={**pins, "scikit-learn": "1.6.0"}))
    put(store, tmp_path, b_np, arrays(2), env(packages={**pins, "numpy": "2.0.0"}))
    probes = {}
    for seed, (package, version, held) in enumerate(
        [
            ("scikit-learn", "1.5.2", "1.5.2"),
            ("scikit-learn", "1.6.0", "1.6.0"),
            ("scikit-learn", "1.6.1", "1.5.2"),
            ("numpy", "1.26.4", "1.26.4"),
            ("numpy", "2.0.0", "2.0.0"),
        ]
    ):
        r = Release(version, f"probe-{BASE}-{package}-{version}", str(seed) * 64)
        s = scan_specs(a, [r], ("models",))[0]
        put(
            store,
            tmp_path,
            s,
            {n: x for n, x in arrays(10 + seed).items() if n in fed_stages("models")},
            env(packages={**pins, package: held}),
        )
        probes[(package, version)] = (r, s.run_id)
    pairs = [
        StoredPair("sklearn", "", a.run_id, b_sk.run_id, "1.5.2 vs 1.6.0"),
        StoredPair("numpy", "", a.run_id, b_np.run_id, "1.26.4 vs 2.0.0"),
    ]
    return store, a, pairs, probes


def test_a_scan_exported_from_one_home_reads_the_same_in_another(tmp_path, monkeypatch):
    """Probe runs keep the host id of the home that made them: read elsewhere, each release's
    output is found all the same and a stage changes at the same release (not an empty scan);
    a factor's bundle carries its own scan's probe runs only, a mislabelled one never."""
    from kit.analysis.explain_stored import explain_runs
    from kit.analysis.releases import release_rows
    from kit.app.bundle import export, import_bundle

    store, a, pairs, probes = _planted_scans(tmp_path)
    sk = [probes[("scikit-learn", v)][0] for v in ("1.5.2", "1.6.0")]
    here = {s: changes(store, a, sk, s) for s in ("lr", "hgb", "rf")}
    assert all(at == ["1.6.0"] for at, _ in here.values())
    ids = explain_runs(store, pairs[:1])
    assert sorted(ids) == sorted(probes[("scikit-learn", v)][1] for v in ("1.5.2", "1.6.0"))
    out = export(store, [a.run_id, pairs[0].b] + ids, tmp_path / "scan.kit", arrays=True)
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "elsewhere"))  # another machine
    other = Store()
    import_bundle(other, out["file"])
    there = {s: changes(other, a, sk, s) for s in here}
    assert there == here and all(at for at, _ in there.values())
    assert [r["status"] for r in release_rows(other, a, "scikit-learn", sk, ("models",))] == [
        "built",
        "built",
    ]


def test_a_probe_of_a_rosetta_stack_is_locked_for_its_interpreter_s_architecture():
    """np1-sk191-x86 runs an x86_64 interpreter on Apple silicon: its probe keeps the darwin
    x86_64 environment, not the machine's native arm64 one."""
    from kit.envs.platforms import Platform

    mac = Platform("darwin", "arm64", (14, 5), rosetta=True)
    text = pyproject(definitions()["np1-sk191-x86"], "scikit-learn", "1.6.0", mac)
    markers = [ln for ln in text.splitlines() if ln.strip().startswith('"sys_platform')]
    assert len(markers) == 2 and all(
        "platform_machine == 'x86_64'" in m and "darwin" in m for m in markers
    )
    native = pyproject(definitions()["np1-sk191"], "scikit-learn", "1.6.0", mac)
    assert all("'arm64'" in m for m in native.splitlines() if m.strip().startswith('"sys_p'))


_VERSIONED = '''"""A lab file one of whose outputs is scikit-learn's minor release: it changes at 1.6.0."""
import numpy as np
import sklearn

SEEDS = ("draw",)
KINDS = {"minor": "array", "steady": "array", "drawn": "array"}


def run(seeds):
    minor = float(sklearn.__version__.split(".")[1])
    return {"minor": np.array([minor]), "steady": np.arange(4.0),
            "drawn": np.random.default_rng(seeds["draw"]).normal(size=3)}
'''


@pytest.mark.slow
def test_kit_explain_scans_a_lab_pipeline_s_releases_and_names_each_output_s_change(
    probe_home, tmp_path, capsys
):
    """`kit explain FACTOR --pipeline FILE`: the file itself rerun in every release's probe
    stack, each output's changes read (the minor changes at 1.6.0, steady never), a factor
    with no library refused in one line; nothing is cross-fed."""
    from kit.cli import main

    plat = detect()
    if stack_kind(BASE).status(plat)[0] == "unavailable":
        pytest.skip(stack_kind(BASE).status(plat)[1])
    stack_kind(BASE).build(plat)
    f = tmp_path / "versioned.py"
    f.write_text(_VERSIONED)
    assert (
        main(
            [
                "run",
                "--pipeline",
                str(f),
                "--factor",
                "seed:draw",
                "--stack",
                BASE,
                "--seeds",
                "0,1",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    capsys.readouterr()
    with pytest.raises(SystemExit) as typo:  # a typo: the usage error, with the closest names
        main(["explain", "seed:drwa", "--pipeline", str(f)])
    assert typo.value.code == 2 and "did you mean seed:draw" in capsys.readouterr().err
    assert main(["explain", "seed:draw", "--pipeline", str(f)]) == 1  # no library to scan
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "declares outputs, not stages" in err
    argv = [
        "explain",
        "seed:draw",
        "--pipeline",
        str(f),
        "--library",
        "scikit-learn",
        "1.5.2",
        "1.6.0",
    ]
    assert main(argv + ["--yes", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["pairs"][0]
    assert "stages" not in got and [(r["version"], r["status"]) for r in got["releases"]] == [
        ("1.5.2", "built"),
        ("1.6.0", "built"),
    ]
    outs = got["outputs"]
    assert outs["drawn"]["origin"] == "differs" and outs["steady"]["origin"] == "identical"
    assert outs["minor"]["changes_at"] == ["1.6.0"] and outs["steady"]["changes_at"] == []
    assert outs["drawn"]["changes_at"] == []  # a seed's draw is no release's
    assert main(argv) == 0  # stored and built: nothing asked, nothing run
    out = capsys.readouterr()
    text = " ".join(out.out.split())
    assert "0 run(s) to make" in out.err
    assert "drawn differs; minor and steady agree." in text
    assert "scikit-learn 1.5.2 -> 1.6.0 (2 of 2 releases scanned)" in text
    # both ends of the seed pair are on 1.5.2: a collaborator on 1.6.0 differs from both
    assert (
        "minor is identical at both ends but changes at 1.6.0: on 1.6.0 it differs from "
        "both" in text
    )
    assert "drawn does not change at any of the releases built" in text
    assert "https://scikit-learn.org/stable/whats_new/v1.6.html" in text


@pytest.mark.slow
def test_a_requires_pipeline_s_release_scan_keeps_its_packages(probe_home, tmp_path, capsys):
    """A lab file with REQUIRES runs in a derived stack (its base stack plus its packages); the
    scan's probe stacks are of that derived stack, so each release holds the lab's packages too
    and the file itself runs there, not a catalogue stack without them."""
    from kit.cli import main
    from kit.envs.derived import base_of

    plat = detect()
    if stack_kind(BASE).status(plat)[0] == "unavailable":
        pytest.skip(stack_kind(BASE).status(plat)[1])
    f = tmp_path / "versioned_requires.py"
    f.write_text(
        _VERSIONED.replace(
            'SEEDS = ("draw",)', 'SEEDS = ("draw",)\nREQUIRES = ("tabulate>=0.8",)'
        ).replace(
            '"steady": np.arange(4.0),',
            '"steady": np.arange(4.0) + 0 * len(__import__("tabulate").tabulate([[1]])),',
        )
    )
    assert (
        main(
            [
                "run",
                "--pipeline",
                str(f),
                "--factor",
                "seed:draw",
                "--stack",
                BASE,
                "--seeds",
                "0,1",
                "--threads",
                "1",
                "--yes",
            ]
        )
        == 0
    )
    capsys.readouterr()
    argv = [
        "explain",
        "seed:draw",
        "--pipeline",
        str(f),
        "--library",
        "scikit-learn",
        "1.5.2",
        "1.6.0",
        "--yes",
        "--json",
    ]
    assert main(argv) == 0, capsys.readouterr().err
    got = json.loads(capsys.readouterr().out)["pairs"][0]
    stacks = [r["stack"] for r in got["releases"]]
    assert all(
        s and "req-" in s and base_of(s.split("probe-", 1)[1].rsplit("-scikit-learn", 1)[0])
        for s in stacks
    ), stacks
    assert [r["status"] for r in got["releases"]] == ["built", "built"]
    assert got["outputs"]["minor"]["changes_at"] == ["1.6.0"]
    # read back with nothing run: by the store's reader and by the TUI's budget tab (x)
    from kit.analysis.explain_stored import stored_output_explanations
    from kit.data.pipelines import file_sha256

    sha = file_sha256(f)
    before = len(Store().specs())
    [x] = stored_output_explanations(Store(), sha)
    assert x["factor"] == "seed:draw" and x["pairs"][0].stages["minor"].changes_at == ("1.6.0",)
    said = asyncio.run(_x_on_the_file(sha))
    assert "Where your file's outputs change" in said[0]
    assert "minor is identical at both ends but changes at 1.6.0" in said[0]
    assert "your pipeline's budget" in said[1] or "pipeline versioned_requires.py" in said[1]
    assert len(Store().specs()) == before


async def _x_on_the_file(sha: str) -> list:
    """The budget tab of a lab file chosen in Setup: x, then x again; the pane's text each time."""
    from textual.widgets import Input

    from kit.envs.platforms import Platform
    from kit.tui.app import KitApp

    plat = Platform("linux", "x86_64", cpu_flags=frozenset({"avx", "avx2"}), downloads=True)
    seen = []
    async with KitApp("synthetic", 120, platform=plat, store=Store()).run_test(
        size=(100, 30)
    ) as pilot:
        field = pilot.app.query_one("#pipeline-file", Input)
        field.focus()
        field.value = sha[:10]
        await pilot.press("enter", "escape", "4")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        for _ in range(2):
            await pilot.press("x")
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
            seen.append(" ".join(str(pilot.app.query_one("#explain-text").render()).split()))
    return seen
