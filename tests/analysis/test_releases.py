"""A release scan cannot be planted: a bundle's probe runs are checked against this kit's
catalogue, and read only once verified."""

import json

import pytest
from stored import arrays, env, put, spec

from kit.analysis.explain import PairExplanation, StageOrigin
from kit.analysis.explain_stored import _feeds, _probed, _scan
from kit.analysis.releases import Release, apply_scan, scan_index, scan_specs
from kit.app.bundle import export
from kit.cli import main
from kit.runs.store import Store
from kit.runs.store.hosts import host_id
from kit.runs.store.records import StoredPair
from kit.worker.pipeline import fed_stages
from tests.app.test_bundle_derived import forge, members

BASE = "np1-sk152"
PINS = {"numpy": "1.26.4", "scipy": "1.13.1", "scikit-learn": "1.5.2"}
MODELS = ("kmeans", "knn", "lr", "mlp", "hgb", "rf")


def _probe(store, tmp_path, a, version, seed, stack=None, held=None):
    """A scan's feed run on a's arrays in the probe of scikit-learn ``version`` (made in this
    KIT_HOME, with its host id), its manifest measuring ``held`` (default: that release)."""
    r = Release(version, stack or f"probe-{BASE}-scikit-learn-{version}", str(seed % 10) * 64)
    s = scan_specs(a, [r], ("models",))[0]
    put(
        store,
        tmp_path,
        s,
        {n: x for n, x in arrays(10 + seed).items() if n in fed_stages("models")},
        env(packages={**PINS, "scikit-learn": held or version}),
    )
    return s


@pytest.fixture
def homes(tmp_path, monkeypatch):
    """The importer's store (its run a at scikit-learn 1.5.2, b at 1.6.0, a sklearn pair, and
    its own scan of 1.5.2 and 1.6.0) and an attacker's home holding a copy of a."""
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "here"))
    here = Store()
    a = spec(stack=BASE, host=host_id())
    put(here, tmp_path / "here", a, arrays(0), env(packages=PINS))
    b = a.with_(stack_id="b" * 64)
    put(here, tmp_path / "here", b, arrays(1), env(packages={**PINS, "scikit-learn": "1.6.0"}))
    pair = StoredPair("sklearn", "", a.run_id, b.run_id, "1.5.2 vs 1.6.0")
    own = [_probe(here, tmp_path / "here", a, v, i) for i, v in enumerate(("1.5.2", "1.6.0"))]
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "lab"))
    lab = Store()
    (tmp_path / "lab-out").mkdir()
    put(lab, tmp_path / "lab-out", a, arrays(0), env(packages=PINS))  # a, as a bundle showed it
    return here, lab, a, pair, own


def _readings(store, a, pair):
    """What every reader of a scan reads: its index, the releases found, each stage's changes."""
    fed = _feeds(store)
    package, releases = _scan(store, pair, fed)
    e = PairExplanation(
        pair.a, pair.b, pair.label, "", {s: StageOrigin("originates", flips=1) for s in MODELS}
    )
    e = apply_scan(e, store, a, package, releases) if package else e
    return (
        scan_index(store, a),
        _probed(store, pair, fed),
        package,
        {s: (o.changes_at, o.back_to) for s, o in e.stages.items()},
        e.releases,
    )


def _planted(tmp_path, lab, a, ids, name="planted.kit"):
    """A hashes-only bundle of ``ids``, written by a real `kit export` in the attacker's home."""
    return export(lab, ids, tmp_path / name, arrays=False)["file"]


def _go_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "here"))
    return Store()


