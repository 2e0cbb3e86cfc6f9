"""OCI archives of stack images: written by ``podman save``, read back as untrusted input.

A bundle may carry a stack image (``kit export --image``). An image is code, so its archive is
checked before any runtime sees it, by reading the tar as a stream: only the OCI layout's own
members (``oci-layout``, ``index.json``, ``blobs/sha256/HEX``), regular files, each blob's bytes
hashing to its name, one manifest naming no reference (kit never writes one: loading it would
re-tag an image of the user's), the config's digest the image id the bundle's recipe claims, its
layers' diff_ids the recipe's, each layer's uncompressed bytes hashing to its diff_id. Every
count and size is bounded. Only then is it loaded, under a tag of kit's own.
"""

from __future__ import annotations

import hashlib
import json
import re
import tarfile
import zlib
from pathlib import Path

from ...core.atomic import atomic_path
from ...core.caps import MIB, cap
from ...core.errors import Failed, KitError, one_line
from .runtime import Runtime, last_line

_BLOB = re.compile(r"blobs/sha256/([0-9a-f]{64})")
_SMALL = 1 << 20  # index.json, a manifest, a config: at most this long
_MEMBERS = 256  # an image kit builds has ~6 members
_LAYER = "application/vnd.oci.image.layer.v1.tar"
_CHUNK = 1 << 20
SAVE_SECONDS = 1800


def max_bytes() -> int:
    """The cap on an image archive in a bundle (``KIT_BUNDLE_MAX_IMAGE_MIB``, default 8192)."""
    return cap("KIT_BUNDLE_MAX_IMAGE_MIB", 8192)


def save(rt: Runtime, image: str, dest: Path) -> Path:
    """Write image ``image`` (an id) to ``dest`` as an OCI archive, whole or not at all."""
    with atomic_path(dest) as tmp:
        Path(tmp).unlink(missing_ok=True)  # podman refuses to write over a file
        try:
            # by its bare hex id: "sha256:..." would be written into the index as a name
            proc = rt.call(
                "save",
                "--format",
                "oci-archive",
                "-o",
                str(tmp),
                image.removeprefix("sha256:"),
                timeout=SAVE_SECONDS,
            )
        except OSError as e:
            raise Failed(f"{rt.name} save {image[7:19]}: {one_line(e)}") from None
        if proc.returncode != 0:
            why = last_line(proc.stderr or proc.stdout)
            raise Failed(
                f"image {image[7:19]} could not be written to {dest.parent}: {why}", reason=why
            )
    return dest


def check(path: Path, claim: dict) -> dict:
    """Read archive ``path`` as untrusted and check it is the image ``claim`` (a recipe: "id",
    "diff_ids") says; returns {"id", "diff_ids", "bytes"}. KitError, one line, otherwise."""
    where = f"the image archive of {claim.get('stack', 'a stack')}"
    size = path.stat().st_size
    if size > max_bytes():
        raise KitError(
            f"{where} is {size / MIB:,.0f} MiB, above the {max_bytes() / MIB:,.0f} MiB "
            "cap (KIT_BUNDLE_MAX_IMAGE_MIB raises it)"
        )
    small, blobs = {}, {}
    try:
        with tarfile.open(path, mode="r|") as tar:
            for n, m in enumerate(tar):
                if n >= _MEMBERS:
                    raise KitError(f"{where} holds more than {_MEMBERS} members")
                if m.isdir() and m.name.rstrip("/") in ("blobs", "blobs/sha256"):
                    continue
                if not m.isfile():
                    raise KitError(f"{where}: member {m.name[:80]!r} is not a regular file")
                name = m.name
                blob = _BLOB.fullmatch(name)
                if name in ("oci-layout", "index.json"):
                    small[name] = _small(tar, m, where)
                elif blob and blob.group(1) not in blobs:
                    blobs[blob.group(1)] = _hash_blob(tar, m, blob.group(1), small, where)
                else:
                    raise KitError(f"{where}: member {name[:80]!r} is not part of an OCI image")
    except (tarfile.TarError, EOFError, zlib.error) as e:
        raise KitError(f"{where} is damaged or cut short ({one_line(e)})") from None
    return _check_layout(path, small, blobs, claim, where, size)


def _small(tar, m, where) -> bytes:
    if m.size > _SMALL:
        raise KitError(f"{where}: {m.name} is {m.size:,} bytes, more than such a file holds")
    data = tar.extractfile(m).read()
    if len(data) != m.size:
        raise KitError(f"{where}: {m.name} is cut short")
    return data


def _hash_blob(tar, m, digest: str, small: dict, where: str) -> dict:
    """A blob's sha256 and size as it streams by; its head kept (a manifest or config is small;
    a layer's is not needed). Layers are hashed again uncompressed in ``_layer_digest``."""
    h, size, head = hashlib.sha256(), 0, bytearray()
    f = tar.extractfile(m)
    gz = _Inflate()  # a gzip layer's diff_id, as it goes (other blobs are left alone)
    while chunk := f.read(_CHUNK):
        h.update(chunk)
        size += len(chunk)
        if len(head) <= _SMALL:
            head += chunk[: _SMALL + 1 - len(head)]
        gz.feed(chunk, where)
    if size != m.size:
        raise KitError(f"{where}: blob {digest[:12]} is cut short")
    if h.hexdigest() != digest:
        raise KitError(
            f"{where}: blob {digest[:12]} does not hash to its name; the archive was changed"
        )
    return {
        "size": size,
        "head": bytes(head) if size <= _SMALL else None,
        "diff_id": gz.digest(where),
        "plain": "sha256:" + digest,
    }


