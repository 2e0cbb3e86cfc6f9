"""kit.app.bundle: export/import round trip; malformed or forged bundles refused, store untouched.

Forged bundles are made with consistent checksums (the manifest rewritten too), so what refuses
them is the check of the runs themselves: referenced arrays only, their recorded dtype, shape
and hash, sizes bounded by what the runs account for, no runs claiming to be this machine's.
"""

import hashlib
import io
import json
import tarfile

import numpy as np
import pytest
from stored import budget_store

from kit.analysis.verdicts import run_verdicts
from kit.app.bundle import export, import_bundle, read
from kit.cli import main
from kit.core.errors import KitError
from kit.runs.store import Store


@pytest.fixture
def bundle(tmp_path):
    st = budget_store(tmp_path, home=tmp_path / "a")
    ids = [r.id for r in st.runs()]
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
        assert a.spec == b.spec and a.stages == b.stages
        assert (dst.array(r, "svd_rand") == src.array(r, "svd_rand")).all()
        assert dst.verdicts(r, 1) is None  # never imported: computed here, from the arrays
        assert run_verdicts(dst, r) == run_verdicts(src, r)
    assert len(dst.pairs()) == 4


def test_hash_only_bundle_keeps_hashes_and_says_arrays_are_missing(tmp_path):
    st = budget_store(tmp_path, home=tmp_path / "a")
    out = export(st, [r.id for r in st.runs()], tmp_path / "h.kit", arrays=False)
    dst = Store(tmp_path / "b")
    import_bundle(dst, out["file"])
    run = st.runs()[0].id
    assert dst.run(run).stages["knn"].sha256 == st.run(run).stages["knn"].sha256
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


@pytest.mark.parametrize(
    "change,error",
    [
        (
            lambda ms: [(n, d + b"x" if n == "bundle.json" else d) for n, d in ms],
            "checksum mismatch",
        ),
        (lambda ms: ms + [("../escape.txt", b"hi")], "refusing member '../escape.txt'"),
        (lambda ms: ms + [("/etc/passwd", b"hi")], "refusing member '/etc/passwd'"),
        (lambda ms: ms + [("notes.txt", b"hi")], "refusing member 'notes.txt'"),
        (lambda ms: [(n, d) for n, d in ms if n != "MANIFEST.json"], "expected MANIFEST.json"),
        (lambda ms: [(n, d) for n, d in ms if not n.startswith("arrays/")][:2], "cut short"),
    ],
    ids=["checksum", "traversal", "absolute", "stray", "no-manifest", "arrays-missing"],
)
def test_malformed_bundles_are_refused_and_the_store_untouched(bundle, tmp_path, change, error):
    _, _, out = bundle
    bad = tmp_path / "bad.kit"
    rewrite(out["file"], bad, change)
    dst = Store(tmp_path / "b")
    with pytest.raises(KitError, match=error):
        import_bundle(dst, bad)
    assert dst.runs() == [] and dst.pairs() == []


@pytest.mark.parametrize(
    "member,kind,target,said",
    [
        ("MANIFEST.json", tarfile.DIRTYPE, "", "its MANIFEST.json is a folder, not a file"),
        (
            "MANIFEST.json",
            tarfile.SYMTYPE,
            "/etc/passwd",
            "its MANIFEST.json is a symbolic link (to '/etc/passwd'), not a file",
        ),
        (
            "MANIFEST.json",
            tarfile.LNKTYPE,
            "bundle.json",
            "its MANIFEST.json is a hard link (to 'bundle.json'), not a file",
        ),
        ("arrays/", tarfile.SYMTYPE, "/etc/passwd", "is a symbolic link (to '/etc/passwd')"),
    ],
    ids=["manifest-folder", "manifest-symlink", "manifest-hardlink", "array-symlink"],
)
def test_a_member_that_is_a_folder_or_a_link_is_said_to_be_one(
    bundle, tmp_path, member, kind, target, said
):
    """Issue 54 item 8: a forged MANIFEST.json that is a folder or a link was refused as
    "refusing member 'MANIFEST.json' (expected MANIFEST.json)", and an array that is a link
    as "the member is 0 bytes; at most N fit what its run recorded"."""
    _, _, out = bundle
    bad = tmp_path / "bad.kit"
    with tarfile.open(out["file"], "r:gz") as tin, tarfile.open(bad, "w:gz") as tout:
        for m in tin.getmembers():
            if m.name.startswith(member):
                member = m.name  # the first array, for "arrays/"
                info = tarfile.TarInfo(m.name)
                info.type, info.linkname = kind, target
                tout.addfile(info)
            else:
                tout.addfile(m, tin.extractfile(m))
    dst = Store(tmp_path / "b")
    with pytest.raises(KitError) as e:
        import_bundle(dst, bad)
    assert said in str(e.value) and "expected" not in str(e.value), str(e.value)
    assert str(e.value).startswith(f"{bad}: ")
    assert dst.runs() == [] and dst.pairs() == []


