"""Derived stacks: a catalogue stack plus a pipeline's REQUIRES, locked by uv under KIT_HOME.

The fast tests read names, pyprojects and derived.json; the slow ones build two real derived
stacks (np1-sk152 and np1-sk191 plus tabulate, from uv's cache) and run a REQUIRES pipeline in
both, an impossible requirement, and a bundle of the runs into another home.
"""

import json
import tarfile
from dataclasses import asdict

import pytest
from catalogues import PAIR, sklearn_pair

from kit.cli import main
from kit.core.errors import KitError
from kit.core.spec import RunSpec
from kit.envs.catalogue import definitions
from kit.envs.derived import (
    META,
    DerivedDef,
    base_of,
    definition,
    derived_name,
    for_plan,
    pyproject,
)
from kit.envs.platforms import detect

LAB = '''"""A lab pipeline needing a package no stack holds."""
import numpy as np
import tabulate

SEEDS = ("init",)
REQUIRES = ("tabulate>=0.8",)


def run(seeds):
    x = np.random.default_rng(seeds["init"]).normal(size=20)
    return {"x": x, "width": np.array([len(tabulate.tabulate([[1, 2]]))], dtype=np.int64)}
'''


def test_a_derived_name_is_its_base_and_a_digest_and_nothing_else_is_one():
    name = derived_name("np1-sk142", ["tabulate", "pandas>=2"])
    assert name == derived_name("np1-sk142", ["pandas>=2", "tabulate"])
    assert name.startswith("req-np1-sk142-") and base_of(name) == "np1-sk142"
    for bad in (
        "req-nosuch-0123456789",
        "req-np1-sk142-0123",
        "req-../np1-sk142-0123456789",
        "np1-sk142",
        "req-np1-sk142-0123456789/x",
        None,
        3,
    ):
        assert base_of(bad) is None and (not isinstance(bad, str) or definition(bad) is None)


def test_the_pyproject_is_the_base_s_with_the_packages_for_this_platform_alone():
    plat = detect()
    base = definitions()["np1-sk142"]
    text = pyproject(base, ["pandas>=2", "tabulate"], plat)
    assert '    "pandas>=2",  # the pipeline\'s REQUIRES\n' in text and '"tabulate",' in text
    assert '"numpy==1.26.4"' in text  # the base's pins kept: a conflict is uv's to refuse
    envs = [ln for ln in text.splitlines() if ln.lstrip().startswith('"sys_platform')]
    assert envs and all(f"'{'linux' if plat.system == 'linux' else 'darwin'}'" in e for e in envs)


def _plant(home, base="np1-sk142", requires=("tabulate",), changed=None):
    name = derived_name(base, requires)
    b = definitions()[base]
    d = DerivedDef(
        name,
        name,
        b.python,
        b.arch,
        dict(b.versions),
        dict(b.blas),
        b.kind,
        tuple(b.devices),
        b.needs_path,
        b.needs_gpu,
        base,
        tuple(requires),
    )
    folder = home / "derived" / name
    folder.mkdir(parents=True)
    (folder / "uv.lock").write_text("")
    (folder / META).write_text(
        json.dumps({"pyproject_sha256": "x", "def": {**asdict(d), **(changed or {})}})
    )
    return name


