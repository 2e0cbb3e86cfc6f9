"""A lab pipeline's pairs found again from its stored specs, named by the factor they differ in."""

from __future__ import annotations

import json
from dataclasses import asdict

from ..core import factors
from ..core.errors import KitError
from ..envs.platforms import detect
from ..runs.planning.stack_pairs import stack_pairs
from ..runs.store import Store

# one field of the spec, and its two values: the run planned first, then the other(s)
_ONE_FIELD = (("threads", lambda a, b: a == 1 and b > 1),
              ("precision", lambda a, b: a == "float64" and b == "float32"),
              ("process", lambda a, b: a == "fresh" and b == "warm"))
_FIELD = {"threads": "threads", "precision": "dtype", "process": "process"}
# what a factor's runs hold at the plan's base (kit.runs.planning.lab): a float32 run at 1 and
# 2 threads differs in threads alone too, but it is the precision plan's, not a threads pair
_BASE = {"dtype": "float64", "process": "", "replicate": 0}


def pairs(store: Store, pipeline: str) -> list:
    """The stored pairs of pipeline ``pipeline``: (factor, run a, run b), found from the specs
    themselves, each pair two runs that differ in what its factor varies and nothing else.
    repeat: the replicate; seed: every named seed moved from a run whose seeds are all equal;
    seed:NAME: NAME alone moved from that run; threads: 1 against more; precision: float64
    against float32; process: a fresh worker against a warm one; a stack factor (arch, blas,
    numpy, python, sklearn): the catalogue's stack pairs for it on this platform; host: one
    spec made on two machines."""
    specs = [s for s in store.specs(pipeline).values() if s.pipeline == pipeline]
    found = _seeds(_at_base(specs, "replicate"))
    for factor, test in _ONE_FIELD:
        field = _FIELD[factor]
        for group in _groups(_at_base(specs, field), field).values():
            found += [(factor, a.run_id, b.run_id) for a in group for b in group
                      if test(getattr(a, field), getattr(b, field))]
    found += _stacks(_at_base(specs))
    found += _hosts(specs)
    return sorted(set(found))


def _hosts(specs) -> list:
    """host: one spec made on two machines (a cluster's node classes, or a bundle's run and its
    rerun here by `kit compare`), each run of the first host id against its twin on each other;
    the stack's identity is the machine's too (its interpreter, its build), so it may differ.
    Any spec, not only the plan's base: `kit compare` reruns every run a bundle holds."""
    found = []
    for group in _groups(specs, "host", "stack_id").values():
        first = min(s.host for s in group)
        found += [("host", a.run_id, b.run_id) for a in group if a.host == first
                  for b in group if b.host != first]
    return found


def _at_base(specs, varied: str = "") -> list:
    """The specs whose fields other than ``varied`` hold the plan's base values (_BASE)."""
    return [s for s in specs if all(getattr(s, k) == v for k, v in _BASE.items() if k != varied)]


def _key(spec, *fields) -> str:
    """What a spec is with ``fields`` left out: two specs with one key differ in those alone."""
    d = asdict(spec)
    for f in fields:
        del d[f]
    return json.dumps(d, sort_keys=True, default=list)


def _groups(specs, *fields) -> dict:
    out: dict = {}
    for s in specs:
        out.setdefault(_key(s, *fields), []).append(s)
    return out


def _seeds(specs) -> list:
    """repeat, seed and seed:NAME: runs that differ only in their seeds and replicate."""
    found = []
    for group in _groups(specs, "seeds", "replicate").values():
        ids = {(s.seeds, s.replicate): s.run_id for s in group}
        found += [("repeat", ids[(s.seeds, 0)], s.run_id) for s in group
                  if s.replicate > 0 and (s.seeds, 0) in ids]
        refs = [s for s in group if s.replicate == 0 and len(set(s.seed_dict.values())) <= 1]
        if not refs:
            continue
        ref = min(refs, key=lambda s: min(s.seed_dict.values(), default=0))
        for s in group:
            if s.replicate or s.run_id == ref.run_id:
                continue
            moved = [k for k in ref.seed_dict if ref.seed_dict[k] != s.seed_dict.get(k)]
            if len(moved) == 1 and len(ref.seed_dict) > 1:
                found.append((f"seed:{moved[0]}", ref.run_id, s.run_id))
            elif moved and len(moved) == len(ref.seed_dict) and len(set(s.seed_dict.values())) == 1:
                found.append(("seed", ref.run_id, s.run_id))
    return found


def _stacks(specs) -> list:
    """Runs that differ only in their stack (and its extra environment, for arch's code paths),
    in one of the catalogue's pairs for a stack factor on this platform."""
    plat, found = detect(), []
    wanted = {}  # (stack a, env a, stack b, env b) -> the factors that pair them
    for factor in factors.names(factors.STACKS):
        try:
            for a, ea, b, eb, _ in stack_pairs(factor, plat):
                wanted.setdefault((a, tuple(ea), b, tuple(eb)), []).append(factor)
        except KitError:  # no pairs for it here
            continue
    for group in _groups(specs, "stack", "stack_id", "env").values():
        for a in group:
            for b in group:
                for factor in wanted.get((a.stack, a.env, b.stack, b.env), ()):
                    found.append((factor, a.run_id, b.run_id))
    return found