def test_a_tampered_spec_or_array_is_refused(bundle, tmp_path):
    _, _, out = bundle

    # the id no longer matches the spec
    bad = _with_doc(out, tmp_path, lambda doc: doc["runs"][0]["spec"].update(threads=7))
    with pytest.raises(KitError, match="id does not match its spec"):
        read(bad)


def test_not_a_bundle(tmp_path):
    junk = tmp_path / "junk.kit"
    junk.write_bytes(b"not a tar at all")
    with pytest.raises(KitError, match="not a kit bundle"):
        read(junk)


def forged(src, dst, change_members):
    """Rewrite a bundle with ``change_members(dict)`` and a manifest that matches the result."""

    def change(ms):
        ms = change_members(dict(ms))
        body = {n: d for n, d in ms.items() if n != "MANIFEST.json"}
        man = {
            n: {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)} for n, d in body.items()
        }
        return [
            ("MANIFEST.json", json.dumps(man).encode()),
            ("bundle.json", body.pop("bundle.json")),
            *body.items(),
        ]

    rewrite(src, dst, change)
    return dst


def _npy(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def test_bytes_planted_at_a_key_no_run_refers_to_are_refused(bundle, tmp_path):
    """Blob keys are the same on every machine: a bundle could plant bytes for a later run."""
    _, _, out = bundle
    key = "ab" * 32
    bad = forged(
        out["file"],
        tmp_path / "plant.kit",
        lambda ms: {**ms, f"arrays/{key}.npy": _npy(np.zeros(3))},
    )
    with pytest.raises(KitError, match="is not an array of its runs"):
        read(bad)


def test_an_array_whose_dtype_disagrees_with_its_run_is_refused(bundle, tmp_path):
    _, _, out = bundle
    doc = json.loads(dict((n, d) for n, d in _members(out["file"]))["bundle.json"])
    run = doc["runs"][0]
    member = f"arrays/{run['blobs']['lr']}.npy"

    def retype(ms):
        a = np.load(io.BytesIO(ms[member]))
        return {**ms, member: _npy(a.view(np.int64))}  # the same bytes, another dtype

    with pytest.raises(KitError, match="not the array its run recorded .*dtype <i8, recorded <f8"):
        read(forged(out["file"], tmp_path / "retype.kit", retype))
    cut = forged(out["file"], tmp_path / "cut.kit", lambda ms: {**ms, member: ms[member][:40]})
    with pytest.raises(KitError, match="not the array its run recorded .*not a readable .npy"):
        read(cut)


def test_runs_claiming_this_machine_are_refused(bundle, tmp_path, monkeypatch):
    """Rewritten to carry this KIT_HOME's host id, a lab's runs looked like this machine's own
    ("4 stored, 0 to run"). Spec ids are recomputed so only the claim gives them away."""
    from kit.core.spec import RunSpec
    from kit.runs.store.hosts import host_id

    _, _, out = bundle
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "here"))
    here = host_id()

    def claim(ms):
        doc = json.loads(ms["bundle.json"])
        ids = {}
        for r in doc["runs"]:
            r["spec"]["host"] = here
            new = RunSpec.from_json(json.dumps(r["spec"])).run_id
            ids[r["id"]], r["id"] = new, new
        for p in doc["pairs"]:
            p["a"], p["b"] = ids[p["a"]], ids[p["b"]]
        return {**ms, "bundle.json": json.dumps(doc).encode()}

    bad = forged(out["file"], tmp_path / "claim.kit", claim)
    dst = Store(tmp_path / "here")
    with pytest.raises(KitError, match="claims to have been made on this machine"):
        import_bundle(dst, bad)
    assert dst.runs() == []