def test_a_locked_derived_stack_is_found_by_name_and_listed_by_kit_stacks(kit_home, capsys):
    name = _plant(kit_home)
    d = definition(name)
    assert d.base == "np1-sk142" and d.requires == ("tabulate",) and d.venv().parent == d.lock_dir()
    assert main(["stacks", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows[name]["derived"] == {
        "base": "np1-sk142",
        "requires": ["tabulate"],
        "folder": str(kit_home / "derived" / name),
    }
    assert rows[name]["status"] == "not built"
    assert main(["stacks"]) == 0
    out = capsys.readouterr().out
    assert "derived stacks" in out and name in out and "tabulate" in out


@pytest.mark.parametrize(
    "changed",
    [
        {"requires": ["pandas"]},
        {"base": "np1-sk152"},
        {"requires": ["x @ https://evil"]},
        {"versions": 3},
    ],
)
def test_a_derived_json_that_is_not_its_stack_is_one_line(kit_home, changed, capsys):
    name = _plant(kit_home, changed=changed)
    with pytest.raises(KitError) as e:
        definition(name)
    assert f"derived stack {name}" in str(e.value) and "\n" not in str(e.value)
    assert main(["stacks", "--json"]) == 0  # listed as broken, the rest as they are
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows[name]["status"] == "broken"


def test_requires_on_the_host_or_an_external_stack_is_refused_and_none_changes_nothing(kit_home):
    plat = detect()
    assert for_plan([], ["host", "np1-sk142"], plat) == (
        {"host": "host", "np1-sk142": "np1-sk142"},
        {},
    )
    with pytest.raises(KitError, match="stack host is kit's own environment"):
        for_plan(["tabulate"], ["host"], plat)


def test_kit_doctor_of_a_requires_file_is_refused_in_one_line(kit_home, tmp_path, capsys):
    f = tmp_path / "lab.py"
    f.write_text(LAB)
    assert main(["doctor", "--pipeline", str(f)]) == 1
    err = capsys.readouterr().err
    assert "lab.py has REQUIRES" in err and "--stack NAME" in err and err.strip().count("\n") == 0


def test_an_imported_run_in_a_derived_stack_must_be_its_pipeline_s(tmp_path):
    from kit.app.bundle_derived import _derived_base

    sha = "a" * 64
    labs = {sha: {"name": "lab.py", "requires": ["tabulate"]}}
    good = derived_name("np1-sk142", ["tabulate"])

    def spec(stack, pipeline=sha):
        return RunSpec(
            dataset=pipeline or sha,
            stack=stack,
            stack_id="0" * 64,
            seeds=(("init", 0),) if pipeline else RunSpec(sha, stack, "").seeds,
            pipeline=pipeline,
        )

    assert _derived_base("r" * 64, spec(good), labs, "b.tgz") == "np1-sk142"
    for stack, pipeline, said in (
        ("req-nosuch-0123456789", sha, "no stack of this kit's catalogue"),
        ("req-../../etc-0123456789", sha, "no stack of this kit's catalogue"),
        (derived_name("np1-sk142", ["pandas"]), sha, "is not np1-sk142 with its pipeline's"),
        (good, "b" * 64, "whose file the bundle carries"),
        (good, "", "whose file the bundle carries"),
    ):
        with pytest.raises(KitError, match=said) as e:
            _derived_base("r" * 64, spec(stack, pipeline), labs, "b.tgz")
        assert "\n" not in str(e.value) and "refusing the bundle" in str(e.value)


# -- real uv builds ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def module_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("derived-home")
    sklearn_pair(home)
    (home / "lab.py").write_text(LAB)
    (home / "bad.py").write_text(LAB.replace("tabulate>=0.8", "numpy<1.0"))
    return home


@pytest.fixture
def built_home(module_home, monkeypatch):  # the builds are shared by the module's tests
    monkeypatch.setenv("KIT_HOME", str(module_home / "kit"))
    monkeypatch.setenv("KIT_STACKS_DIR", str(module_home / "catalogue"))
    from kit.envs.kinds import stack_kind

    st, why = stack_kind(PAIR[0]).status(detect())
    if st == "unavailable":
        pytest.skip(why)
    return module_home


def _run(capsys, *argv):
    rc = main(list(argv))
    got = capsys.readouterr()
    return rc, got.out, " ".join(got.err.split())


@pytest.mark.slow
def test_a_requires_pipeline_runs_in_the_derived_stacks_of_two_stacks(built_home, capsys):
    from kit.runs.store import Store

    rc, out, err = _run(
        capsys,
        "run",
        "--pipeline",
        str(built_home / "lab.py"),
        "--factor",
        "sklearn",
        "--yes",
        "--json",
    )
    assert rc == 0, err
    names = [derived_name(n, ["tabulate>=0.8"]) for n in PAIR]
    assert all(n in err for n in names) and "to download" in err  # asked (--yes) with sizes
    assert json.loads(out)["factors"]["sklearn"]["pairs"] == 1
    runs = Store().runs()
    assert sorted(r.spec.stack for r in runs) == sorted(names)
    venv_has = {}
    for n in names:
        meta = next(
            (definition(n).venv() / "lib").glob("python3*/site-packages/tabulate-*.dist-info")
        )
        venv_has[n] = meta.name.removesuffix(".dist-info").split("-")[1]
    for r in runs:  # measured in the worker: the version the derived stack holds
        assert r.manifest["env"]["packages"]["tabulate"] == venv_has[r.spec.stack]
    rc, out, _ = _run(capsys, "stacks", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert {n: (rows[n]["derived"]["base"], rows[n]["status"]) for n in names} == {
        n: (b, "built") for n, b in zip(names, PAIR, strict=True)
    }
    # planned again: the same locks and stacks, nothing to run
    rc, out, err = _run(
        capsys, "run", "--pipeline", str(built_home / "lab.py"), "--factor", "sklearn", "--yes"
    )
    assert rc == 0 and "2 stored, 0 to run" in err and "to download" not in err


@pytest.mark.slow
def test_a_requirement_no_stack_can_have_is_skipped_with_uv_s_reason(built_home, capsys):
    rc, out, err = _run(
        capsys, "run", "--pipeline", str(built_home / "bad.py"), "--factor", "sklearn", "--yes"
    )
    assert rc == 1 and "Traceback" not in err
    for n in PAIR:
        assert f"skipped the pairs of stack {n}: bad.py's REQUIRES cannot be had there" in err
    assert "numpy<1.0" in err and "unsatisfiable" in err  # uv's own reason
    assert "2 stack(s) skipped" in err
    # a single-stack factor in that stack: skipped the same way; an unknown factor still refused
    rc, out, err = _run(
        capsys,
        "run",
        "--pipeline",
        str(built_home / "bad.py"),
        "--factor",
        "seed",
        "--stack",
        PAIR[0],
        "--yes",
    )
    assert (
        rc == 1 and f"skipped the pairs of stack {PAIR[0]}" in err and "1 stack(s) skipped" in err
    )
    rc, out, err = _run(
        capsys,
        "run",
        "--pipeline",
        str(built_home / "bad.py"),
        "--factor",
        "nosuch",
        "--stack",
        PAIR[0],
        "--yes",
    )
    assert rc == 1 and "unknown factor 'nosuch'" in err
    rc, out, err = _run(
        capsys,
        "run",
        "--pipeline",
        str(built_home / "bad.py"),
        "--factor",
        "seed:iint",
        "--stack",
        PAIR[0],
        "--yes",
    )  # misspelt, not skipped
    assert rc != 0 and "iint" in err and "skipped the pairs" not in err and "Traceback" not in err
    assert not list(
        (built_home / "kit" / "derived").glob(f"{derived_name(PAIR[0], ['numpy<1.0'])}/uv.lock")
    )


@pytest.mark.slow
def test_a_bundle_of_derived_stack_runs_is_paired_by_its_base_stacks_elsewhere(
    built_home, capsys, monkeypatch
):
    lab = str(built_home / "lab.py")
    assert _run(capsys, "run", "--pipeline", lab, "--factor", "sklearn", "--yes")[0] == 0
    out = built_home / "lab.kit.tgz"
    rc, _, err = _run(capsys, "export", "--pipeline", lab, "--out", str(out))
    assert rc == 0, err
    monkeypatch.setenv("KIT_HOME", str(built_home / "other"))
    rc, said, err = _run(capsys, "import", str(out))
    assert rc == 0 and "imported 2 new of 2 runs" in said + err, err
    rc, got, err = _run(capsys, "budget", "--pipeline", lab, "--json")
    assert rc == 0 and json.loads(got)["factors"]["sklearn"]["pairs"] == 1, err
    # rerun elsewhere: the derived stacks locked and built there from the file's REQUIRES
    monkeypatch.setenv("KIT_HOME", str(built_home / "rerun"))
    rc, got, err = _run(capsys, "compare", str(out), "--pipeline", lab, "--yes", "--json")
    assert rc == 0, err
    from kit.runs.store import Store

    assert sorted({r.spec.stack for r in Store().runs()}) == sorted(
        derived_name(n, ["tabulate>=0.8"]) for n in PAIR
    )
    assert len(Store().runs()) == 4  # the bundle's 2 and their 2 twins made here
    # the same bundle whose runs claim a derived stack of other packages: refused, one line
    forged = built_home / "forged.kit.tgz"
    _rewrite(
        out, forged, derived_name(PAIR[0], ["tabulate>=0.8"]), derived_name(PAIR[0], ["pandas"])
    )
    monkeypatch.setenv("KIT_HOME", str(built_home / "third"))
    rc, _, err = _run(capsys, "import", str(forged))
    assert rc == 1 and "is not np1-sk152 with its pipeline's REQUIRES" in err, err


def _rewrite(src, dst, old: str, new: str) -> None:
    """A copy of bundle ``src`` with ``old`` replaced by ``new`` in bundle.json, its run ids and
    MANIFEST.json made to agree again (what a forger would do)."""
    import hashlib

    with tarfile.open(src) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
    doc = json.loads(members["bundle.json"])
    ids = {}
    for r in doc["runs"]:
        r["spec"]["stack"] = r["spec"]["stack"].replace(old, new)
        new_id = RunSpec.from_dict(r["spec"]).run_id
        ids[r["id"]], r["id"] = new_id, new_id
    for p in doc["pairs"]:
        p["a"], p["b"] = ids[p["a"]], ids[p["b"]]
    members["bundle.json"] = json.dumps(doc, sort_keys=True).encode()
    manifest = {
        n: {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)}
        for n, d in members.items()
        if n != "MANIFEST.json"
    }
    members["MANIFEST.json"] = json.dumps(manifest, sort_keys=True).encode()
    import io

    with tarfile.open(dst, "w:gz") as tar:
        for n in ["MANIFEST.json", *(m for m in members if m != "MANIFEST.json")]:
            info = tarfile.TarInfo(n)
            info.size = len(members[n])
            tar.addfile(info, io.BytesIO(members[n]))


@pytest.mark.slow
def test_a_node_with_its_own_kit_home_locks_the_derived_stack_from_the_file(
    built_home, tmp_path, monkeypatch
):
    """A cluster node whose KIT_HOME is its own (node-local disks) has not got the driver's
    derived stack: it locks it from the REQUIRES of the file it was sent, to the identity the
    driver's plan measured (on_node checks it next); a file whose REQUIRES are not the stack's
    is refused in one line."""
    from kit.data.pipelines import add_pipeline, pipeline_file
    from kit.envs.derived import prepare
    from kit.runs.executing.on_node import _derived_here

    plat = detect()
    name, why = prepare(definitions()[PAIR[0]], ["tabulate>=0.8"], plat)
    assert why is None
    driver_lock = (definition(name).lock_dir() / "uv.lock").read_text()
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "node"))
    info = add_pipeline(built_home / "lab.py")
    spec = RunSpec(dataset=info["sha256"], stack=name, stack_id="x" * 64, pipeline=info["sha256"])
    assert definition(name) is None
    _derived_here(spec, "node-1", pipeline_file(info["sha256"]))
    assert (definition(name).lock_dir() / "uv.lock").read_text() == driver_lock
    other = add_pipeline(built_home / "bad.py")
    wrong = RunSpec(
        dataset=other["sha256"],
        stack=derived_name(PAIR[0], ["pandas"]),
        stack_id="x" * 64,
        pipeline=other["sha256"],
    )
    with pytest.raises(KitError, match="node node-1: derived stack .* cannot be locked here"):
        _derived_here(wrong, "node-1", pipeline_file(other["sha256"]))


@pytest.mark.slow
async def test_the_tui_run_tab_says_each_skipped_stack_of_a_requires_file(built_home):
    """The Run tab of a file whose REQUIRES no stack can have: each stack's skip line in the
    log (uv's reason), and one line as the status; never a traceback."""
    from tests.tui.test_plan import app, choose, run_status

    async with app(threads="1", seeds="0,1").run_test(size=(100, 30)) as pilot:
        await choose(pilot, str(built_home / "bad.py"))
        assert pilot.app.pipeline.name == "bad.py"
        status = await run_status(pilot)
        log = " ".join(
            " ".join(str(line) for line in pilot.app.query_one("#run-log").lines).split()
        )
        assert "Traceback" not in status + log
        # no --stack: the catalogue's first stack (the host takes no packages), and its skip
        # line in the log with uv's reason; the status one line
        assert "skipped: skipped the pairs of stack " in log and "numpy<1.0" in log, log
        assert "stack(s) skipped" in status
