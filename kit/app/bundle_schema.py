"""The schema of a bundle's two documents (bundle.json, MANIFEST.json), decoded strictly from the bytes.

msgspec decodes each document straight into these records: an unknown field, a value of the wrong
type or a string, list or mapping over its bound is refused as it is met, in one line naming the
field (``runs[2].manifest.env.python``), so no document bigger than its schema allows is ever
materialised and no nesting deeper than the schema's is ever followed. Names that reach generated
text (stages, outputs, seeds, pair labels, dataset hints, probes, pipeline files, the host) are
then refused when they hold a control character. What a bundle's runs must agree on (ids, shapes,
blob keys, a lab's kinds) is kit.app.bundle_checks'.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

import msgspec
from msgspec import Meta, Raw, Struct

from ..core.documents import (
    Hex64,
    Manifest,
    Name,
    Pair,
    SpecDoc,
    Stage,
    Text,
    control_free,
    manifest_names,
)
from ..core.errors import KitError
from ..worker.contract import plain_output_name

# a type names its value once more: mypy takes no variable in Literal[], and checks the two agree
_FormatName = Literal["kit-bundle/1"]
FORMAT: _FormatName = "kit-bundle/1"
MAX_RUNS = 2**16  # 32 MiB of JSON holds ~10,000 runs; the bytes bind first
MAX_RUN_BYTES = 4 * 2**20  # one run's record: a lab run of 1,024 outputs writes ~0.4 MiB
MAX_PIPELINE_SOURCE = 4 * 2**20 * 4 // 3 + 4  # a 4 MiB file in base64 (bundle_pipelines)
# a legitimate bundle holds one string per ~20 bytes and one comma per ~35 (hashes dominate);
# a body above DENSE_FROM with one per DENSE_BYTES is a bomb of small values, refused before it
# is decoded (each costs ~50 bytes of memory once it is a Python object, whatever its bound)
DENSE_FROM, DENSE_BYTES = 4 * 2**20, 8

_Short = Annotated[str, Meta(max_length=64)]
_Scalar = Text | int | float | bool | None
_MANY = 1024


class Host(Struct, forbid_unknown_fields=True):
    id: Annotated[str, Meta(min_length=1, max_length=64)]
    name: Annotated[str, Meta(max_length=256)]


class Run(Struct, forbid_unknown_fields=True):
    """One run as `kit export` writes it: StoredRun.to_json and its stages' blob keys."""

    id: Hex64
    spec: SpecDoc
    created: _Short
    manifest: Manifest
    stages: Annotated[dict[Name, Stage], Meta(max_length=_MANY)]
    blobs: Annotated[dict[Name, Hex64], Meta(max_length=_MANY)]
    # older bundles carried each run's verdicts: decoded to be bounded, never read (recomputed)
    verdicts: (
        Annotated[
            dict[
                Name,
                Annotated[
                    dict[
                        Name,
                        Text
                        | float
                        | int
                        | bool
                        | None
                        | Annotated[dict[Name, float | None], Meta(max_length=64)],
                    ],
                    Meta(max_length=64),
                ],
            ],
            Meta(max_length=256),
        ]
        | None
    ) = None


class Probe(Struct, forbid_unknown_fields=True):
    """What a probe stack is (kit.envs.probes.carried), never its lock."""

    base: Name
    package: Name
    version: Name


class PipelineFile(Struct, forbid_unknown_fields=True):
    name: Name
    source: Annotated[str, Meta(max_length=MAX_PIPELINE_SOURCE)]


_Digest = Annotated[str, Meta(pattern=r"^sha256:[0-9a-f]{64}\Z")]
_Path = Annotated[str, Meta(pattern=r"^/[\w./+-]{1,500}\Z")]


class FetchedPython(Struct, forbid_unknown_fields=True):
    """The interpreter an image was given in place of the host's (kit.envs.containers.pythons):
    python-build-standalone's build, pinned by its archive's sha256."""

    version: Annotated[str, Meta(pattern=r"^3\.\d{1,2}\.\d{1,3}\Z")]
    release: Annotated[str, Meta(pattern=r"^\d{8}\Z")]
    arch: Literal["x86_64", "aarch64"]
    flavour: Literal["install_only", "install_only_stripped"]
    sha256: Hex64


class ImageRecipe(Struct, forbid_unknown_fields=True):
    """A container stack's image as a bundle carries it (kit.envs.containers.images.carried):
    what names it and the recipe it is rebuilt from; ``archive``: the image itself is member
    images/ID.tar (kit export --image)."""

    id: _Digest
    diff_ids: Annotated[list[_Digest], Meta(max_length=64)]
    base: Annotated[str, Meta(pattern=r"^[a-z]{1,32}\Z")]
    base_id: _Digest
    lock_sha256: Hex64
    interpreter: _Path
    python_prefix: _Path
    size: Annotated[int, Meta(ge=0, le=2**50)] = 0
    base_diff_ids: Annotated[list[_Digest], Meta(max_length=64)] = []
    release: _Short = ""
    glibc: _Short | None = None
    os_packages_sha256: Hex64 | None = None
    python_fetched: FetchedPython | None = None
    os_packages: Annotated[
        list[
            Annotated[list[Annotated[str, Meta(max_length=128)]], Meta(min_length=2, max_length=2)]
        ],
        Meta(max_length=4096),
    ] = []
    archive: bool = False


