"""A package's releases between two versions, listed from the package index uv installs from.

The index's simple JSON API (PEP 691/700) lists every version; no package is downloaded. The
index is uv's default one (UV_DEFAULT_INDEX, else UV_INDEX_URL, else PyPI), the one the probe
stacks then resolve from, so a listed release is one uv can look for.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import UTC, datetime

from ..core.atomic import write_bytes
from ..core.errors import HttpStatus, KitError, Unreachable
from ..core.paths import subdir
from ..core.small_files import read_small
from ..worker.names import did_you_mean
from .catalogue import definitions

PYPI = "https://pypi.org/simple"
_FINAL = re.compile(r"\d+(\.\d+)*", re.A)  # final releases only: no rc, dev, post or local versions
# a project name as PEP 508 allows it (packaging's rule): what may go into the index's URL
_NAME = re.compile(r"[A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9]", re.I | re.A)  # re.A: not ſ or K


def index_url() -> str:
    return (os.environ.get("UV_DEFAULT_INDEX") or os.environ.get("UV_INDEX_URL") or PYPI).rstrip(
        "/"
    )


def key(version: str) -> tuple:
    """A final release's sort key (1.10.0 after 1.9.1)."""
    parts = [int(p) for p in version.split(".")]
    while len(parts) > 1 and parts[-1] == 0:  # 1.6 == 1.6.0
        parts.pop()
    return tuple(parts)


def is_final(version: str) -> bool:
    return bool(_FINAL.fullmatch(version))  # fullmatch: "1.6.0\n" is not a release


def check_name(package: str) -> str:
    """``package``, once it is a project name PEP 508 allows; else one line refusing it."""
    if not _NAME.fullmatch(package):
        raise KitError(
            f"{package!r} is not a package name (letters, digits, '.', '_' and '-', "
            "starting and ending with a letter or digit: PEP 508)"
        )
    return package


def normalized(package: str) -> str:
    """The name as the index's URLs spell it (PEP 503): scikit_learn -> scikit-learn."""
    return re.sub(r"[-_.]+", "-", check_name(package)).lower()


def versions(package: str, limits=None) -> list:
    """Every final release of ``package`` on the index, oldest first (yanked ones left out).

    The answer is read as untrusted: anything PEP 691 does not describe is one line, and the
    fetch is bounded (kit.data.http: a deadline per page and for the whole, retried statuses);
    an index that cannot be reached at all raises kit.core.errors.Unreachable.
    """
    from ..data.http import Fetcher, Limits

    base = index_url()
    if not re.match(r"^https?://[^/]", base):
        raise KitError(
            f"the package index {base!r} (UV_DEFAULT_INDEX or UV_INDEX_URL) is not "
            "an http(s) URL: kit lists releases over HTTP only"
        )
    url = f"{base}/{normalized(package)}/"
    # the fetch's deadlines as KIT_FETCH_DEADLINE and KIT_FETCH_PAGE_DEADLINE set them; fewer,
    # shorter waits on silence than a UniProt download's: a listing is one small page
    fetcher = Fetcher(limits or Limits.from_env(read_s=20.0, attempts=3), what="the package index")
    fetcher.session.headers["Accept"] = _JSON
    try:
        r, body = fetcher.get(url)
    except KitError as e:  # one line already (a 404 included: no such project there)
        # no such project: a slip of a package the catalogue pins is said as one
        missing = isinstance(e, HttpStatus) and e.status == 404
        hint = did_you_mean(package, _pinned()) if missing else ""
        said = f"cannot list {package}'s releases: {e}" + (f": {hint}" if hint else "")
        # said again as the same kind of error (a caller tells them apart by type)
        raise (HttpStatus(said, e.status) if isinstance(e, HttpStatus) else type(e)(said)) from None
    return _read(body, url, r.headers.get("Content-Type", "?").split(";")[0])


_JSON = "application/vnd.pypi.simple.v1+json"


def _pinned() -> list:
    """The packages the catalogue's stacks pin: what a --library NAME most likely meant."""
    return list(dict.fromkeys(p for d in definitions().values() for p in d.versions))