@pytest.mark.parametrize(
    "change",
    [
        lambda doc: doc.pop("runs"),
        lambda doc: doc["runs"][0]["stages"]["lr"].update(shape="x"),
        lambda doc: doc.update(host=None),
        lambda doc: doc["pairs"].append({"factor": 1}),
    ],
    ids=["no-runs", "bad-shape", "no-host", "bad-pair"],
)
def test_a_malformed_bundle_json_is_one_line(bundle, tmp_path, change):
    _, _, out = bundle

    def edit(ms):
        doc = json.loads(ms["bundle.json"])
        change(doc)
        return {**ms, "bundle.json": json.dumps(doc).encode()}

    with pytest.raises(KitError, match="bundle.json is malformed"):
        read(forged(out["file"], tmp_path / "m.kit", edit))


def test_a_gzip_bomb_is_refused_before_it_is_read(bundle, tmp_path):
    """An array member 300 MB of zeros (300 KB compressed) where its run accounts for 160 bytes:
    refused from the tar header, in a process whose memory stays small."""
    import subprocess
    import sys

    _, _, out = bundle
    doc = json.loads(dict(_members(out["file"]))["bundle.json"])
    member = f"arrays/{doc['runs'][0]['blobs']['lr']}.npy"
    bomb = tmp_path / "bomb.kit"
    forged(out["file"], bomb, lambda ms: {**ms, member: bytes(300 * 2**20)})
    assert bomb.stat().st_size < 2 * 2**20
    code = (
        "import resource, sys; from kit.app.bundle import read; from kit.core.errors import KitError\n"
        "try:\n    read(sys.argv[1])\nexcept KitError as e:\n    print(e)\n"
        "print(next(int(ln.split()[1]) for ln in open('/proc/self/status') if ln.startswith('VmHWM')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(bomb)], capture_output=True, text=True, timeout=120
    )
    msg, rss_kib = proc.stdout.strip().splitlines()
    assert "at most" in msg and "fit what its run recorded" in msg
    # VmHWM, this process's own peak: ru_maxrss survives exec on Linux, so it read the pytest
    # parent's size (80 MB alone, 442 MB after a few hundred tests)
    assert int(rss_kib) < 400 * 1024  # never near the 300 MB the member claims


def _members(path):
    with tarfile.open(path, "r:gz") as t:
        return [(m.name, t.extractfile(m).read()) for m in t.getmembers()]


def test_cli_export_import(tmp_path, capsys, monkeypatch):
    budget_store(tmp_path, home=tmp_path / "a")
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "a"))
    assert main(["export", "--out", str(tmp_path / "x.kit"), "--arrays"]) == 0
    assert "5 runs" in capsys.readouterr().out
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "b"))
    assert main(["import", str(tmp_path / "x.kit")]) == 0
    assert "imported 5 new of 5 runs" in capsys.readouterr().out
    assert main(["import", str(tmp_path / "nope.kit")]) == 1
    assert "no bundle at" in capsys.readouterr().err


def test_export_refuses_to_ship_a_damaged_array(tmp_path):
    st = budget_store(tmp_path, home=tmp_path / "a")
    run = st.runs()[0].id
    f = st.blob_path(st.stage_blobs(run)["lr"])
    f.write_bytes(f.read_bytes()[:-1] + b"\x07")
    with pytest.raises(KitError, match="is damaged"):
        export(st, [run], tmp_path / "x.kit", arrays=True)
    assert not (tmp_path / "x.kit").exists()


def _with_doc(out, tmp_path, change):
    """A copy of the bundle whose bundle.json ``change(doc)`` altered, its checksums rewritten
    to match (what refuses it is the check of bundle.json itself)."""

    def forge(ms):
        ms = dict(ms)
        doc = json.loads(ms["bundle.json"])
        change(doc)
        ms["bundle.json"] = json.dumps(doc).encode()
        man = json.loads(ms["MANIFEST.json"])
        man["bundle.json"] = {
            "sha256": hashlib.sha256(ms["bundle.json"]).hexdigest(),
            "size": len(ms["bundle.json"]),
        }
        ms["MANIFEST.json"] = json.dumps(man).encode()
        return list(ms.items())

    bad = tmp_path / "forged.kit"
    rewrite(out["file"], bad, forge)
    return bad


_PROBE = "probe-np1-sk152-scikit-learn-1.6.0"
_WHAT = {"base": "np1-sk152", "package": "scikit-learn", "version": "1.6.0"}
_LOCK = (
    'version = 1\n[[package]]\nname = "scikit-learn"\nversion = "1.6.0"\n'
    'source = { url = "https://evil.example/sk.whl" }\n'
)
_PYPROJECT = '[project]\nname = "x"\ndependencies = ["scikit-learn==1.6.0"]\n'
_META = json.dumps(
    {
        "pyproject_sha256": hashlib.sha256(_PYPROJECT.encode()).hexdigest(),
        "def": {
            "name": _PROBE,
            "lock": _PROBE,
            "python": "3.12",
            "arch": None,
            "versions": {},
            "devices": ["cpu"],
        },
    }
)


