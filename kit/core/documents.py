"""Strict schemas of a run's documents (its spec, its manifest, its stages, a pair of runs).

Everything that enters kit as JSON — a bundle's runs, the store's rows, a worker's manifest — is
parsed here into typed records by msgspec in strict mode: unknown fields are refused, every
string, list and mapping has a bound, and a value of the wrong type is never coerced. What a
document could derive (a run's id from its spec) is derived by its reader, never taken from it.
Documents of one edge (a bundle's whole ``bundle.json``) build on these records.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Iterator
from typing import Annotated, Any, TypeVar

import msgspec
from msgspec import Meta, Struct

from .errors import KitError
from .spec import Device, Dtype, Embedding, Kind, Process, RunSpec

__all__ = [
    "DocumentError",
    "Manifest",
    "Pair",
    "SpecDoc",
    "Stage",
    "control_free",
    "decode",
    "decode_manifest",
    "decode_spec",
    "manifest_names",
    "run_spec",
    "spec_from_json",
]

# bounds: far above what kit writes (a run has ~30 stages, a manifest ~40 fields), far below
# what would cost memory to hold
# patterns end in \Z: msgspec searches a pattern, and $ also matches before a final newline
Hex64 = Annotated[str, Meta(pattern=r"^[0-9a-f]{64}\Z")]
Hex64Or0 = Annotated[str, Meta(pattern=r"^([0-9a-f]{64})?\Z")]  # a run's hash, or "" for none
Name = Annotated[str, Meta(min_length=1, max_length=256)]  # a stage, seed, package, stack name
Text = Annotated[str, Meta(max_length=4096)]  # a path, a platform string, a cpu
Small = Annotated[int, Meta(ge=-(2**62), le=2**62)]
_MANY = 1024  # entries of one mapping or list
T = TypeVar("T")


class DocumentError(KitError):
    """A document that is not what kit writes: the one line names the first field at fault.
    ``what``: the document ("spec", "manifest"), where named; ``reason``: what is wrong in it,
    for a caller that names the document its own way."""

    def __init__(self, reason: str, what: str | None = None):
        super().__init__(f"{what}: {reason}" if what else reason)
        self.what, self.reason = what, reason


# -- a run's spec ------------------------------------------------------------------------------
class _Spec(Struct, forbid_unknown_fields=True):
    """RunSpec's JSON form, as RunSpec.to_json writes it (later fields absent at their default)."""

    dataset: Hex64
    stack: Name
    stack_id: Text
    # every field RunSpec.to_json always writes is required: a spec without one has another id
    threads: Annotated[int, Meta(ge=1, le=4096)]
    dtype: Dtype
    svd_iters: Annotated[int, Meta(ge=1, le=10_000)]
    seeds: Annotated[list[tuple[Name, Small]], Meta(max_length=_MANY)]
    env: Annotated[list[tuple[Name, Text]], Meta(max_length=64)]
    replicate: Annotated[int, Meta(ge=0, le=2**31)]
    kind: Kind
    input: Hex64Or0
    device: Device
    deterministic: bool
    host: Annotated[str, Meta(max_length=256)]
    perturb: Annotated[str, Meta(max_length=256)]
    # fields added later (spec._LATER_DEFAULTS): absent at their default
    embedding: Embedding = "randomized"
    process: Process = ""
    split: Annotated[int, Meta(ge=-1, le=2**62)] = -1
    feed: Annotated[str, Meta(max_length=64)] = ""
    pipeline: Hex64Or0 = ""


SpecDoc = _Spec  # a bundle's run holds one (kit.app.bundle_schema)


def spec_from_json(raw: str | bytes) -> RunSpec:
    """A RunSpec from its JSON text (str or bytes), strictly; DocumentError otherwise."""
    doc = decode(raw, _Spec, "spec")
    return _to_spec(doc)


def decode_spec(obj: object) -> RunSpec:
    """A RunSpec from its JSON form already parsed (a bundle's run), strictly."""
    return _to_spec(convert(obj, _Spec, "spec"))


def run_spec(doc: _Spec) -> RunSpec:
    """The RunSpec of a decoded spec, its names and env checked; DocumentError otherwise."""
    return _to_spec(doc)


