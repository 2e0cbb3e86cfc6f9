"""A package's releases between two versions, listed from the package index uv installs from.

The index's simple JSON API (PEP 691/700) lists every version; no package is downloaded. The
index is uv's default one (UV_DEFAULT_INDEX, else UV_INDEX_URL, else PyPI), the one the probe
stacks then resolve from, so a listed release is one uv can look for.
"""

from __future__ import annotations

import os
import re

from ..core.errors import KitError

PYPI = "https://pypi.org/simple"
_FINAL = re.compile(r"\d+(\.\d+)*", re.A)  # final releases only: no rc, dev, post or local versions
# a project name as PEP 508 allows it (packaging's rule): what may go into the index's URL
_NAME = re.compile(r"[A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9]", re.I | re.A)  # re.A: not ſ or K


def index_url() -> str:
    return (os.environ.get("UV_DEFAULT_INDEX") or os.environ.get("UV_INDEX_URL") or PYPI).rstrip("/")


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
        raise KitError(f"{package!r} is not a package name (letters, digits, '.', '_' and '-', "
                       "starting and ending with a letter or digit: PEP 508)")
    return package


def normalized(package: str) -> str:
    """The name as the index's URLs spell it (PEP 503): scikit_learn -> scikit-learn."""
    return re.sub(r"[-_.]+", "-", check_name(package)).lower()


def versions(package: str) -> list:
    """Every final release of ``package`` on the index, oldest first (yanked ones left out)."""
    import requests

    url = f"{index_url()}/{normalized(package)}/"
    try:
        r = requests.get(url, timeout=30,
                         headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    except requests.RequestException as e:
        raise KitError(f"cannot list {package}'s releases from {url}: {type(e).__name__}") from e
    if r.status_code == 404:
        raise KitError(f"{package} is not on the package index {index_url()}")
    if r.status_code != 200:
        raise KitError(f"cannot list {package}'s releases from {url}: HTTP {r.status_code}")
    try:
        doc = r.json()
    except ValueError:
        raise KitError(f"{url} did not answer the simple JSON API (PEP 691)") from None
    yanked = _yanked(doc.get("files", []))
    return sorted((v for v in doc.get("versions", []) if is_final(v) and v not in yanked), key=key)


def _yanked(files: list) -> set:
    """Versions whose every file is yanked (the file names carry the version)."""
    seen: dict = {}
    for f in files:
        m = re.match(r"^[^-]+-(\d+(?:\.\d+)*)[-.]", f.get("filename", ""))
        if m:
            seen.setdefault(m.group(1), []).append(bool(f.get("yanked")))
    return {v for v, ys in seen.items() if all(ys)}


def between(package: str, a: str, b: str, listed: list | None = None) -> list:
    """The releases from ``a`` to ``b``, both included, ordered from a towards b (a may be the
    newer one); a and b themselves are kept even when the index does not list them."""
    check_name(package)
    for v in (a, b):
        if not is_final(v):
            raise KitError(f"{package} {v}: only final releases (like 1.6.0) can be scanned")
    lo, hi = sorted((a, b), key=key)
    got = {key(v): v for v in (listed if listed is not None else versions(package))
           if key(lo) < key(v) < key(hi)}
    out = [lo, *(got[k] for k in sorted(got)), hi] if key(lo) != key(hi) else [lo]
    return out if key(a) <= key(b) else out[::-1]