class _Inflate:
    """gzip's uncompressed sha256 as the compressed bytes stream by, bounded (a gzip bomb)."""

    def __init__(self):
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._h, self._n, self._gzip = hashlib.sha256(), 0, None

    def feed(self, chunk: bytes, where: str) -> None:
        if self._gzip is None:
            self._gzip = chunk[:2] == b"\x1f\x8b"
        if not self._gzip:
            return
        data = self._z.decompress(chunk)
        self._n += len(data)
        if self._n > 4 * max_bytes():
            raise KitError(f"{where}: a layer expands beyond {4 * max_bytes() / MIB:,.0f} MiB")
        self._h.update(data)

    def digest(self, where: str) -> str | None:
        if not self._gzip:
            return None  # an uncompressed layer: its blob digest is its diff_id
        rest = self._z.flush()
        self._h.update(rest)
        if not self._z.eof:
            raise KitError(f"{where}: a layer's gzip stream is cut short")
        return "sha256:" + self._h.hexdigest()


def _json(data: bytes | None, what: str, where: str) -> dict:
    try:
        doc = json.loads(data) if data is not None else None
    except (ValueError, UnicodeDecodeError):
        doc = None
    if not isinstance(doc, dict):
        raise KitError(f"{where}: its {what} is not an OCI document")
    return doc


def _blob(blobs: dict, desc, what: str, where: str) -> dict:
    """The blob a descriptor names, present and of the size it says."""
    digest = desc.get("digest") if isinstance(desc, dict) else None
    if not isinstance(digest, str) or not digest.startswith("sha256:") or digest[7:] not in blobs:
        raise KitError(f"{where}: its {what} is not in the archive")
    b = blobs[digest[7:]]
    if desc.get("size") != b["size"]:
        raise KitError(f"{where}: its {what}'s size is not the one its descriptor states")
    return b


def _check_layout(path, small, blobs, claim, where, size) -> dict:
    layout = _json(small.get("oci-layout"), "oci-layout", where)
    if layout.get("imageLayoutVersion") != "1.0.0":
        raise KitError(f"{where} is not an OCI image layout 1.0.0")
    index = _json(small.get("index.json"), "index.json", where)
    manifests = index.get("manifests")
    if not isinstance(manifests, list) or len(manifests) != 1:
        raise KitError(f"{where}: its index names {len(manifests or [])} images, not one")
    if manifests[0].get("annotations"):
        # a reference name would tag the user's image store on load: kit writes none
        raise KitError(f"{where}: its index names a reference (kit's archives name none)")
    manifest = _json(_blob(blobs, manifests[0], "manifest", where)["head"], "manifest", where)
    cfg_blob = _blob(blobs, manifest.get("config"), "config", where)
    config = _json(cfg_blob["head"], "config", where)
    image = manifest["config"]["digest"]
    if image != claim.get("id"):
        raise KitError(
            f"{where} is image {image[7:19]}, not {str(claim.get('id'))[7:19]} as "
            "its recipe and runs claim; it is not run"
        )
    diff_ids = (
        (config.get("rootfs") or {}).get("diff_ids")
        if isinstance(config.get("rootfs"), dict)
        else None
    )
    layers = manifest.get("layers")
    if (
        not isinstance(layers, list)
        or not isinstance(diff_ids, list)
        or len(layers) != len(diff_ids)
    ):
        raise KitError(f"{where}: its layers and its config's diff_ids do not match")
    if diff_ids != list(claim.get("diff_ids") or []):
        raise KitError(f"{where}: its layers are not the ones its recipe names")
    for desc, diff_id in zip(layers, diff_ids, strict=True):
        b = _blob(blobs, desc, "layer", where)
        kind = desc.get("mediaType")
        got = b["diff_id"] if kind == _LAYER + "+gzip" else b["plain"] if kind == _LAYER else None
        if got != diff_id:
            raise KitError(f"{where}: a layer's contents are not its diff_id {str(diff_id)[7:19]}")
    used = {d["digest"][7:] for d in (manifests[0], manifest["config"], *layers)}
    if set(blobs) - used:
        raise KitError(f"{where} holds blobs its image does not use")
    return {"id": image, "diff_ids": diff_ids, "bytes": size}


def load(rt: Runtime, path: Path, checked: dict, tag: str) -> str:
    """Load a ``check``-ed archive into the runtime's store and tag it ``tag``; its image id."""
    try:
        proc = rt.call("load", "-q", "-i", str(path), timeout=SAVE_SECONDS)
    except OSError as e:
        raise Failed(f"{rt.name} load: {one_line(e)}") from None
    if proc.returncode != 0:
        raise Failed(f"{rt.name} could not load the image: {last_line(proc.stderr or proc.stdout)}")
    rt.check("tag", checked["id"], tag, what=f"tagging image {checked['id'][7:19]}", timeout=60)
    return checked["id"]
