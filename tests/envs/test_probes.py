"""The release scan's fast parts, with no probe built: a real local HTTP server as the package
index (UV_DEFAULT_INDEX), names and versions refused in one line, and probe folders on disk."""

import hashlib
import io
import json
import shutil
import socket
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kit.analysis.releases import Release, notes_url, oldest_first, transitions
from kit.core.errors import KitError, Unreachable
from kit.data.http import Limits
from kit.envs.releases import between, check_name, is_final, key, versions

FAST = Limits(backoff_s=0.05, read_s=1, page_s=2, deadline_s=10, attempts=2)
JSON = "application/vnd.pypi.simple.v1+json"


class Index:
    """A package index on 127.0.0.1: path -> (status, content type, body); "silent" never
    answers. Records the Accept header of every request."""

    def __init__(self):
        self.pages, self.accept = {}, []
        index = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):  # uv asks first; a 405 sends it to GET
                self.send_response(405)
                self.end_headers()

            def do_GET(self):
                index.accept.append(self.headers.get("Accept"))
                got = index.pages.get(self.path, (404, "text/plain", b"not found"))
                if got == "silent":
                    time.sleep(5)
                    return
                status, ctype, body = got
                body = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/simple"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def serve(self, package, body, status=200, ctype=JSON):
        self.pages[f"/simple/{package}/"] = (status, ctype, body)

    def serve_wheels(self, package, versions_):
        """Real (empty) wheels of ``package``, listed as PEP 691 lists them: uv can lock them."""
        files = []
        for v in versions_:
            name, body = f"{package}-{v}-py3-none-any.whl", _wheel(package, v)
            self.pages[f"/files/{name}"] = (200, "application/octet-stream", body)
            files.append(
                {
                    "filename": name,
                    "url": f"/files/{name}",
                    "hashes": {"sha256": hashlib.sha256(body).hexdigest()},
                }
            )
        self.serve(
            package,
            {
                "meta": {"api-version": "1.1"},
                "name": package,
                "versions": list(versions_),
                "files": files,
            },
        )

    def stop(self):
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None


@pytest.fixture
def index(monkeypatch):
    server = Index()
    monkeypatch.setenv("UV_DEFAULT_INDEX", server.url)
    yield server
    server.stop()


def _wheel(package, version):
    buf, info = io.BytesIO(), f"{package}-{version}.dist-info"
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(
            f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n"
        )
        z.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: kit-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        z.writestr(f"{info}/RECORD", "")
    return buf.getvalue()


def _files(*names, yanked=()):
    return [{"filename": n, "url": n, "hashes": {}, "yanked": n in yanked} for n in names]


# -- names and versions -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["scikit-learn", "scikit_learn", "numpy", "A", "zope.interface"])
def test_a_pep_508_name_is_accepted(name):
    assert check_name(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "../etc",
        "a/b",
        "-numpy",
        "numpy-",
        "",
        "num py",
        "a\n",
        "numpy?x=1",
        "é",
        "\u017f",
        "1.\u0666",
    ],
)
def test_a_name_pep_508_does_not_allow_is_refused_in_one_line(name):
    with pytest.raises(KitError, match="is not a package name") as e:
        check_name(name)
    assert "\n" not in str(e.value).replace(repr(name), "")
    with pytest.raises(KitError, match="is not a package name"):
        between(name, "1.5.2", "1.6.0", [])


def test_only_a_whole_final_release_is_final():
    assert is_final("1.6.0") and is_final("2")
    for v in ("1.6.0\n", "1.6.0rc1", "v1.6", "1.6.0 ", "1..6", "", "1.\u0666"):
        assert not is_final(v), v


def test_kit_explain_refuses_a_bad_library_name_before_anything_runs(capsys):
    from kit.cli import main

    assert main(["explain", "sklearn", "--library", "../x", "1.5.2", "1.6.0"]) == 1
    err = capsys.readouterr().err.strip()
    assert "is not a package name" in err and len(err.splitlines()) == 1