def _to_spec(doc: _Spec) -> RunSpec:
    names = [k for k, _ in doc.seeds] + [k for k, _ in doc.env]
    bad = next((n for n in names if not control_free(n)), None)
    if bad is not None:
        raise DocumentError(f"the name {bad[:40]!r} holds a control character", what="spec")
    try:
        return RunSpec.from_dict(msgspec.to_builtins(doc))
    except (TypeError, ValueError) as e:
        raise DocumentError(str(e), what="spec") from None


# -- a run's stages and manifest ---------------------------------------------------------------
class Stage(Struct, forbid_unknown_fields=True):
    """One stage array as its run records it: the sha256 of its C-order bytes, dtype, shape."""

    sha256: Hex64
    dtype: Annotated[str, Meta(pattern=r"^[<>|=][A-Za-z][0-9]{0,10}\Z")]  # numpy's dtype.str
    shape: Annotated[list[Annotated[int, Meta(ge=0, le=2**40)]], Meta(max_length=8)]


class _Timing(Struct, forbid_unknown_fields=True):
    wall_s: float
    cpu_s: float


class _Fingerprint(Struct, forbid_unknown_fields=True):
    """What the worker's fingerprint() records of its interpreter (kit.worker.fingerprint)."""

    python: Annotated[str, Meta(pattern=r"^\d+\.\d+(\.\d+)?[a-z0-9+]*\Z", max_length=32)]
    machine: Annotated[str, Meta(max_length=64)]
    os: Annotated[str, Meta(max_length=64)]
    cpu: Text
    torch: Annotated[dict[Name, Text | bool | int | float | None], Meta(max_length=64)] | None = (
        None
    )
    implementation: Annotated[str, Meta(max_length=64)] = ""
    executable: Text = ""
    rosetta: bool | None = None
    platform: Text = ""
    os_release: Text = ""
    libc: Text = ""
    cpu_count: int | None = None
    host: Text = ""
    packages: Annotated[dict[Name, Text | None], Meta(max_length=_MANY)] = {}
    threadpools: (
        Annotated[
            list[Annotated[dict[Name, Text | int | None], Meta(max_length=64)]], Meta(max_length=64)
        ]
        | None
    ) = None
    blas_build: Annotated[dict[Name, Text | None], Meta(max_length=64)] | None = None
    env: Annotated[dict[Name, Text], Meta(max_length=64)] = {}


# the runner's copy of a run's spec (checked against the run's own by its reader): JSON values
# two deep at most (seeds are [name, value] pairs), each bounded, kept as the text has them
_Scalar = Text | Small | bool | None
_SpecCopy = Annotated[
    dict[
        Name,
        Text
        | Small
        | bool
        | None
        | Annotated[
            list[Text | Small | Annotated[list[_Scalar], Meta(max_length=8)]],
            Meta(max_length=_MANY),
        ],
    ],
    Meta(max_length=64),
]


class Manifest(Struct, forbid_unknown_fields=True):
    """A worker's manifest of one run (kit.worker.__main__._write), plus what the runner and a
    cluster node add (``spec``, ``node``)."""

    stages: Annotated[dict[Name, Stage], Meta(max_length=_MANY)]
    env: _Fingerprint
    wall_s: Annotated[float, Meta(ge=0)]
    timings: Annotated[dict[Name, _Timing], Meta(max_length=_MANY)] = {}
    started: float | None = None
    finished: float | None = None
    seeds: Annotated[dict[Name, Small], Meta(max_length=_MANY)] = {}
    runs_before: Annotated[int, Meta(ge=0)] | None = None
    outputs: Annotated[list[Name], Meta(max_length=_MANY)] | None = None
    not_in_dtype: Annotated[list[Name], Meta(max_length=_MANY)] | None = None
    torch_run: (
        Annotated[dict[Name, Text | bool | int | float | None], Meta(max_length=64)] | None
    ) = None
    spec: _SpecCopy | None = None  # the runner's copy of the spec
    # the cluster node that made it (kit.runs.executing.on_node.facts)
    node: Annotated[dict[Name, Text | int | None], Meta(max_length=64)] | None = None
    # the container image it ran in (kit.runs.executing.attempt): its id, base and release
    image: (
        Annotated[
            dict[
                Name,
                Text
                | None
                | Annotated[
                    list[Annotated[str, Meta(pattern=r"^sha256:[0-9a-f]{64}\Z")]],
                    Meta(max_length=128),
                ],
            ],
            Meta(max_length=16),
        ]
        | None
    ) = None


