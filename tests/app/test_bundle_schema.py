"""bundle.json and MANIFEST.json through their schema: a spec's env, names that reach generated
text, unknown fields and JSON bombs refused in one line with nothing stored; a fuzz of a genuine
bundle.json ends in a clean import or one KitError line, never another exception.

Every bundle is a real `kit export --arrays` of a lab's store (tests/app/test_bundle_derived.py's
``lab``), forged as an attacker would: run ids recomputed from the forged specs, pairs moved
with them, MANIFEST.json's sizes and sha256 rewritten.
"""

import hashlib
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from places import ROOT
from stored import budget_store

from kit.app.bundle_checks import check_document, expected_arrays
from kit.cli import main
from kit.core.errors import KitError
from kit.data import load_dataset
from kit.runs.store import Store
from tests.app.test_bundle_derived import exported_lab, forge, members, refused, write


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """test_bundle_trust's lab: a store and the bundle `kit export --arrays` wrote of it."""
    return exported_lab(tmp_path, monkeypatch)


def respec(doc, change):
    """``change(spec)`` on every run's spec (and the runner's copy in its manifest), each run's
    id recomputed from the new spec as kit computes it and the pairs moved to the new ids."""
    ids = {}
    for r in doc["runs"]:
        change(r["spec"])
        r["manifest"]["spec"] = json.loads(json.dumps(r["spec"]))
        new = hashlib.sha256(
            json.dumps(r["spec"], sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
        ids[r["id"]], r["id"] = new, new
    for p in doc["pairs"]:
        p["a"], p["b"] = ids[p["a"]], ids[p["b"]]


@pytest.mark.parametrize(
    "var,value",
    [
        ("PYTHONWARNINGS", "ignore::antigravity.Foo"),
        ("BROWSER", "/bin/sh -c 'touch PWNED'"),
        ("OMP_NUM_THREADS", "4"),  # behind a spec that says threads=1
    ],
)
def test_a_spec_env_that_would_run_code_is_refused_by_import_and_compare(
    lab, tmp_path, capsys, monkeypatch, var, value
):
    _, path, _ = lab
    monkeypatch.chdir(tmp_path)
    bundle = forge(
        path,
        tmp_path / "env.kit",
        lambda doc, ms: respec(doc, lambda s: s.update(env=[[var, value]])),
    )
    err = refused(capsys, bundle, var, "is not one kit sets")
    assert "malformed spec" in err
    assert main(["compare", str(bundle)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and var in err and "Traceback" not in err, err
    assert not list(tmp_path.rglob("PWNED")) and Store().runs() == []


def _rename_stage(doc, ms, new):
    r = doc["runs"][0]
    for d in (r["stages"], r["manifest"]["stages"], r["blobs"]):
        d[new] = d.pop("lr")


def _add_output(doc, ms, new):
    r = doc["runs"][0]
    r["manifest"]["outputs"] = [*r["stages"], new]


def _rename_seed(doc, ms, new):
    def seeds(spec):
        spec["seeds"] = [[new if k == "svd" else k, v] for k, v in spec["seeds"]]

    respec(doc, seeds)


def _relabel(doc, ms, new):
    doc["pairs"][0]["label"] = new


@pytest.mark.parametrize(
    "name",
    ["lr\nimport os; os.system('touch PWNED')  #", "lr\x1b[31m", "lr\u202efdp."],
    ids=["newline", "escape", "bidi"],
)
@pytest.mark.parametrize(
    "where,field",
    [
        (_rename_stage, "stage name"),
        (_add_output, "output name"),
        (_rename_seed, "seed name"),
        (_relabel, "pair label"),
    ],
    ids=["stage", "output", "seed", "pair-label"],
)
def test_a_name_with_a_control_character_is_refused_naming_its_field(
    lab, tmp_path, capsys, name, where, field
):
    """Names reach code, YAML, Markdown, HTML and the terminal (issue 37, item 4)."""
    _, path, _ = lab
    bundle = forge(path, tmp_path / "name.kit", lambda doc, ms: where(doc, ms, name))
    err = refused(capsys, bundle, field, repr(name[:40]), "holds a control character")
    assert "\x1b" not in err and "\u202e" not in err


@pytest.mark.parametrize(
    "edit,field",
    [
        (lambda d: d.update(verdict_summary="all identical"), "verdict_summary"),
        (lambda d: d["runs"][0].update(comparison={}), "comparison"),
        (lambda d: d["runs"][0]["spec"].update(shell="sh"), "shell"),
        (lambda d: d["runs"][0]["manifest"].update(note="x"), "note"),
        (lambda d: d["runs"][0]["manifest"]["env"].update(LD_PRELOAD="/x.so"), "LD_PRELOAD"),
        (lambda d: d["runs"][0]["stages"]["lr"].update(url="http://x"), "url"),
        (lambda d: d["pairs"][0].update(verdict="null failed"), "verdict"),
        (lambda d: d["host"].update(trusted=True), "trusted"),
    ],
    ids=["top", "run", "spec", "manifest", "env", "stage", "pair", "host"],
)
def test_an_unknown_field_anywhere_is_refused(lab, tmp_path, capsys, edit, field):
    _, path, _ = lab
    refused(
        capsys,
        forge(path, tmp_path / "unknown.kit", lambda doc, ms: edit(doc)),
        f"unknown field `{field}`",
    )


def test_an_unknown_field_in_manifest_json_is_refused(lab, tmp_path, capsys):
    _, path, _ = lab
    ms = members(path)
    man = json.loads(ms["MANIFEST.json"])
    man["bundle.json"]["signed_by"] = "kit maintainers"
    ms["MANIFEST.json"] = json.dumps(man).encode()
    refused(
        capsys,
        write(ms, tmp_path / "man.kit"),
        "MANIFEST.json is malformed",
        "unknown field `signed_by`",
    )


# -- bombs: refused in one line, in a process whose memory stays a small multiple of the body --
MIB = 2**20


def _long_string(doc, ms):
    doc["host"]["name"] = "a" * (30 * MIB)  # a field bounded to 256 characters


def _short_strings(doc, ms):
    doc["runs"][0]["manifest"]["outputs"] = ["ab"] * 5_000_000  # a list bounded to 1,024


def peak(bundle: Path, home: Path) -> tuple:
    """(exit code, stderr, peak RSS in MB) of `python -m kit import BUNDLE` in a fresh process."""
    # VmHWM: this process's own peak (ru_maxrss after exec may count the forking parent's)
    code = (
        "import sys\nfrom kit.cli import main\nrc = main(['import', sys.argv[1]])\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
        "sys.stderr.write('\\nPEAK %d' % int(hwm.split()[1]))\nsys.exit(rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(bundle)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "KIT_HOME": str(home)},
    )
    err, _, kib = proc.stderr.rpartition("\nPEAK ")
    return proc.returncode, err.strip(), int(kib) / 1024


@pytest.mark.parametrize(
    "bomb,words",
    [
        (_long_string, ("host.name", "length <= 256")),
        (_short_strings, ("5,0", "values in", "far more than any bundle kit writes")),
    ],
    ids=["30-MiB-string", "5M-short-strings"],
)
def test_a_json_bomb_is_refused_in_one_line_with_bounded_memory(lab, tmp_path, bomb, words):
    """Issue 37 item 5: 3.8 GB before refusing the first, 1.27 GB to import the second."""
    _, path, _ = lab
    bundle = forge(path, tmp_path / "bomb.kit", bomb)
    assert bundle.stat().st_size < 400_000  # a small file: the body is what it inflates to
    with tarfile.open(bundle) as t:
        body = t.getmember("bundle.json").size
    assert 20 * MIB < body < 32 * MIB  # under the cap: the schema is what refuses it
    rc, err, mb = peak(bundle, tmp_path / "here")
    assert rc == 1 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, err
    # measured 136 MB (string) and 108 MB (strings) here, against 3.8 GB and 1.27 GB on main
    assert mb < 400, mb
    assert (
        not (tmp_path / "here" / "store.sqlite").exists() or Store(tmp_path / "here").runs() == []
    )


def test_deep_nesting_in_a_field_is_refused_at_once(lab, tmp_path, capsys):
    _, path, _ = lab
    refused(
        capsys,
        forge(
            path,
            tmp_path / "deep.kit",
            lambda doc, ms: doc["runs"][0]["manifest"]["env"].update(
                torch={"x": json.loads("[" * 50 + "]" * 50)}
            ),
        ),
        "its manifest is malformed (env.torch",
    )


# -- fuzz --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def genuine(tmp_path_factory):
    """A genuine bundle.json of `kit export` (5 runs, 4 pairs) and a KIT_HOME to check it in."""
    root = tmp_path_factory.mktemp("schema-fuzz")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_HOME", str(root / "lab"))
        ds = load_dataset("synthetic", 120)
        budget_store(root, dataset=ds, home=root / "lab")
        assert main(["export", "--out", str(root / "lab.kit"), "--arrays"]) == 0
    with tarfile.open(root / "lab.kit") as t:
        return t.extractfile("bundle.json").read(), root / "here"


_leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.sampled_from(
        [
            "",
            "\n",
            "\x1b[31m",
            "\u202e",
            "a" * 300,
            "0" * 64,
            "<f8",
            "|O",
            "kit-bundle/1",
            "pipeline",
            "feed",
        ]
    )
)
_json = st.recursive(
    _leaf,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=12,
)
_DEEP = "\x00deep\x00"  # where the bytes get n '[' then n ']' (json.dumps stops at ~1,000)


def _paths(node, at=()):
    """Every (path, value) of a JSON document."""
    yield at, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*at, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*at, i))


@st.composite
def mutated(draw, body: bytes):
    doc, deep = json.loads(body), draw(st.integers(min_value=1, max_value=100_000))
    for _ in range(draw(st.integers(1, 8))):
        # a field name first, then one of its places: each of the ~100 fields of a run is as
        # likely a target as the whole document (by place, the 20 stages would be most of it)
        spots = {}
        for at, node in _paths(doc):
            spots.setdefault(at[-1] if at and isinstance(at[-1], str) else "[]", []).append(
                (at, node)
            )
        at, node = draw(st.sampled_from(spots[draw(st.sampled_from(sorted(spots)))]))
        if not at:
            continue
        parent = doc
        for k in at[:-1]:
            parent = parent[k]
        op = draw(
            st.sampled_from(["delete", "replace", "insert", "flip", "huge", "deep", "rename"])
        )
        key = at[-1]
        if op == "delete":
            parent.pop(key) if isinstance(parent, dict) else parent.pop(key)
        elif op == "insert" and isinstance(node, dict):
            node[draw(st.text(max_size=8))] = draw(_json)
        elif op == "insert" and isinstance(node, list):
            node.insert(draw(st.integers(0, len(node))), draw(_json))
        elif op == "flip":
            parent[key] = (
                ([node] if not isinstance(node, list) else {"0": node})
                if draw(st.booleans())
                else str(node)
            )
        elif op == "huge":
            parent[key] = draw(st.sampled_from([10**30, -(10**30), 2**63, 1e308, -1]))
        elif op == "rename" and isinstance(parent, dict):
            parent[draw(_leaf.filter(lambda v: isinstance(v, str)))] = parent.pop(key)
        elif op == "deep":
            parent[key] = _DEEP
        else:
            parent[key] = draw(_json)
    text = json.dumps(doc).encode().replace(json.dumps(_DEEP).encode(), b"[" * deep + b"]" * deep)
    if draw(st.integers(0, 9)) == 0:  # now and then the bytes themselves: cut or spliced
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(st.binary(max_size=4)) + text[i + draw(st.integers(0, 8)) :]
    return text


def test_the_genuine_bundle_passes_the_schema(genuine, monkeypatch):
    body, home = genuine
    monkeypatch.setenv("KIT_HOME", str(home))
    doc = check_document(body, "lab.kit")
    assert len(doc["runs"]) == 5 and len(expected_arrays(doc, "lab.kit")) > 0


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_mutated_bundle_json_is_a_clean_import_or_one_kit_error_line(genuine, data):
    body, home = genuine
    text = data.draw(mutated(body), label="bundle.json")
    os.environ["KIT_HOME"] = str(home)  # the autouse kit_home is per test, not per example
    try:
        doc = check_document(text, "lab.kit")
        expected_arrays(doc, "lab.kit")
    except KitError as e:
        msg = str(e)
        assert "\n" not in msg and "\r" not in msg and len(msg) < 600, msg
