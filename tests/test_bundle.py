"""kit.bundle: export/import round trip; malformed bundles refused with the store untouched."""

import io
import json
import tarfile

import pytest

from kit.bundle import export, import_bundle, read
from kit.cli import main
from kit.errors import KitError
from kit.store import Store
from stored import budget_store


@pytest.fixture
def bundle(tmp_path):
    st = budget_store(tmp_path, home=tmp_path / "a")
    ids = [r["id"] for r in st.runs()]
    out = export(st, ids, tmp_path / "lab.kit", arrays=True)
    return st, ids, out


def test_round_trip_is_complete_and_idempotent(bundle, tmp_path):
    src, ids, out = bundle
    assert out["runs"] == 5 and out["pairs"] == 4 and len(out["sha256"]) == 64
    dst = Store(tmp_path / "b")
    first = import_bundle(dst, out["file"])
    assert first["added"] == 5 and first["arrays"] > 0
    assert import_bundle(dst, out["file"])["added"] == 0  # idempotent
    for r in ids:
        a, b = src.run(r), dst.run(r)
        assert a["spec"] == b["spec"] and a["stages"] == b["stages"]
        assert (dst.array(r, "svd_rand") == src.array(r, "svd_rand")).all()
        assert dst.verdicts(r, 1) == src.verdicts(r, 1)
    assert len(dst.pairs()) == 4


def test_hash_only_bundle_keeps_hashes_and_says_arrays_are_missing(tmp_path):
    st = budget_store(tmp_path, home=tmp_path / "a")
    out = export(st, [r["id"] for r in st.runs()], tmp_path / "h.kit", arrays=False)
    dst = Store(tmp_path / "b")
    import_bundle(dst, out["file"])
    run = st.runs()[0]["id"]
    assert dst.run(run)["stages"]["knn"]["sha256"] == st.run(run)["stages"]["knn"]["sha256"]
    with pytest.raises(KitError, match="imported without its arrays"):
        dst.array(run, "knn")


def rewrite(src, dst, change):
    """Copy a bundle, letting ``change(name, data)`` alter, drop (None) or add members."""
    with tarfile.open(src, "r:gz") as tin, tarfile.open(dst, "w:gz") as tout:
        members = [(m.name, tin.extractfile(m).read()) for m in tin.getmembers()]
        for name, data in change(members):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tout.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize("change,error", [
    (lambda ms: [(n, d + b"x" if n == "bundle.json" else d) for n, d in ms], "checksum mismatch"),
    (lambda ms: ms + [("../escape.txt", b"hi")], "refusing member '../escape.txt'"),
    (lambda ms: ms + [("/etc/passwd", b"hi")], "refusing member '/etc/passwd'"),
    (lambda ms: ms + [("notes.txt", b"hi")], "refusing member 'notes.txt'"),
    (lambda ms: [(n, d) for n, d in ms if n != "MANIFEST.json"], "MANIFEST.json or bundle.json missing"),
])
def test_malformed_bundles_are_refused_and_the_store_untouched(bundle, tmp_path, change, error):
    _, _, out = bundle
    bad = tmp_path / "bad.kit"
    rewrite(out["file"], bad, change)
    dst = Store(tmp_path / "b")
    with pytest.raises(KitError, match=error):
        import_bundle(dst, bad)
    assert dst.runs() == [] and dst.pairs() == []


def test_a_tampered_spec_or_array_is_refused(bundle, tmp_path):
    _, _, out = bundle

    def forge(ms):
        ms = dict(ms)
        doc = json.loads(ms["bundle.json"])
        doc["runs"][0]["spec"]["threads"] = 7  # the id no longer matches the spec
        ms["bundle.json"] = json.dumps(doc).encode()
        man = json.loads(ms["MANIFEST.json"])
        import hashlib
        man["bundle.json"] = {"sha256": hashlib.sha256(ms["bundle.json"]).hexdigest(),
                              "size": len(ms["bundle.json"])}
        ms["MANIFEST.json"] = json.dumps(man).encode()
        return list(ms.items())

    bad = tmp_path / "forged.kit"
    rewrite(out["file"], bad, forge)
    with pytest.raises(KitError, match="id does not match its spec"):
        read(bad)


def test_oversized_member_and_not_a_bundle(bundle, tmp_path, monkeypatch):
    import kit.bundle as b
    _, _, out = bundle
    monkeypatch.setattr(b, "MAX_MEMBER", 100)
    with pytest.raises(KitError, match="too large"):
        read(out["file"])
    junk = tmp_path / "junk.kit"
    junk.write_bytes(b"not a tar at all")
    with pytest.raises(KitError, match="not a kit bundle"):
        read(junk)


def test_cli_export_import(tmp_path, capsys, monkeypatch):
    budget_store(tmp_path, home=tmp_path / "a")
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "a"))
    assert main(["export", "--out", str(tmp_path / "x.kit"), "--arrays"]) == 0
    assert "5 runs" in capsys.readouterr().out
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "b"))
    assert main(["import", str(tmp_path / "x.kit")]) == 0
    assert "imported 5 new of 5 runs" in capsys.readouterr().out
    assert main(["import", str(tmp_path / "nope.kit")]) == 1