# a dataset's hint: the summary the exporting store held (a lab pipeline's lists its seeds and
# kinds), read only to find the dataset here
_Hint = Annotated[
    dict[
        Name,
        Text
        | int
        | float
        | bool
        | None
        | Annotated[list[_Scalar], Meta(max_length=_MANY)]
        | Annotated[dict[Name, _Scalar], Meta(max_length=_MANY)],
    ],
    Meta(max_length=64),
]


class _Head(Struct, forbid_unknown_fields=True):
    """bundle.json with its runs left as bytes: each is decoded on its own (bounded first)."""

    format: _FormatName
    host: Host
    created: _Short
    runs: Annotated[list[Raw], Meta(max_length=MAX_RUNS)]
    pairs: Annotated[list[Pair], Meta(max_length=MAX_RUNS * 4)]
    datasets: Annotated[dict[Hex64, _Hint], Meta(max_length=MAX_RUNS)]
    kit: _Short = ""
    arrays: bool = False
    probes: Annotated[dict[Name, Probe], Meta(max_length=256)] = {}  # older bundles: none
    pipelines: Annotated[dict[Hex64, PipelineFile], Meta(max_length=64)] = {}
    images: Annotated[dict[Name, ImageRecipe], Meta(max_length=64)] = {}  # older bundles: none


class Bundle(Struct):
    """bundle.json, every run decoded."""

    head: _Head
    runs: list[Run]


class _Format(Struct):
    """The format alone (the rest skipped): a bundle of another format is named as such."""

    format: _Short | int | float | bool | None = None


class _RunId(Struct):
    id: _Short = ""
    manifest: Raw = Raw(b"{}")


class Entry(Struct, forbid_unknown_fields=True):
    """A member of the bundle as MANIFEST.json records it."""

    sha256: Hex64
    size: Annotated[int, Meta(ge=0, le=2**50)]


# the members kit export writes: bundle.json, arrays/BLOB.npy and images/ID.tar, nothing else
_Member = Annotated[
    str, Meta(pattern=r"^(bundle\.json|arrays/[0-9a-f]{64}\.npy|images/[0-9a-f]{64}\.tar)\Z")
]
_Members = Annotated[dict[_Member, Entry], Meta(max_length=2**20)]


def decode_members(raw: bytes, path) -> dict:
    """MANIFEST.json: {member: Entry}, nothing else; one line otherwise."""
    return _decode(raw, _Members, path, "MANIFEST.json")


def decode_bundle(body: bytes, path) -> Bundle:
    """bundle.json as its records, each bounded as it is decoded; KitError (one line) naming
    the first field at fault."""
    strings, commas = body.count(b'"') // 2, body.count(b",")
    if len(body) > DENSE_FROM and max(strings, commas) * DENSE_BYTES > len(body):
        raise KitError(
            f"{path}: bundle.json holds {max(strings, commas):,} values in "
            f"{len(body) / 2**20:.1f} MiB, far more than any bundle kit writes; "
            "refusing it"
        )
    fmt = _decode(body, _Format, path, "bundle.json").format
    if fmt != FORMAT:
        raise KitError(f"{path}: unknown bundle format {_shown(fmt)}; not a bundle this kit reads")
    head = _decode(body, _Head, path, "bundle.json")
    runs = []
    for i, raw in enumerate(head.runs):
        if len(raw) > MAX_RUN_BYTES:
            raise KitError(
                f"{path}: bundle.json's run {i} is {len(raw) / 2**20:,.1f} MiB, more "
                f"than a run's record holds ({MAX_RUN_BYTES // 2**20} MiB); refusing "
                "the bundle"
            )
        runs.append(_run(raw, i, path))
    _names(head, runs, path)
    return Bundle(head, runs)


def plain(body: bytes, path):
    """The JSON form of a document the schema passed (the very bytes, as the text has them)."""
    return _decode(body, object, path, "bundle.json")