# -- the index's answer -----------------------------------------------------------------------
def test_versions_are_read_from_the_index_s_json_oldest_first_without_yanked_ones(index):
    index.serve(
        "scikit-learn",
        {
            "meta": {"api-version": "1.1"},
            "name": "scikit-learn",
            "versions": ["1.10.0", "1.5.2", "1.6.0rc1", "1.6.0", "1.6.1", "0.24"],
            "files": _files(
                "scikit_learn-1.6.1-cp312-cp312-manylinux.whl",
                "scikit_learn-1.6.1.tar.gz",
                "scikit-learn-0.24.tar.gz",
                yanked=(
                    "scikit_learn-1.6.1-cp312-cp312-manylinux.whl",
                    "scikit_learn-1.6.1.tar.gz",
                    "scikit-learn-0.24.tar.gz",
                ),
            ),
        },
    )
    assert versions("scikit_learn", FAST) == ["1.5.2", "1.6.0", "1.10.0"]
    assert index.accept[-1] == JSON


def test_an_index_of_pep_691_v1_0_lists_versions_by_its_file_names(index):
    index.serve(
        "numpy",
        {
            "meta": {"api-version": "1.0"},
            "name": "numpy",
            "files": _files(
                "numpy-1.26.4.tar.gz", "numpy-2.0.0-cp312-none.whl", "numpy-2.1.0rc1.tar.gz"
            ),
        },
    )
    assert versions("numpy", FAST) == ["1.26.4", "2.0.0"]


@pytest.mark.parametrize(
    "body, what",
    [
        ([1, 2], "a JSON list, not an object"),
        ({"versions": [1.6], "files": []}, '"versions" is not a list of strings'),
        ({"versions": "1.6.0", "files": []}, '"versions" is not a list of strings'),
        ({"versions": ["1.6.0"], "files": ["x"]}, '"files" is not a list of objects'),
        ({"versions": ["1.6.0"], "files": {"x": 1}}, '"files" is not a list of objects'),
        ({"versions": ["1.6.0"], "files": [{"filename": 3}]}, '"files" is not a list of objects'),
        (b"\xff\xfe not json", "not JSON"),
    ],
)
def test_a_malformed_index_answer_is_one_line(index, body, what):
    index.serve("scikit-learn", body)
    with pytest.raises(KitError) as e:
        versions("scikit-learn", FAST)
    msg = str(e.value)
    assert msg.startswith("the package index did not answer as PEP 691 describes")
    assert what in msg and "\n" not in msg


def test_an_html_answer_a_404_and_a_silent_index_are_one_line_each(index):
    index.serve("scikit-learn", b"<html><body>simple</body></html>", ctype="text/html")
    with pytest.raises(KitError, match="did not answer as PEP 691 describes .*text/html"):
        versions("scikit-learn", FAST)
    with pytest.raises(KitError, match="cannot list nosuch's releases: .*HTTP 404 for [^ ]+$"):
        versions("nosuch", FAST)
    # no such project, and a package the catalogue pins is close: said as a slip (#43)
    with pytest.raises(
        KitError,
        match="cannot list scikit-lern's releases: .*HTTP 404 for "
        "[^ ]+: did you mean scikit-learn\\?$",
    ):
        versions("scikit-lern", FAST)
    index.pages["/simple/numpy/"] = "silent"
    t0 = time.monotonic()
    with pytest.raises(KitError, match="cannot list numpy's releases: .*no answer within 1 s"):
        versions("numpy", FAST)
    assert time.monotonic() - t0 < 8  # bounded: two attempts of one second, and the backoff


def test_an_unreachable_index_says_so(monkeypatch):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("UV_DEFAULT_INDEX", f"http://127.0.0.1:{port}/simple")
    with pytest.raises(Unreachable, match="cannot list numpy's releases: cannot reach"):
        versions("numpy", FAST)
    monkeypatch.setenv("UV_DEFAULT_INDEX", "ftp://example.org/simple")
    with pytest.raises(KitError, match="is not an http.s. URL"):
        versions("numpy", FAST)