def release_list(package: str, limits=None) -> tuple:
    """(every final release of ``package``, None), listed by the index and kept under
    KIT_HOME/probes/index/; when the index cannot be reached, (the list kept when it last
    answered, the line that says so): a scan whose probes are all locked needs no network."""
    path = subdir("probes") / "index" / f"{normalized(package)}.json"
    try:
        listed = versions(package, limits)
    except Unreachable:
        kept = _kept(path)
        if kept is None:
            raise
        return kept["versions"], (
            f"the package index is not reachable; using the release list of {kept['listed'][:10]}"
        )

    doc = {
        "index": index_url(),
        "package": package,
        "versions": listed,
        "listed": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    try:
        write_bytes(path, json.dumps(doc, indent=1).encode())
    except KitError:  # a read-only KIT_HOME or a full disk: the list is good, only not kept
        pass
    return listed, None


def _kept(path) -> dict | None:
    """The release list kept at ``path`` for the index in use now (None: none, or damaged)."""
    try:
        doc = json.loads(read_small(path) or b"null")
    except ValueError:
        return None
    ok = (
        isinstance(doc, dict)
        and doc.get("index") == index_url()
        and isinstance(doc.get("listed"), str)
        and isinstance(doc.get("versions"), list)
        and all(isinstance(v, str) and is_final(v) for v in doc["versions"])
    )
    return doc if ok else None


def _read(body: bytes, url: str, ctype: str) -> list:
    """The final, unyanked versions of a simple JSON API document (PEP 691, PEP 700)."""

    def bad(what: str) -> KitError:
        return KitError(
            f"the package index did not answer as PEP 691 describes ({url}, {ctype}): {what}"
        )

    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise bad("not JSON") from None
    if not isinstance(doc, dict):
        raise bad(f"a JSON {type(doc).__name__}, not an object")
    files = doc.get("files", [])
    if not (
        isinstance(files, list)
        and all(isinstance(f, dict) and isinstance(f.get("filename"), str) for f in files)
    ):
        raise bad('"files" is not a list of objects with a "filename"')
    listed = doc.get("versions")
    if listed is None:  # PEP 691 v1.0 has no "versions" (PEP 700 added it): the file names do
        listed = [v for v in (_version(f["filename"]) for f in files) if v]
    if not (isinstance(listed, list) and all(isinstance(v, str) for v in listed)):
        raise bad('"versions" is not a list of strings')
    yanked = _yanked(files)
    return sorted({v for v in listed if is_final(v) and v not in yanked}, key=key)


def _version(filename: str) -> str | None:
    """The version a wheel's or sdist's file name carries (name-VERSION-... or name-VERSION.tar.gz;
    the name may hold '-' in old sdists: the shortest name that leaves a version is taken)."""
    m = re.match(r"^.+?-(\d+(?:\.\d+)*)(?:-|\.tar\.|\.zip$|\.whl$)", filename)
    return m.group(1) if m else None


def _yanked(files: list) -> set:
    """Versions whose every file is yanked (PEP 691: true, or a reason string)."""
    seen: dict = {}
    for f in files:
        v = _version(f["filename"])
        if v:
            y = f.get("yanked")
            seen.setdefault(v, []).append(y is True or (isinstance(y, str) and y != ""))
    return {v for v, ys in seen.items() if all(ys)}


def between(package: str, a: str, b: str, listed: list | None = None) -> list:
    """The releases from ``a`` to ``b``, both included, oldest first whichever of a and b is the
    newer (a scan reads each change at the newer release of its transition); a and b
    themselves are kept even when the index does not list them."""
    check_name(package)
    for v in (a, b):
        if not is_final(v):
            raise KitError(f"{package} {v}: only final releases (like 1.6.0) can be scanned")
    lo, hi = sorted((a, b), key=key)
    got = {
        key(v): v
        for v in (listed if listed is not None else versions(package))
        if key(lo) < key(v) < key(hi)
    }
    return [lo, *(got[k] for k in sorted(got)), hi] if key(lo) != key(hi) else [lo]


def python_releases() -> list:
    """The CPython minor versions uv knows (its built-in download table and the interpreters
    it finds), oldest first: read offline, nothing is downloaded.

    Minors, not micro releases: a stack's lock and its wheels are chosen per minor (cp312
    tags, the environment markers), kit finds an interpreter by its minor, and a micro
    release is a bug-fix release of the same language; scanning every micro would ask for
    interpreters no machine keeps (3.12.0 to 3.12.16), to read the same wheels each time.
    """
    from .interpreters import uv_bin

    # downloads allowed for the listing alone (--offline: no network): with
    # UV_PYTHON_DOWNLOADS=never uv lists only the interpreters installed here
    env = {k: v for k, v in os.environ.items() if k != "UV_PYTHON_DOWNLOADS"}
    what = "cannot list Python releases: uv python list"
    try:
        proc = subprocess.run(
            [uv_bin(), "python", "list", "--all-versions", "--offline", "--output-format", "json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise KitError(f"{what}: {type(e).__name__}: {str(e)[:120]}") from None
    try:
        if proc.returncode != 0:
            raise ValueError
        rows = json.loads(proc.stdout)
        got = {
            ".".join(r["version"].split(".")[:2])
            for r in rows
            if r.get("implementation") == "cpython"
            and r.get("variant") == "default"
            and is_final(r["version"])
        }
    except (ValueError, TypeError, KeyError, AttributeError):
        # uv's own error line (not a shim's warning, nor clap's "For more information" tail)
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        first = next(
            (ln for ln in lines if ln.startswith("error:")),
            f"exit status {proc.returncode}, no error line",
        )
        raise KitError(f"{what}: {first[:160]} (kit needs uv >= 0.5.19 for its JSON)") from None
    if not got:
        raise KitError(f"{what}: uv names no CPython release (kit needs uv >= 0.5.19)")
    return sorted(got, key=key)


def minor(version: str) -> str:
    """3.12.1 -> 3.12: the Python release a scan names (python_releases says why)."""
    return ".".join(version.split(".")[:2])