@pytest.mark.parametrize(
    "probes,error",
    [
        # a lock that holds together (probe.json names itself and hashes its pyproject): refused,
        # since a lock is code to install; a bundle says what a probe is, the reader locks it
        (
            {_PROBE: {"pyproject.toml": _PYPROJECT, "uv.lock": _LOCK, "probe.json": _META}},
            "is malformed",
        ),
        ({_PROBE: _WHAT}, "is no stack of its runs"),
        (
            {_PROBE: {**_WHAT, "version": "1.5.2"}},
            "is not the probe of np1-sk152 at scikit-learn 1.5.2",
        ),
        ({_PROBE.upper(): _WHAT}, "is malformed"),
        ({"probe-" + "a" * 300: _WHAT}, "is malformed"),
        ({_PROBE: {**_WHAT, "version": 3}}, "is malformed"),
    ],
    ids=["forged-lock", "no-run-of-it", "mislabelled", "uppercase", "long-name", "not-text"],
)
def test_a_bundle_s_probes_are_what_its_runs_ran_in_and_never_a_lock(
    bundle, tmp_path, kit_home, probes, error
):
    _, _, out = bundle
    bad = _with_doc(out, tmp_path, lambda doc: doc.update(probes=probes))
    dst = Store(tmp_path / "b")
    with pytest.raises(KitError, match=error) as e:
        import_bundle(dst, bad)
    assert "\n" not in str(e.value) and len(str(e.value)) < 300
    assert dst.runs() == [] and not (kit_home / "probes").exists()  # nothing written


def test_a_bundle_without_probes_imports_as_before(bundle, tmp_path, kit_home):
    _, _, out = bundle
    old = _with_doc(out, tmp_path, lambda doc: doc.pop("probes", None))
    assert import_bundle(Store(tmp_path / "b"), old)["added"] == 5
    assert not (kit_home / "probes").exists()


def test_export_streams_each_array_from_its_file_never_holding_it(tmp_path):
    """An array is verified and copied from the store's file as it streams by: export's own
    allocations stay far below the array (np.save into memory held it twice over, issue 40);
    the bundle imports whole."""
    import tracemalloc

    from stored import put
    from stored import spec as a_spec

    src = Store(tmp_path / "a")
    big = np.random.default_rng(0).random((20_000, 100))  # 16 MB
    spec = a_spec()
    put(src, tmp_path, spec, {"svd_rand": big})
    src.blobs.index.forget_verified(src.stage_blobs(spec.run_id)["svd_rand"])  # hashed again
    tracemalloc.start()
    try:
        export(src, [spec.run_id], tmp_path / "big.kit", arrays=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < big.nbytes / 4, peak
    dst = Store(tmp_path / "b")
    assert import_bundle(dst, tmp_path / "big.kit")["added"] == 1
    assert (dst.array(spec.run_id, "svd_rand") == big).all()


def test_the_stage_hash_copies_nothing_of_a_c_order_array():
    import tracemalloc

    from kit.runs.store import array_sha256

    a = np.random.default_rng(0).random(2_000_000)
    tracemalloc.start()
    try:
        got = array_sha256(a)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == hashlib.sha256(a.tobytes()).hexdigest() and peak < a.nbytes / 16, peak
    t = a.reshape(1000, 2000).T  # not C-order: hashed as its C-order bytes, as before
    assert array_sha256(t) == hashlib.sha256(np.ascontiguousarray(t).tobytes()).hexdigest()


def test_export_refuses_a_stage_above_what_import_takes(tmp_path, monkeypatch):
    """An older kit stored it; the cap is import's own (kit.core.caps), said before writing."""
    from stored import put
    from stored import spec as a_spec

    st = Store(tmp_path / "a")
    spec = a_spec()
    put(st, tmp_path, spec, {"svd_rand": np.zeros((2048, 128))})  # 2 MiB
    monkeypatch.setenv("KIT_BUNDLE_MAX_ARRAY_MIB", "1")
    for arrays in (True, False):
        with pytest.raises(
            KitError,
            match="stage 'svd_rand' holds 2 MiB, above the 1 MiB a stage "
            "may hold .* no `kit import` would read it",
        ):
            export(st, [spec.run_id], tmp_path / "x.kit", arrays=arrays)
    assert not (tmp_path / "x.kit").exists()