# -- where a change is named --------------------------------------------------------------------
LISTED = ["1.5.2", "1.6.0", "1.6.1", "1.7.0", "1.7.1", "1.8.0", "1.9.0"]


def _outputs(versions_, at):
    """Constructed stage hashes: one output before ``at`` and another from it on."""
    return [
        (v, ("sha-new", "float64") if key(v) >= key(at) else ("sha-old", "float64"))
        for v in versions_
    ]


@pytest.mark.parametrize("a, b", [("1.5.2", "1.8.0"), ("1.8.0", "1.5.2")])
def test_a_change_is_named_at_the_release_that_brought_it_whichever_end_is_a(a, b):
    """`kit explain sklearn --library scikit-learn 1.8.0 1.5.2`: a change that came in 1.7.0 is
    at 1.7.0 (a descending scan named it at 1.6.1, with the v1.6 notes)."""
    scan = between("scikit-learn", a, b, LISTED)
    assert scan == ["1.5.2", "1.6.0", "1.6.1", "1.7.0", "1.7.1", "1.8.0"]
    assert transitions(_outputs(scan, "1.7.0")) == (["1.7.0"], {})
    # a release list in the old, descending order is read oldest first all the same
    down = [Release(v, f"probe-x-{v}", f"id-{v}") for v in reversed(scan)]
    assert [r.version for r in oldest_first(down)] == scan
    assert transitions(_outputs([r.version for r in oldest_first(down)], "1.7.0"))[0] == ["1.7.0"]
    assert notes_url("scikit-learn", "1.7.0").endswith("/v1.7.html")


def test_a_change_that_comes_and_goes_and_an_unmeasured_release_are_read_right():
    old, new = ("sha-old", "float64"), ("sha-new", "float64")
    got = transitions(
        [
            ("1.5.2", old),
            ("1.6.0", new),
            ("1.6.1", None),
            ("1.7.0", new),
            ("1.8.0", old),
            ("1.9.0", None),
        ]
    )
    assert got == (["1.6.0", "1.8.0"], {"1.8.0": "1.5.2"})
    # a change across a release that was not measured is named at the next measured one
    assert transitions([("1.5.2", old), ("1.6.0", None), ("1.6.1", new)]) == (["1.6.1"], {})
    # labels that are no versions (a planted release) keep the order they were given in
    planted = [Release("1.5.2"), Release("host"), Release("1.5.2 again")]
    assert [r.version for r in oldest_first(planted)] == ["1.5.2", "host", "1.5.2 again"]


# -- offline ------------------------------------------------------------------------------------
def test_the_release_list_is_kept_and_used_when_the_index_is_unreachable(
    index, kit_home, monkeypatch
):
    from kit.envs.releases import release_list

    index.serve("scikit-learn", {"versions": ["1.5.2", "1.6.0"], "files": []})
    assert release_list("scikit_learn", FAST) == (["1.5.2", "1.6.0"], None)
    kept = kit_home / "probes" / "index" / "scikit-learn.json"
    assert json.loads(kept.read_text())["versions"] == ["1.5.2", "1.6.0"]
    assert [p.name for p in kept.parent.iterdir()] == ["scikit-learn.json"]  # written atomically
    index.serve("scikit-learn", {"versions": ["1.5.2", "1.6.0", "1.6.1"], "files": []})
    assert release_list("scikit-learn", FAST)[0] == ["1.5.2", "1.6.0", "1.6.1"]  # kept anew
    index.stop()  # offline: the same index, nothing listening
    got, note = release_list("scikit-learn", FAST)
    day = json.loads(kept.read_text())["listed"][:10]
    assert got == ["1.5.2", "1.6.0", "1.6.1"]
    assert note == f"the package index is not reachable; using the release list of {day}"
    with pytest.raises(Unreachable):  # nothing kept for this package
        release_list("numpy", FAST)
    monkeypatch.setenv("UV_DEFAULT_INDEX", index.url + "/other")  # another index: not its list
    with pytest.raises(Unreachable):
        release_list("scikit-learn", FAST)
    kept.write_text('{"index": 1}')  # damaged: as if nothing were kept
    monkeypatch.setenv("UV_DEFAULT_INDEX", index.url)
    with pytest.raises(Unreachable, match="cannot list scikit-learn's releases: cannot reach"):
        release_list("scikit-learn", FAST)


