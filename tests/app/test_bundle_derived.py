"""A bundle is trusted for runs and arrays only, each bounded; derived numbers are recomputed here.

Every bundle here is made by `kit export --arrays` in one KIT_HOME and then forged as an
attacker would: the runs' stage records, blob keys and manifests rewritten to match the forged
arrays, and MANIFEST.json's sizes and sha256 recomputed. What must refuse (or ignore) the
forgery is kit's own check of what it is given, never a checksum.
"""

import hashlib
import io
import json
import sqlite3
import tarfile

import numpy as np
import pytest
from stored import budget_store

from kit.analysis.compare import compare_runs
from kit.analysis.verdicts import KEYS, VERSION, run_verdicts
from kit.app.bundle import import_bundle
from kit.cli import main
from kit.core.errors import KitError
from kit.data import load_dataset
from kit.runs.store import Store
from kit.runs.store.blobs import array_sha256, blob_key


@pytest.fixture
def lab(tmp_path, monkeypatch):
    return exported_lab(tmp_path, monkeypatch)


def exported_lab(tmp_path, monkeypatch):
    """A lab's store on a real (synthetic) dataset and its bundle, written by `kit export`."""
    ds = load_dataset("synthetic", 120)
    src = budget_store(tmp_path, dataset=ds, home=tmp_path / "lab")
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "lab"))
    assert main(["export", "--out", str(tmp_path / "lab.kit"), "--arrays"]) == 0
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "here"))
    return src, tmp_path / "lab.kit", ds


def members(path) -> dict:
    with tarfile.open(path, "r:gz") as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers()}


