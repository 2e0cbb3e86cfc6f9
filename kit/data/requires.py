"""A pipeline's REQUIRES: the packages it needs beyond a stack's, read strictly as PEP 508 names."""

from __future__ import annotations

import hashlib
import re

from ..core.errors import KitError

_MOST = 64  # packages: a lab's file names a few; a bound keeps a planted one from locking forever
_LONGEST = 200  # characters of one requirement


def check_requires(name: str, value) -> list:
    """The requirements of ``value`` (REQUIRES as the file ``name`` assigns it: a tuple or list
    of strings; None: it has none), each normalised (``"Pandas >=2"`` -> ``"pandas>=2"``).

    Only a project name with optional extras and version specifiers is taken: a URL, a path,
    an ``@`` direct reference, an environment marker or a pip option would make the stack
    something no other machine can rebuild from the file, so each is refused in one line.
    Duplicates, and pins that conflict with the stack's, are uv's to refuse when it locks."""
    if value is None:
        return []
    if not isinstance(value, (tuple, list)) or not all(isinstance(r, str) for r in value):
        raise KitError(
            f'{name}: REQUIRES must be a tuple of strings, like ("matplotlib>=3.8", "pandas")'
        )
    if len(value) > _MOST:
        raise KitError(f"{name}: REQUIRES names {len(value)} packages; at most {_MOST}")
    return [_one(name, r) for r in value]


def _one(name: str, text: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    shown = repr(text[:60])
    why = _refused_form(text)
    if why is None:
        try:
            req = Requirement(text)
        except InvalidRequirement as e:
            why = f"not a PEP 508 requirement ({str(e).splitlines()[0][:80]})"
        else:
            if req.url:
                why = "an @ direct reference"
            elif req.marker is not None:
                why = "an environment marker (a stack is one platform's already)"
    if why:
        raise KitError(
            f"{name}: REQUIRES {shown} is {why}: give a package name with optional "
            'extras and versions, like "pandas>=2.0" or "dask[array]"'
        )
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    return f"{canonicalize_name(req.name)}{extras}{req.specifier}"


def _refused_form(text: str) -> str | None:
    """What ``text`` is when it is plainly not a name and versions (None: it may be one)."""
    t = text.strip()
    if not t or len(text) > _LONGEST or not text.isprintable():
        return f"empty, over {_LONGEST} characters or holds a control character"
    if t.startswith("-"):
        return "a pip option"
    if "://" in t or t.startswith(("file:", "git+")):
        return "a URL"
    if t.startswith((".", "/", "~")) or "\\" in t or t.endswith((".whl", ".tar.gz", ".zip")):
        return "a path"
    if "@" in t:
        return "an @ direct reference"
    if ";" in t:
        return "an environment marker (a stack is one platform's already)"
    return None


def digest(requires) -> str:
    """A short digest of a set of requirements, whatever order the file wrote them in."""
    return hashlib.sha256("\n".join(sorted(requires)).encode()).hexdigest()[:10]


def names(requires) -> list:
    """The project names of normalised requirements (check_requires'): what a run records."""
    return [_name(r) for r in requires]


def _name(requirement: str) -> str:
    m = re.match(r"[a-z0-9._-]+", requirement)
    if m is None:  # check_requires' normal form starts with its project's name
        raise ValueError(f"not a normalised requirement: {requirement!r}")
    return m.group(0)