# -- probe stacks on disk -----------------------------------------------------------------------
_ENVS = (
    "sys_platform == 'darwin' and platform_machine == 'arm64'",
    "sys_platform == 'darwin' and platform_machine == 'x86_64'",
    "sys_platform == 'linux' and platform_machine == 'x86_64'",
)


def _base(catalogue, deps):
    from kit.envs.catalogue import StackDef

    (catalogue / "base").mkdir(parents=True, exist_ok=True)
    envs = "".join(f'    "{e}",\n' for e in _ENVS)
    (catalogue / "base" / "pyproject.toml").write_text(
        '[project]\nname = "kit-stack-base"\nversion = "0"\nrequires-python = ">=3.9"\n'
        "dependencies = [" + ", ".join(f'"{d}"' for d in deps) + "]\n\n[tool.uv]\n"
        f"package = false\nenvironments = [\n{envs}]\n"
    )
    (catalogue / "stacks.toml").write_text(
        'reference = "base"\n\n[stack.base]\nlock = "base"\npython = "3.12"\n'
        'fakepkg = "1.0"\nblas = { linux-x86_64 = "OpenBLAS", macos-arm64 = "OpenBLAS" }\n'
    )
    return StackDef(
        "base",
        "base",
        "3.12",
        None,
        {"fakepkg": "1.0"},
        {"linux-x86_64": "OpenBLAS", "macos-arm64": "OpenBLAS"},
    )


@pytest.fixture
def lockable(index, tmp_path, monkeypatch):
    """A base stack pinning fakepkg, which the local index serves: uv locks it in a moment."""
    from kit.envs.platforms import detect

    plat = detect()
    if plat.key not in ("linux-x86_64", "macos-arm64"):
        pytest.skip(f"the base stack has no environment for {plat.key}")
    monkeypatch.setenv("KIT_STACKS_DIR", str(tmp_path / "catalogue"))
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    index.serve_wheels("fakepkg", ["1.0", "1.1"])
    return tmp_path / "catalogue", plat


@pytest.mark.slow
def test_a_probe_is_found_by_its_name_under_today_s_kit_home(
    lockable, kit_home, tmp_path, monkeypatch
):
    from kit.envs.probes import definition, prepare

    catalogue, plat = lockable
    name, why = prepare(_base(catalogue, ["fakepkg==1.0"]), "fakepkg", "1.1", plat)
    assert (name, why) == ("probe-base-fakepkg-1.1", None)
    meta = (kit_home / "probes" / name / "probe.json").read_text()
    assert str(kit_home) not in meta  # no absolute folder: the name says where it is
    moved = tmp_path / "moved-home"
    shutil.move(kit_home, moved)
    monkeypatch.setenv("KIT_HOME", str(moved))
    d = definition(name)
    assert d.lock_dir() == moved / "probes" / name and d.venv() == moved / "probes" / name / "venv"
    assert '"fakepkg==1.1"' in (d.lock_dir() / "pyproject.toml").read_text()
    assert 'version = "1.1"' in (d.lock_dir() / "uv.lock").read_text()
    path = d.lock_dir() / "probe.json"  # an older probe.json, with its home's absolute folder
    doc = json.loads(path.read_text())
    doc["def"]["folder"] = str(kit_home / "probes" / name)
    path.write_text(json.dumps(doc))
    assert definition(name).lock_dir() == moved / "probes" / name