def write(ms: dict, out):
    """A bundle of ``ms`` (bundle.json and arrays), with a MANIFEST.json that matches them."""
    body = {n: d for n, d in ms.items() if n != "MANIFEST.json"}
    man = (
        ms.get("MANIFEST.json")
        or json.dumps(
            {n: {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)} for n, d in body.items()}
        ).encode()
    )
    with tarfile.open(out, "w:gz") as t:
        for name, data in [
            ("MANIFEST.json", man),
            ("bundle.json", body.pop("bundle.json")),
            *body.items(),
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return out


def forge(path, out, edit):
    """``edit(doc, ms)`` changes the document (and members); the bundle is written consistently."""
    ms = members(path)
    ms.pop("MANIFEST.json")
    doc = json.loads(ms["bundle.json"])
    edit(doc, ms)
    ms["bundle.json"] = json.dumps(doc).encode()
    return write(ms, out)


def npy(a) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def restage(run: dict, ms: dict, stage: str, a: np.ndarray):
    """Give ``run`` another array at ``stage``, recorded everywhere a real export records it."""
    info = {"sha256": array_sha256(a), "dtype": a.dtype.str, "shape": list(a.shape)}
    run["stages"][stage] = info
    run["manifest"]["stages"][stage] = info
    run["blobs"][stage] = blob_key(info["sha256"], info["dtype"], info["shape"])
    ms[f"arrays/{run['blobs'][stage]}.npy"] = npy(a)


def refused(capsys, bundle, *words):
    """`kit import` exits 1 with one line holding ``words``, and stores nothing."""
    assert main(["import", str(bundle)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "internal error" not in err
    for w in words:
        assert w in err, err
    assert Store().runs() == []
    return err


def test_reversed_verdicts_in_a_bundle_are_never_shown(lab, tmp_path):
    """Old bundles carry each run's verdicts: reversed ones are ignored, the true ones computed."""
    src, path, _ = lab
    truth = {r.id: run_verdicts(src, r.id) for r in src.runs()}
    flip = {">": "<", "<": ">", "=": ">"}

    def reverse(doc, ms):
        for r in doc["runs"]:
            v = json.loads(json.dumps(truth[r["id"]]))
            for k in KEYS:
                v[k]["verdict"], v[k]["diff"] = flip[v[k]["verdict"]], -v[k]["diff"]
            r["verdicts"] = v

    here = Store()
    import_bundle(here, forge(path, tmp_path / "reversed.kit", reverse))
    for r in truth:
        assert here.verdicts(r, VERSION) is None  # nothing of the bundle's was stored
        assert run_verdicts(here, r) == truth[r]  # recomputed from the arrays


def test_a_forged_dataset_summary_is_not_shown_as_verified(lab, tmp_path, capsys):
    src, path, ds = lab
    claim = {
        "name": "swissprot",
        "source": "uniprot",
        "rows": 6000,
        "test": 1998,
        "synthetic": False,
        "sha256": ds.sha256,
    }

    def lie(doc, ms):
        doc["datasets"][ds.sha256] = claim

    bundle = forge(path, tmp_path / "lie.kit", lie)
    here = Store()
    import_bundle(here, bundle)  # the synthetic set is not stored here yet: unverified
    stored = here.datasets()[ds.sha256]
    assert stored["verified"] is False and "swissprot" not in json.dumps(stored)
    assert main(["budget"]) == 0
    out = capsys.readouterr().out
    assert "swissprot" not in out and "6000" not in out and "unverified" in out
    # once the dataset is here (its file, its sha256), its own summary is what kit shows
    load_dataset("synthetic", 120)
    import_bundle(here, bundle)
    assert here.datasets()[ds.sha256] == ds.summary()
    assert main(["budget"]) == 0
    assert "[SYNTHETIC]" in capsys.readouterr().out


@pytest.mark.parametrize("rows", [200_000, 50_000, 120])
def test_a_dataset_hint_makes_no_data_on_import(lab, tmp_path, capsys, rows):
    """Issue 54 item 2: a hint of "synthetic, 200,000 rows" made a 72 MB dataset on import.
    Now an import makes none, whatever the hint says (its own size too), and one line says which
    dataset the runs need, at the size their arrays record, and how to make it (the lab's
    hand-made runs embedded 60 rows of it)."""
    _, path, ds = lab
    home = tmp_path / "here"

    def hint(doc, ms):
        doc["datasets"][ds.sha256] = {
            "name": f"synthetic-{rows}",
            "source": "synthetic",
            "rows": rows,
            "synthetic": True,
        }

    assert main(["import", str(forge(path, tmp_path / "hint.kit", hint))]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert not list(home.glob("datasets/**/*.json"))
    note = [line for line in err if line.startswith("note:")]
    assert len(note) == 1, err
    assert f"synthetic-{rows} by the bundle's word, 60 proteins by its runs" in note[0]
    assert "`kit data import` or `kit data fetch` makes it" in note[0]  # 60: no synthetic size
    assert Store().datasets()[ds.sha256]["verified"] is False


def test_a_bundle_s_dataset_label_is_never_read_as_a_dataset_name(lab, capsys):
    """Issue 54 item 8: after importing runs whose dataset is not here, `kit budget --n 150`
    said `dataset name "367fe3d936d0 (a bundle's; not on this machine, unverified)": use
    letters, digits, ...`: the store's label for that dataset was checked as a name."""
    _, path, ds = lab
    assert main(["import", str(path)]) == 0
    capsys.readouterr()
    for argv in (["budget"], ["verdicts"], ["advise"], ["runs"]):
        code = main([*argv, "--n", "150"])
        err = capsys.readouterr().err.strip()
        assert code == 1 and err.count("\n") == 0 and "dataset name" not in err, (argv, err)
        assert (
            f"the most recent run's dataset, {ds.sha256[:12]}, came in a bundle and is not on this machine"
            in err
        )
    assert main(["budget"]) == 0  # its runs, read as they are
    assert (
        f"{ds.sha256[:12]} (a bundle's; not on this machine, unverified)" in capsys.readouterr().out
    )


def test_compare_makes_the_synthetic_set_only_at_the_size_the_runs_record(lab, tmp_path):
    """`kit compare` reruns the runs, so it may make the synthetic set, but only at the size
    their arrays record: a hint of another size is refused in one line, nothing made."""
    from kit.app.bundle import read, wanted
    from kit.app.reproduce import find_dataset

    _, path, ds = lab
    doc = read(path)
    runs = [r for r in doc["runs"] if r["spec"]["dataset"] == ds.sha256]
    for r in runs:  # as real runs of the 120 proteins record them (the lab's hold 60 rows)
        r["manifest"]["stages"]["svd_rand"]["shape"][0] = 120
    hint = {"name": "synthetic-200000", "source": "synthetic", "rows": 200_000}
    assert wanted(hint, ds.sha256, runs).endswith(
        "(synthetic-200000 by the bundle's word, 120 proteins by its runs): `kit run --factor "
        "repeat --dataset synthetic --n 120` makes the synthetic set of that size"
    )
    with pytest.raises(KitError, match="its hint says 200000 proteins, its runs hold 120"):
        find_dataset(
            {"name": "synthetic-200000", "source": "synthetic", "rows": 200_000}, ds.sha256, runs
        )
    assert not list((tmp_path / "here").glob("datasets/**/*.json"))
    made = find_dataset(
        {"name": "synthetic-120", "source": "synthetic", "rows": 120}, ds.sha256, runs
    )
    assert (
        made.sha256 == ds.sha256
        and (tmp_path / "here" / "datasets" / "synthetic-120.json").exists()
    )


def test_a_large_stage_declared_consistently_is_refused_before_it_is_inflated(
    lab, tmp_path, capsys, monkeypatch
):
    """A 32 MiB stage of zeros (tiny once compressed) above a lab's 8 MiB cap: refused from
    bundle.json, no array member read. The cap is the lab's to raise."""
    _, path, _ = lab
    big = forge(
        path,
        tmp_path / "big.kit",
        lambda doc, ms: restage(doc["runs"][0], ms, "kmer.data", np.zeros(2**22)),
    )
    assert big.stat().st_size < 2**20
    monkeypatch.setenv("KIT_BUNDLE_MAX_ARRAY_MIB", "8")
    refused(capsys, big, "stage kmer.data declares 32 MiB", "KIT_BUNDLE_MAX_ARRAY_MIB")
    monkeypatch.setenv("KIT_BUNDLE_MAX_ARRAY_MIB", "64")
    assert main(["import", str(big)]) == 0  # raised: it is an array its run recorded


def test_a_stage_larger_than_its_run_declares_is_refused_from_its_header(lab, tmp_path, capsys):
    _, path, _ = lab

    def swap(doc, ms):
        r = doc["runs"][0]
        ms[f"arrays/{r['blobs']['kmeans.inertia']}.npy"] = npy(np.zeros(2**22))

    refused(
        capsys,
        forge(path, tmp_path / "swap.kit", swap),
        "stage kmeans.inertia",
        "fit what its run recorded",
    )


@pytest.mark.parametrize(
    "where,doc,words",
    [
        # the schemas follow no nesting deeper than their own: refused at the first '['
        ("MANIFEST.json", b"[" * 200000, ("MANIFEST.json is malformed",)),
        ("bundle.json", b"[" * 200000, ("bundle.json is malformed",)),
        ("MANIFEST.json", b"[" + b"0," * (5 * 2**20) + b"0]", ("MANIFEST.json is 10.0 MiB", "cap")),
        ("bundle.json", None, ("bundle.json is", "KIT_BUNDLE_MAX_JSON_MIB")),
    ],
    ids=["deep-manifest", "deep-bundle", "huge-manifest", "padded-bundle"],
)
def test_huge_or_deep_json_is_one_line(lab, tmp_path, capsys, where, doc, words):
    _, path, _ = lab
    ms = members(path)
    if doc is None:  # bundle.json padded with zeros past its cap
        body = json.loads(ms["bundle.json"])
        body["padding"] = [0] * (17 * 2**20)
        doc = json.dumps(body).encode()
    ms[where] = doc
    if where == "bundle.json":
        ms.pop("MANIFEST.json")
    refused(capsys, write(ms, tmp_path / "json.kit"), *words)


def test_a_run_whose_manifest_is_empty_is_one_line(lab, tmp_path, capsys):
    _, path, _ = lab
    bundle = forge(path, tmp_path / "empty.kit", lambda doc, ms: doc["runs"][1].update(manifest={}))
    run = json.loads(members(bundle)["bundle.json"])["runs"][1]["id"][:12]
    refused(capsys, bundle, f"run {run}", "its manifest has no environment")


@pytest.mark.parametrize(
    "stage,array,words",
    [
        ("lr", np.full(3, 0.5), ("its test-set stages have different shapes", "lr [3]")),
        ("svd_rand.sv", np.ones(3), ("stage svd_rand.sv: shape [3] does not match svd_rand",)),
        ("kmeans", np.zeros(7, np.int64), ("per-protein stages have different shapes",)),
        ("lr", np.array(["a", "b"]), ("stage lr: dtype '<U1' is not a plain number type",)),
    ],
    ids=["test-length", "sv-length", "rows", "strings"],
)
def test_a_forged_dtype_or_shape_is_one_line(lab, tmp_path, capsys, stage, array, words):
    _, path, _ = lab
    bundle = forge(
        path, tmp_path / "shape.kit", lambda doc, ms: restage(doc["runs"][2], ms, stage, array)
    )
    refused(capsys, bundle, *words)


def test_a_run_whose_shapes_disagree_with_its_datasets_other_runs_is_one_line(
    lab, tmp_path, capsys
):
    """Consistent within the run (every test-set stage 5 long), not with the run it is paired
    with: a comparison would fail on broadcasting."""
    _, path, _ = lab

    def shorter(doc, ms):
        for m in ("lr", "mlp", "hgb", "rf", "y_test"):
            a = np.zeros(5, np.int64) if m == "y_test" else np.full(5, 0.5)
            restage(doc["runs"][3], ms, m, a)

    refused(capsys, forge(path, tmp_path / "short.kit", shorter), "of the same dataset has")


def test_a_hand_edited_cache_row_is_noticed_and_recomputed(lab):
    src, _, _ = lab
    a, b = [p for p in src.pairs() if p.factor == "seed"][0].a, src.pairs()[0].b
    true_v, true_c = run_verdicts(src, a), compare_runs(src, a, b)
    db = sqlite3.connect(src.root / "store.sqlite")
    row = json.loads(db.execute("SELECT result FROM verdicts WHERE run=?", (a,)).fetchone()[0])
    k = KEYS[0]
    row["result"][k]["verdict"] = "<" if true_v[k]["verdict"] != "<" else ">"
    db.execute("UPDATE verdicts SET result=? WHERE run=?", (json.dumps(row), a))
    crow = json.loads(
        db.execute("SELECT result FROM comparisons WHERE a=? AND b=?", (a, b)).fetchone()[0]
    )
    crow["result"]["models"]["hgb"]["flips"] = 99
    db.execute("UPDATE comparisons SET result=? WHERE a=? AND b=?", (json.dumps(crow), a, b))
    db.commit()
    db.close()
    fresh = Store(src.root)
    assert fresh.verdicts(a, VERSION) is None  # the edit is noticed
    assert run_verdicts(fresh, a) == true_v  # and the true numbers computed again
    assert fresh.verdicts(a, VERSION) == true_v  # and sealed anew
    assert compare_runs(fresh, a, b).models["hgb"].flips == true_c.models["hgb"].flips != 99


@pytest.mark.parametrize(
    "env,words",
    [
        ({"python": 3}, "has no Python version like 3.12.1"),
        ({"python": "three"}, "has no Python version like 3.12.1"),
        ({"python": None}, "has no Python version like 3.12.1"),
        ({"cpu": ["x"]}, "has no machine, os or cpu"),
    ],
    ids=["number", "word", "missing", "cpu"],
)
def test_a_run_whose_python_or_machine_is_not_text_is_one_line(lab, tmp_path, capsys, env, words):
    """Read by the report's environment table and a Python scan (its minor) of every run."""
    _, path, _ = lab
    bundle = forge(
        path, tmp_path / "env.kit", lambda doc, ms: doc["runs"][1]["manifest"]["env"].update(env)
    )
    run = json.loads(members(bundle)["bundle.json"])["runs"][1]["id"][:12]
    refused(capsys, bundle, f"run {run}", words)


def _relabel(factor, level=""):
    def edit(doc, ms):
        p = next(p for p in doc["pairs"] if p["label"] == "seed 0 vs 1")
        p["factor"], p["level"] = factor, level

    return edit


@pytest.mark.parametrize(
    "factor,words",
    [
        ("repeat", ("'seed 0 vs 1' is labelled 'repeat', but its specs show svd-iters or seed",)),
        ("threads", ("is labelled 'threads', but its specs show svd-iters or seed",)),
        ("blas", ("is labelled 'blas', but its specs show svd-iters or seed",)),
        ("seed:svd", ("is labelled 'seed:svd', but its specs show svd-iters or seed",)),
        ("antigravity", ("is labelled 'antigravity', but its specs show svd-iters or seed",)),
    ],
)
def test_a_pair_relabelled_as_another_factor_is_refused(lab, tmp_path, capsys, factor, words):
    """The genuine seed-0-vs-1 pair relabelled: the importer's own advice would read it as a
    failed null experiment, a thread effect or an unmeasured BLAS. Its factor is recomputed
    from what its two specs differ in, and the label that disagrees is refused."""
    _, path, _ = lab
    refused(capsys, forge(path, tmp_path / "relabelled.kit", _relabel(factor)), *words)


def test_a_pair_with_a_forged_level_is_refused(lab, tmp_path, capsys):
    _, path, _ = lab
    refused(
        capsys,
        forge(path, tmp_path / "level.kit", _relabel("seed", "1e-03")),
        "labelled level '1e-03' of seed, but its specs make it level ''",
    )


def test_a_pair_whose_specs_show_no_factor_is_refused(lab, tmp_path, capsys):
    """The repeat pair's second run swapped for the threads pair's: replicate and threads both
    differ, which no planner makes."""
    _, path, _ = lab

    def edit(doc, ms):
        runs = {r["id"]: r for r in doc["runs"]}
        rep = next(p for p in doc["pairs"] if p["factor"] == "repeat")
        thr = next(p for p in doc["pairs"] if p["factor"] == "threads")
        rep["a"] = thr["b"]
        assert runs[rep["a"]]["spec"]["threads"] == 2

    refused(
        capsys,
        forge(path, tmp_path / "none.kit", edit),
        "its specs show no factor this kit knows (they differ in threads, replicate)",
    )


def test_a_pair_given_twice_either_way_round_is_refused(lab, tmp_path, capsys):
    """A reviewer's: the threads pair again with a and b swapped was stored as a second pair,
    so one measurement weighed twice in its row (and a seed pair in the seed unit)."""
    _, path, _ = lab

    def edit(doc, ms):
        thr = next(p for p in doc["pairs"] if p["factor"] == "threads")
        doc["pairs"].append(dict(thr, a=thr["b"], b=thr["a"]))

    refused(capsys, forge(path, tmp_path / "twice.kit", edit), "already pairs")


def test_a_dataset_hint_of_no_run_is_refused(lab, tmp_path, capsys):
    """A reviewer's: 3.6 M short strings in hints of datasets no run names imported at 489 MB."""
    _, path, _ = lab

    def edit(doc, ms):
        doc["datasets"]["e" * 64] = {"name": "padding"}

    refused(capsys, forge(path, tmp_path / "hint.kit", edit), "is of no run of it")


def test_a_rerun_in_a_loaded_image_is_paired_as_the_stack_it_came_from():
    """kit compare --trust-image reruns NAME@container's runs in NAME@bundle-ID12 and pairs
    them as `host`; a bundle exported after that is read with the loaded run named as its
    twin's stack, only where the name, the image id and ID12 all agree."""
    from kit.app.bundle_derived import _as_twins
    from kit.core.factors import differs
    from kit.core.spec import RunSpec

    image = "sha256:" + "49d2ba48463d" + "0" * 52
    there = RunSpec(dataset="d" * 64, stack="np1@container", stack_id=image, host="lab")
    here = there.with_(stack="np1@bundle-49d2ba48463d", host="home")
    other = there.with_(stack="np1@bundle-aaaaaaaaaaaa", host="home")  # its id is not its name's
    forged = here.with_(stack_id="sha256:" + "49d2ba48463d" + "1" * 52)  # another image
    out = _as_twins({"a": there, "b": here, "c": other, "d": forged})
    assert out["b"].stack == "np1@container" and differs("host", out["a"], out["b"], ())
    assert out["c"].stack == other.stack and out["d"].stack == forged.stack
    assert not differs("host", there, here, ())  # by name alone: another stack