def decode_manifest(raw: object) -> dict[str, Any]:
    """A manifest's JSON text (or its parsed form) checked strictly; returned as the dict
    readers use (the JSON edge), exactly as written, with every name free of control
    characters."""
    given: Any = raw
    if isinstance(raw, (str, bytes)):
        try:
            given = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            raise DocumentError("not JSON", what="manifest") from None
    doc = convert(given, Manifest, "manifest")  # a JSON object, then
    assert isinstance(given, dict)
    why = manifest_names(doc, given)
    if why:
        raise DocumentError(why, what="manifest")
    walls = (doc.wall_s, *(t.wall_s for t in doc.timings.values()))
    if not all(math.isfinite(w) for w in walls):
        raise DocumentError("a wall time is not a finite number", what="manifest")
    return given


def manifest_names(doc: Manifest, tree: object = None) -> str | None:
    """Why a decoded manifest's names may not reach generated text (None: they may): the field
    and the name of the first with a control character. Every string of the manifest counts:
    an environment's host, a thread pool's owner or a variable's value reaches the budget's
    confounds, `kit compare`'s list of what differs and the report, as a stage name does.
    ``tree``: the manifest as parsed JSON when the caller has it (walked instead of rebuilding
    it from ``doc``: the store reads every manifest through here)."""
    for field, names in (
        ("stage", doc.stages),
        ("timing", doc.timings),
        ("seed", doc.seeds),
        ("output", doc.outputs or ()),
        ("package", doc.env.packages),
    ):
        bad = next((n for n in names if not control_free(n)), None)
        if bad is not None:
            return f"the {field} name {bad[:40]!r} holds a control character"
    tree = msgspec.to_builtins(doc) if tree is None else tree
    bad = next((t for t in _strings(tree) if not control_free(t)), None)
    if bad is not None:
        return f"the value {bad[:40]!r} holds a control character"
    return None


def _strings(obj: object) -> Iterator[str]:
    """Every string of a JSON value, keys included."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


class Pair(Struct, forbid_unknown_fields=True):
    """Two runs an audit planned to differ in ``factor`` (at ``level``)."""

    factor: Annotated[str, Meta(min_length=1, max_length=64)]
    level: Annotated[str, Meta(max_length=256)]
    a: Hex64
    b: Hex64
    label: Annotated[str, Meta(max_length=512)]


# -- shared ------------------------------------------------------------------------------------
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@functools.lru_cache(maxsize=4096)  # the same stage and package names recur in every run
def control_free(name: str) -> bool:
    """No control or format character (newlines, escapes, bidi overrides) in a name that may
    reach generated text: code, YAML, Markdown, HTML or a terminal."""
    # ASCII names (nearly all) need the regex alone: a bundle of 3,000 runs holds 460,000
    return not _CONTROL.search(name) and (
        name.isascii()
        or not any(unicodedata.category(c) in ("Cc", "Cf") for c in name if ord(c) > 127)
    )


def decode(raw: str | bytes, type_: type[T], what: str) -> T:
    """``raw`` JSON (str or bytes) as ``type_``, strictly; DocumentError naming ``what``."""
    try:
        return msgspec.json.decode(raw, type=type_, strict=True)
    except msgspec.ValidationError as e:
        raise DocumentError(str(e)[:200], what=what) from None
    except msgspec.DecodeError:
        raise DocumentError("not JSON", what=what) from None


def convert(obj: object, type_: type[T], what: str) -> T:
    """An already parsed JSON value as ``type_``, strictly; DocumentError naming ``what``."""
    try:
        return msgspec.convert(obj, type=type_, strict=True)
    except msgspec.ValidationError as e:
        raise DocumentError(str(e)[:200], what=what) from None