@pytest.mark.slow
def test_a_failed_relock_leaves_the_cached_probe_as_it_was(lockable, kit_home):
    from kit.envs.kinds import stack_kind
    from kit.envs.probes import definition, prepare

    catalogue, plat = lockable
    name, _ = prepare(_base(catalogue, ["fakepkg==1.0"]), "fakepkg", "1.1", plat)
    folder = kit_home / "probes" / name
    before = {f: (folder / f).read_bytes() for f in ("uv.lock", "pyproject.toml", "probe.json")}
    # the base stack changes: a new pin uv cannot resolve, so the probe is relocked and fails
    got, why = prepare(_base(catalogue, ["fakepkg==1.0", "nosuchpkg==1.0"]), "fakepkg", "1.1", plat)
    assert got is None and "nosuchpkg" in why
    assert {f: (folder / f).read_bytes() for f in before} == before
    assert definition(name) is not None and stack_kind(name).d.lock_dir() == folder
    assert [p.name for p in (kit_home / "probes").iterdir() if p.name != "index"] == [
        name
    ]  # no half-made lock folder left beside it


def test_a_probe_name_that_is_not_one_folder_and_a_damaged_probe_json(kit_home):
    from kit.envs.kinds import stack_kind
    from kit.envs.probes import definition

    for bad in ("probe-a/../b", "probe-../x", "probe-", "probe-a b"):
        assert definition(bad) is None
        with pytest.raises(KitError, match="unknown stack"):
            stack_kind(bad)
    folder = kit_home / "probes" / "probe-base-fakepkg-1.1"
    folder.mkdir(parents=True)
    (folder / "uv.lock").write_text("")
    for text in (
        '{"pyproject_sha256": "x"}',
        '{"def": {"name": "probe-base-fakepkg-1.1"}}',
        "{not json",
    ):
        (folder / "probe.json").write_text(text)
        with pytest.raises(KitError, match="probe stack probe-base-fakepkg-1.1: .* damaged") as e:
            definition("probe-base-fakepkg-1.1")
        assert "\n" not in str(e.value)


@pytest.mark.slow
def test_a_probe_s_name_cannot_be_taken_by_an_external_stack(lockable, kit_home, capsys):
    import sys

    from kit.cli import main
    from kit.envs.external import add, registry_path
    from kit.envs.kinds import stack_kind
    from kit.envs.probes import prepare

    catalogue, plat = lockable
    name, _ = prepare(_base(catalogue, ["fakepkg==1.0"]), "fakepkg", "1.1", plat)
    with pytest.raises(KitError, match="names starting with 'probe-' are kept for the probe"):
        add("probe-np1-sk152-scikit-learn-1.6.0", sys.executable)
    assert main(["stacks", "add", "probe-base-fakepkg-1.1", sys.executable]) == 1
    err = capsys.readouterr().err.strip()
    assert "are kept for the probe stacks" in err and len(err.splitlines()) == 1
    # one registered before the prefix was kept: the probe of that name wins all the same
    registry_path().write_text(json.dumps({name: {"python": sys.executable, "facts": {}}}))
    assert stack_kind(name).kind == "catalogue"
    assert stack_kind(name).d.lock_dir() == kit_home / "probes" / name