def _run(raw: Raw, i: int, path) -> Run:
    try:
        return msgspec.json.decode(raw, type=Run, strict=True)
    except msgspec.ValidationError as e:  # (a DecodeError too: this one first)
        where, what = _split(e)
        if where.startswith("manifest"):  # the fields readers use, said as a reader misses them
            try:
                head = msgspec.json.decode(raw, type=_RunId)
                rid = head.id
                if "env" not in msgspec.json.decode(head.manifest, type=dict[str, Raw]):
                    where = "manifest.env"  # an emptied manifest: what readers miss most
            except msgspec.DecodeError:
                rid = f"#{i}"
            raise KitError(
                f"{path}: run {_printable(rid[:12])}: its manifest "
                f"{_manifest_says(where[9:], what)}; the bundle was not written by "
                "`kit export`"
            ) from None
        raise KitError(
            f"{path}: bundle.json is malformed (runs[{i}]{'.' if where else ''}{where}): {what}"
        ) from None
    except msgspec.DecodeError as e:  # skipped as a whole run, its strings' UTF-8 is met here
        raise KitError(
            f"{path}: bundle.json is not JSON (run {i}: {_printable(str(e)[:80])}); "
            "copy the bundle again"
        ) from None


# what a manifest lacks, in the words of the reader that would miss it
_SAYS = {
    "env": "has no environment ('env')",
    "env.python": "has no Python version like 3.12.1 ('env.python')",
    "env.machine": "has no machine, os or cpu ('env')",
    "env.os": "has no machine, os or cpu ('env')",
    "env.cpu": "has no machine, os or cpu ('env')",
    "wall_s": "has no wall time",
    "stages": "lists other stages than the run",
    "outputs": "lists other outputs than the run's stages",
}


def _manifest_says(field: str, what: str) -> str:
    if not what.startswith("Object contains"):  # an unknown field is named as such
        for key in (field, re.sub(r"\[\d+\]$", "", field)):  # outputs[3]: the outputs
            if key in _SAYS:
                return _SAYS[key]
    return f"is malformed ({field}): {what}"


def _names(head: _Head, runs: list[Run], path) -> None:
    """Refuse the first name with a control character, naming its field and the name."""

    def named():
        yield "host name", [head.host.name, head.host.id]
        yield "date or kit version", [head.created, head.kit, *(r.created for r in runs)]
        for r in runs:
            yield "stage name", [*r.stages, *r.blobs]
            yield "seed name", [k for k, _ in r.spec.seeds]
            yield "spec field", [r.spec.stack, r.spec.stack_id, r.spec.host, r.spec.perturb]
            env = r.manifest.env  # the report's environment table shows these
            yield (
                "environment value",
                [
                    env.machine,
                    env.os,
                    env.cpu,
                    *(v for v in env.packages.values() if v is not None),
                ],
            )
            why = manifest_names(r.manifest)
            if why:
                raise KitError(f"{path}: run {r.id[:12]}: its manifest: {why}; refusing the bundle")
        for p in head.pairs:
            yield "pair label", [p.factor, p.level, p.label]
        for hint in head.datasets.values():
            yield "dataset hint", [*hint, *(v for v in hint.values() if isinstance(v, str))]
        for name, probe in head.probes.items():
            yield "probe stack name", [name, probe.base, probe.package, probe.version]
        yield "pipeline file name", [f.name for f in head.pipelines.values()]
        for name, image in head.images.items():
            yield (
                "image",
                [
                    name,
                    image.release,
                    image.glibc or "",
                    *(x for p in image.os_packages for x in p),
                ],
            )

    for field, names in named():
        bad = next((n for n in names if not control_free(n)), None)
        if bad is not None:
            raise KitError(
                f"{path}: the {field} {bad[:40]!r} holds a control character; refusing the bundle"
            )
    # an output's name is one a worker could have given it: never a spreadsheet's formula
    bad = next((n for r in runs for n in (*r.stages, *r.blobs) if not plain_output_name(n)), None)
    if bad is not None:
        raise KitError(
            f"{path}: the stage name {bad[:40]!r} is not a plain name (letters, digits, "
            "_ . -, as a run's outputs are named); refusing the bundle"
        )


def _decode(raw: bytes, type_, path, member: str):
    try:
        return msgspec.json.decode(raw, type=type_, strict=True)
    except msgspec.ValidationError as e:
        where, what = _split(e)
        raise KitError(
            f"{path}: {member} is malformed ({where or 'the document'}): {what}; not "
            "a bundle written by `kit export`"
        ) from None
    except (msgspec.DecodeError, RecursionError) as e:
        raise KitError(
            f"{path}: {member} is not JSON ({_printable(str(e)[:80])}); copy the bundle again"
        ) from None


def _split(e: msgspec.ValidationError) -> tuple:
    """(field path without ``$.``, what is wrong) of msgspec's message, the path for a missing
    field ending in that field."""
    msg = str(e)
    what, _, at = msg.partition(" - at `")
    at = at.rstrip("`").removeprefix("$").removeprefix(".")
    missing = re.fullmatch(r"Object missing required field `([^`]*)`", what)
    if missing:
        at = f"{at}.{missing.group(1)}" if at else missing.group(1)
    # msgspec quotes a field name as the text has it: a forged one may hold a newline
    what = re.sub(r"`([^`]{40})[^`]*`", r"`\1...`", what)
    return _printable(at), _printable(what)[:160]


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _shown(value) -> str:
    return repr(value)[:40]
