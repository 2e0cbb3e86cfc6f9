"""Reading a run bundle: a bounded stream, every member checked against its runs, arrays spooled.

Import reads a bundle as a stream and checks everything before it touches the store
(kit.app.bundle_schema decodes its JSON strictly, bounded, straight from the bytes;
kit.app.bundle_checks checks the runs against each other): a member must be an array a run refers
to, its .npy header must state the dtype and shape its run recorded and its size must be exactly
that, before its body is inflated; it is then hashed as it is written to a temporary file beside
the store.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import tarfile
import tempfile
import zlib
from contextlib import contextmanager
from pathlib import Path

from ..core.atomic import mount_of
from ..core.errors import KitError, one_line
from ..core.spools import BUNDLE
from ..core.spools import spool as spool_dir
from ..envs.containers.archives import max_bytes as max_image
from ..runs.store.blobs import npy_header
from .bundle_checks import (
    NPY_HEADER,
    Expected,
    check_document,
    check_manifest,
    expected_arrays,
    expected_images,
    max_body,
    max_manifest,
)

_CHUNK = 2**20


class _Bounded(io.RawIOBase):
    """The decompressed stream, refusing to yield more than ``limit`` bytes (a gzip bomb)."""

    def __init__(self, raw, limit: int):
        self.raw, self.limit, self.read_so_far = raw, limit, 0

    def readable(self):
        return True

    def readinto(self, b):
        n = self.raw.readinto(b)
        self.read_so_far += n or 0
        if self.read_so_far > self.limit:
            raise KitError(
                f"the bundle expands beyond the {self.limit / 2**20:.0f} MiB its runs "
                "account for; refusing it"
            )
        return n


@contextmanager
def opened(path, spool=None):
    """Open and verify a bundle; yields (document, {blob: verified .npy file}). The files lie
    in a temporary folder under ``spool`` (the store's folder: moved in from there) that is
    removed afterwards; nothing else is touched."""
    path = Path(path)
    if not path.exists():
        raise KitError(f"no bundle at {path}")
    if not path.is_file():
        raise KitError(f"{path} is not a file")
    # locked as this process's while it is used: a killed import's is swept by the next
    with spool_dir(spool or tempfile.gettempdir(), BUNDLE) as tmp:
        try:
            with gzip.open(path, "rb") as gz:
                found = _read(path, _Bounded(gz, max_manifest() + max_body() + 2**20), Path(tmp))
        except (EOFError, zlib.error, gzip.BadGzipFile, tarfile.TarError) as e:
            raise KitError(
                f"{path} is damaged, cut short or not a kit bundle ({e}); copy it again"
            ) from e
        except OSError as e:
            if e.errno in (errno.ENOSPC, errno.EDQUOT):  # the spool's write, not the bundle's read
                raise KitError(
                    f"cannot write the bundle's arrays in {tmp.parent}: {e.strerror}; nothing was "
                    f"imported: free space on {mount_of(tmp)} and run the same command again"
                ) from e
            raise KitError(f"cannot read {path}: {e.strerror or e}") from e
        yield found


def read(path) -> dict:
    """Verify a bundle as import would (arrays included); returns its document."""
    with opened(path) as (doc, _files):
        return doc


def _read(path: Path, stream: _Bounded, tmp: Path) -> tuple:
    with tarfile.open(fileobj=io.BufferedReader(stream), mode="r|") as tar:
        members = iter(tar)
        raw = _member(tar, next(members, None), "MANIFEST.json", path, max_manifest())
        manifest = check_manifest(raw, path)
        body = _member(tar, next(members, None), "bundle.json", path, max_body())
        _check_sum(manifest, "bundle.json", hashlib.sha256(body).hexdigest(), len(body), path)
        doc = check_document(body, path)
        del body, raw
        expected, carried = expected_arrays(doc, path), expected_images(doc)
        unknown = set(manifest) - {"bundle.json"} - set(expected) - set(carried)
        if unknown:
            raise KitError(
                f"{path}: member {sorted(unknown)[0]!r} is not an array of its runs; "
                "refusing the bundle"
            )
        images = _image_bytes(manifest, carried, path)
        # from here on the stream may hold the runs' arrays, the images and nothing more
        stream.limit = (
            stream.read_so_far
            + sum(NPY_HEADER + e.nbytes for e in expected.values())
            + images
            + 2**20 * (1 + len(expected) + len(carried))
        )
        files, archives = {}, {}
        for m in members:
            name = m.name
            if name in carried and name in manifest and carried[name] not in archives:
                archives[carried[name]] = _spool_image(tar, m, manifest[name], tmp, path)
                continue
            if name not in expected or name not in manifest or name[7:-4] in files:
                raise KitError(f"{path}: refusing member {name!r} (not an array of its runs)")
            files[name[7:-4]] = _spool(tar, m, expected[name], manifest[name], tmp, path)
    missing = (
        set(manifest)
        - {"bundle.json"}
        - {f"arrays/{b}.npy" for b in files}
        - {n for n, stack in carried.items() if stack in archives}
    )
    if missing:
        raise KitError(
            f"{path}: cut short: {len(missing)} member(s) listed in MANIFEST.json are absent"
        )
    doc["_images"] = archives  # {stack: its image archive, checked against MANIFEST.json}
    return doc, files


def _image_bytes(manifest: dict, carried: dict, path) -> int:
    """The bytes of the image archives the recipes say the bundle carries, each listed in
    MANIFEST.json and within the cap (kit.envs.containers.archives.max_bytes)."""
    total = 0
    for name, stack in carried.items():
        if name not in manifest:
            raise KitError(
                f"{path}: the recipe of {stack} says the bundle carries its image, "
                "but MANIFEST.json lists none; refusing the bundle"
            )
        size = manifest[name].size
        if size > max_image():
            raise KitError(
                f"{path}: the image of {stack} is {size / 2**20:,.0f} MiB, above the "
                f"{max_image() / 2**20:,.0f} MiB cap (KIT_BUNDLE_MAX_IMAGE_MIB raises "
                "it); refusing the bundle"
            )
        total += size
    return total


def _spool_image(tar, m, entry, tmp: Path, path) -> Path:
    """An image archive member hashed into a file beside the arrays (checked as an OCI
    archive only when it is to be loaded: kit.envs.containers.archives)."""
    if not m.isfile() or m.size != entry.size:
        raise KitError(
            f"{path}: member {m.name} is not the {entry.size:,} bytes MANIFEST.json lists"
        )
    src, h, size = tar.extractfile(m), hashlib.sha256(), 0
    out = tmp / m.name.replace("/", "-")
    with open(out, "wb") as f:
        while chunk := src.read(_CHUNK):
            h.update(chunk)
            f.write(chunk)
            size += len(chunk)
    _check_sum({m.name: entry}, m.name, h.hexdigest(), size, path)
    return out


def _kind(m: tarfile.TarInfo) -> str | None:
    """What a member that is not a plain file is, in words (None for a plain file): a forged
    bundle's MANIFEST.json as a folder or a link is said as one, not as another member."""
    if m.isfile():
        return None
    target = f" (to {one_line(m.linkname, 80)!r})" if m.linkname else ""
    if m.issym():
        return f"a symbolic link{target}"
    if m.islnk():
        return f"a hard link{target}"
    if m.isdir():
        return "a folder"
    if m.isfifo():
        return "a FIFO"
    if m.isdev():
        return "a device"
    return "not a plain file"


def _member(tar, m, name, path, bound) -> bytes:
    if m is None:
        raise KitError(f"{path}: not a kit bundle ({name} missing)")
    if m.name != name:
        raise KitError(f"{path}: refusing member {one_line(m.name, 80)!r} (expected {name})")
    if kind := _kind(m):
        raise KitError(f"{path}: refusing the bundle: its {name} is {kind}, not a file")
    if m.size > bound:
        raise KitError(
            f"{path}: member {name} is {m.size / 2**20:,.1f} MiB, above the "
            f"{bound / 2**20:,.0f} MiB cap (KIT_BUNDLE_MAX_JSON_MIB raises it); "
            "refusing the bundle"
        )
    data = tar.extractfile(m).read()
    if len(data) != m.size:
        raise KitError(f"{path}: member {name!r} is cut short")
    return data


def _check_sum(manifest, name, sha, size, path):
    entry = manifest.get(name)
    if entry is None or entry.sha256 != sha or entry.size != size:
        raise KitError(f"{path}: checksum mismatch for {name}; the bundle is damaged")


def _spool(tar, m, exp: Expected, entry, tmp: Path, path) -> Path:
    """Check a member's size and .npy header against its run, then hash it into a file."""
    where = f"{path}: run {exp.run[:12]} stage {exp.stage} ({m.name})"
    if kind := _kind(m):
        raise KitError(f"{where}: the member is {kind}, not an array's file")
    if m.size > NPY_HEADER + exp.nbytes:
        raise KitError(
            f"{where}: the member is {m.size:,} bytes; at most "
            f"{NPY_HEADER + exp.nbytes:,} fit what its run recorded"
        )
    src = tar.extractfile(m)
    head = src.read(min(m.size, NPY_HEADER))
    try:
        hlen, shape, fortran, dtype = npy_header(head, NPY_HEADER)
    except ValueError as e:
        raise KitError(f"{where}: is not the array its run recorded ({e})") from None
    why = (
        f"dtype {dtype}, recorded {exp.dtype}"
        if dtype != exp.dtype
        else f"shape {list(shape)}, recorded {list(exp.shape)}"
        if shape != exp.shape
        else "Fortran order, recorded C order"
        if fortran
        else None
    )
    if why:
        raise KitError(f"{where}: is not the array its run recorded ({why})")
    if m.size != hlen + exp.nbytes:
        raise KitError(
            f"{where}: the member is {m.size:,} bytes; its header and the run's dtype "
            f"and shape make {hlen + exp.nbytes:,}"
        )
    whole, body = hashlib.sha256(head), hashlib.sha256(head[hlen:])
    out, size = tmp / f"{m.name[7:]}", len(head)
    with open(out, "wb") as f:
        f.write(head)
        while chunk := src.read(_CHUNK):
            whole.update(chunk)
            body.update(chunk)
            f.write(chunk)
            size += len(chunk)
    if size != m.size:
        raise KitError(f"{where}: the member is cut short")
    _check_sum({m.name: entry}, m.name, whole.hexdigest(), size, path)
    if body.hexdigest() != exp.sha256:  # C-order bytes after the header: the stage hash
        raise KitError(
            f"{where}: is not the array its run recorded (bytes do not match the recorded sha256)"
        )
    return out