@pytest.mark.slow
def test_a_probe_is_what_its_name_says_or_one_line_and_kit_stacks_lists_the_rest(
    lockable, kit_home, capsys
):
    """A probe.json whose label disagrees with its pins, or with fields of the wrong type, is
    one line naming the fix; `kit stacks` lists it as broken and the other probes as they are."""
    from kit.cli import main
    from kit.envs.probes import definition, prepare

    catalogue, plat = lockable
    base = _base(catalogue, ["fakepkg==1.0"])
    name, _ = prepare(base, "fakepkg", "1.1", plat)
    good, _ = prepare(base, "fakepkg", "1.0", plat)
    folder = kit_home / "probes" / name
    meta, pyproject = (folder / "probe.json").read_text(), (folder / "pyproject.toml").read_text()

    def damaged(change=None, text=None, pins=None):
        doc = json.loads(meta)
        if change:
            change(doc["def"])
        (folder / "probe.json").write_text(text if text is not None else json.dumps(doc))
        (folder / "pyproject.toml").write_text(pins or pyproject)
        with pytest.raises(KitError, match=f"probe stack {name}: ") as e:
            definition(name)
        assert "\n" not in str(e.value)
        return str(e.value)

    assert "does not pin fakepkg 1.1" in damaged(
        pins=pyproject.replace("fakepkg==1.1", "fakepkg==1.0")
    )
    assert "describes" in damaged(lambda d: d.update(version="1.0"))
    assert "says it holds fakepkg 1.0" in damaged(lambda d: d["versions"].update(fakepkg="1.0"))
    for field, value in (("blas", []), ("versions", []), ("python", 3), ("devices", None)):
        assert "damaged" in damaged(lambda d, field=field, value=value: d.update({field: value}))
    assert "damaged" in damaged(text="[" * 100000)
    upper = kit_home / "probes" / name.replace("base", "Base")
    shutil.copytree(kit_home / "probes" / good, upper)
    assert definition(upper.name) is None  # one lowercase name per probe
    assert main(["stacks", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out) if r.get("probe")}
    assert rows[name]["status"] == "broken" and "damaged" in rows[name]["reason"]
    assert rows[good]["probe"]["version"] == "1.0" and rows[good]["status"] == "not built"
    assert main(["stacks"]) == 0 and good in capsys.readouterr().out
    too_long, why = prepare(base, "fakepkg", "1." + "0" * 120, plat)
    assert too_long is None and "not a probe name" in why


@pytest.mark.slow
@pytest.mark.parametrize(
    "script,words",
    [
        # an old uv: clap's usage, its last line "For more information, try '--help'."
        (
            "echo 'warning: pyenv shim' >&2; echo \"error: unexpected argument '--output-format' "
            'found" >&2; echo "For more information, try \'--help\'." >&2; exit 2',
            "error: unexpected argument '--output-format' found (kit needs uv >= 0.5.19",
        ),
        ("echo '[]'", "uv names no CPython release"),
        ('echo \'[{"version": "3.12.1"}]\'; exit 1', "exit status 1, no error line"),
        (None, "PermissionError"),
    ],
    ids=["old-uv", "no-cpython", "failed", "not-executable"],
)
def test_python_releases_says_what_uv_said_in_one_line(tmp_path, monkeypatch, script, words):
    from kit.envs import interpreters
    from kit.envs.releases import python_releases

    uv = tmp_path / "uv"
    uv.write_text(f"#!/bin/sh\n{script}\n" if script else "not a program")
    if script:
        uv.chmod(0o755)
    monkeypatch.setattr(interpreters, "uv_bin", lambda: str(uv))
    with pytest.raises(KitError, match="cannot list Python releases") as e:
        python_releases()
    assert words in str(e.value) and "\n" not in str(e.value)


@pytest.mark.slow
def test_a_declined_scan_keeps_the_releases_built_before(lockable, kit_home):
    """No to the builds: nothing is built, and a release whose stack is built already stays
    built (its stored runs read, as the report reads them); the others say they were declined."""
    from kit.app.releases import Declined, Scan, run_scans
    from kit.envs.kinds import stack_kind
    from kit.envs.probes import prepare
    from kit.runs.store.records import StoredPair

    catalogue, plat = lockable
    name, _ = prepare(_base(catalogue, ["fakepkg==1.0"]), "fakepkg", "1.1", plat)
    asked = []
    scan = Scan(
        StoredPair("x", "", "a" * 64, "b" * 64, "a vs b"),
        "fakepkg",
        [Release("1.1", name), Release("host", "host")],
        ("models",),
    )
    with pytest.raises(Declined, match="1 probe stack"):
        run_scans([scan], None, confirm=lambda st: asked.append(st) or False)
    assert [n for n, _ in asked[0]] == [name]
    probe, host = scan.releases
    assert not probe.built and probe.why == "not built (declined)"
    assert host.built and host.stack_id == stack_kind("host").runnable().identity
    assert not (kit_home / "probes" / name / "venv").exists()