def test_planted_probe_runs_on_the_importer_s_own_run_are_refused(
    homes, tmp_path, monkeypatch, capsys
):
    """The issue's bundle: fake probe runs whose input is the importer's own run, not in it."""
    here, lab, a, pair, _ = homes
    fake = [
        _probe(lab, tmp_path / "lab-out", a, v, 5 + i) for i, v in enumerate(("1.5.1", "1.5.3"))
    ]
    bundle = _planted(tmp_path, lab, a, [s.run_id for s in fake])
    _go_home(tmp_path, monkeypatch)
    before = len(Store().runs())
    assert main(["import", bundle]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"its input run {a.run_id[:12]} is not in the bundle" in err
    assert len(Store().runs()) == before


def test_planted_probe_runs_with_their_input_are_hashes_only_and_never_read(
    homes, tmp_path, monkeypatch, capsys
):
    """With a's record in the bundle too (a is here already, so the host rule lets it by), the
    fake runs are imported hashes-only: every scan reading is what it was without the bundle,
    not a change at 1.5.3 (own scan: 1.6.0)."""
    here, lab, a, pair, _ = homes
    truth = _readings(here, a, pair)
    assert truth[2] == "scikit-learn" and truth[3]["lr"][0] == ("1.6.0",)
    fake = [
        _probe(lab, tmp_path / "lab-out", a, v, 5 + i) for i, v in enumerate(("1.5.3", "1.5.4"))
    ]
    bundle = _planted(tmp_path, lab, a, [a.run_id] + [s.run_id for s in fake])
    here = _go_home(tmp_path, monkeypatch)
    assert main(["import", bundle]) == 0
    capsys.readouterr()
    assert {s.run_id for s in fake} <= set(here.specs())  # stored, as runs from elsewhere
    assert _readings(here, a, pair) == truth


def test_a_scan_planted_where_there_was_none_reads_as_none(homes, tmp_path, monkeypatch, capsys):
    """'2 of 2 releases scanned' with no scan at all: the importer's own scan runs gone, the
    planted ones are not read."""
    here, lab, a, pair, own = homes
    here.db.execute("DELETE FROM stages WHERE run IN (?,?)", tuple(s.run_id for s in own))
    here.db.execute("DELETE FROM runs WHERE id IN (?,?)", tuple(s.run_id for s in own))
    here.db.commit()
    assert _readings(Store(here.root), a, pair)[:3] == ({}, {}, None)
    fake = [
        _probe(lab, tmp_path / "lab-out", a, v, 5 + i) for i, v in enumerate(("1.5.2", "1.6.0"))
    ]
    bundle = _planted(tmp_path, lab, a, [a.run_id] + [s.run_id for s in fake])
    here = _go_home(tmp_path, monkeypatch)
    assert main(["import", bundle]) == 0
    capsys.readouterr()
    assert _readings(here, a, pair)[:3] == ({}, {}, None)


@pytest.mark.parametrize(
    "stack,held,words",
    [
        ("probe-nosuch-scikit-learn-1.6.1", None, "no stack of this kit's catalogue"),
        (f"probe-{BASE}-antigravity-1.0.0", None, "no stack of this kit's catalogue"),
        (
            f"probe-{BASE}-scikit-learn-1.6.1",
            "1.5.2",
            "its manifest records scikit-learn 1.5.2, not 1.6.1",
        ),
    ],
    ids=["not-in-catalogue", "package-not-pinned", "manifest-disagrees"],
)
def test_a_probe_run_kit_cannot_describe_is_refused(
    homes, tmp_path, monkeypatch, capsys, stack, held, words
):
    here, lab, a, pair, _ = homes
    fake = _probe(lab, tmp_path / "lab-out", a, "1.6.1", 7, stack=stack, held=held)
    bundle = _planted(tmp_path, lab, a, [a.run_id, fake.run_id])
    _go_home(tmp_path, monkeypatch)
    before = len(Store().runs())
    assert main(["import", bundle]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and words in err, err
    assert len(Store().runs()) == before


def test_the_bundle_s_own_probes_section_does_not_describe_a_probe(
    homes, tmp_path, monkeypatch, capsys
):
    """A probes section naming the unknown stack as a probe of a catalogue one (forged, consistent
    with check_carried's own rule) describes nothing: the catalogue decides."""
    here, lab, a, pair, _ = homes
    fake = _probe(lab, tmp_path / "lab-out", a, "1.6.1", 7, stack="probe-nosuch-scikit-learn-1.6.1")
    path = _planted(tmp_path, lab, a, [a.run_id, fake.run_id])

    def claim(doc, ms):
        doc["probes"] = {
            fake.stack: {"base": "nosuch", "package": "scikit-learn", "version": "1.6.1"}
        }

    bundle = forge(path, tmp_path / "claimed.kit", claim)
    assert json.loads(members(bundle)["bundle.json"])["probes"]
    _go_home(tmp_path, monkeypatch)
    before = len(Store().runs())
    assert main(["import", str(bundle)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no stack of this kit's catalogue" in err, err
    assert len(Store().runs()) == before


def test_a_whole_run_in_a_probe_stack_is_refused(homes, tmp_path, monkeypatch, capsys):
    """A probe stack's runs are a scan's feed runs: a pipeline run under a probe's name is none."""
    here, lab, a, pair, _ = homes
    whole = a.with_(stack=f"probe-{BASE}-scikit-learn-1.6.1", host=host_id())
    put(
        lab, tmp_path / "lab-out", whole, arrays(3), env(packages={**PINS, "scikit-learn": "1.6.1"})
    )
    bundle = _planted(tmp_path, lab, a, [a.run_id, whole.run_id])
    _go_home(tmp_path, monkeypatch)
    assert main(["import", bundle]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is a pipeline run; a probe stack's runs are" in err, err
