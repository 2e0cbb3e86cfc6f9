"""A name a user typed that is none of the known ones, said with the closest known ones: kit and
the worker say it the same way, for a factor, a seed, a kind, a stack, a dataset or a command."""

from __future__ import annotations

import difflib
import re
import reprlib

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 40
# a name a line can show bare: a factor (seed:svd), a stack (np1-sk152), a dataset
_BARE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:+@/-]{0,59}")
CUTOFF = 0.6  # difflib's similarity: "thread" finds threads, "bogus" finds nothing
NEAREST = 3  # at most this many are offered
MARGIN = 0.1  # ... each as near as the nearest, within this


def shown(value) -> str:
    """A user's name (a seed, an output, a kind, an id) as a message quotes it: its repr, cut to
    40 characters (a bundle's file may name a kind of megabytes; the message stays one line)."""
    return _SHORT.repr(value)


def closest(name, known) -> list:
    """The known names nearest ``name``, nearest first: a slip of case or of a letter or two.
    Those within MARGIN of the nearest (at most NEAREST): "seeed" finds seed, not seed:svd too.
    Names of one family (seed:NAME) are compared by what follows the family's "seed:", which
    would make any two of them look alike, and the family's own name is not offered. Only the first
    60 characters of ``name`` are read:
    difflib is quadratic."""
    text = str(name)[:60].lower()
    family, _, rest = text.rpartition(":")
    scored = []
    for k in dict.fromkeys(str(k) for k in known):
        low = k.lower()
        if family and low == family:  # seed:nope is no slip of seed
            continue
        a, b = (
            (low[len(family) + 1 :], rest)
            if family and low.startswith(family + ":")
            else (low, text)
        )
        m = difflib.SequenceMatcher(None, a, b)
        # difflib.get_close_matches' three tests, cheapest first
        if m.real_quick_ratio() >= CUTOFF and m.quick_ratio() >= CUTOFF and m.ratio() >= CUTOFF:
            scored.append((m.ratio(), k))
    best = max((s for s, _ in scored), default=0)
    near = sorted((s for s in scored if s[0] >= best - MARGIN), key=lambda s: -s[0])
    return [k for _, k in near[:NEAREST]]


def did_you_mean(name, known) -> str:
    """ "did you mean X?" ("X or Y" for several) of the known names closest to ``name``, or ""."""
    near = closest(name, known)
    if not near:
        return ""
    return "did you mean " + " or ".join(k if _BARE.fullmatch(k) else shown(k) for k in near) + "?"


def unknown(said: str, name, known, otherwise: str | None = None, after: str = "") -> str:
    """The one line for a typed ``name`` that is none of ``known``: ``said`` (the words before
    it: "unknown factor", or "seeds[" to index), the name quoted, ``after`` (the words after
    it), then the closest known names ("did you mean X?"), or, when none is close,
    ``otherwise`` (default: every known name listed)."""
    hint = did_you_mean(name, known)
    head = f"{said}{'' if said.endswith('[') else ' '}{shown(name)}{after}"
    if hint:
        return f"{head}: {hint}"
    if otherwise is None:
        names = [str(k) for k in dict.fromkeys(known)]
        otherwise = "; choose from " + (", ".join(names) if names else "none")
    return head + otherwise
