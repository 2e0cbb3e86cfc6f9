"""A lab pipeline's file in a bundle: carried for what it declares (KINDS, SEEDS), read, never run.

A pipeline's runs mean what its KINDS say (which output is the truth, which are probabilities,
which hold protein ids), so a bundle carries the file its runs were made with. The importer
takes nothing of it on trust: the bytes must hash to the runs' pipeline, and what they declare
is read here as kit reads any pipeline file (kit.data.pipelines.declared: literals, never
executed). Only the declarations are kept (in the store's summary of the pipeline); the file is
not kept where a worker would import it: running a collaborator's code takes their file from
the user (`kit compare BUNDLE --pipeline FILE.py`), never from a bundle.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

import numpy as np

from ..core.errors import KitError
from ..core.spec import RunSpec
from ..data.pipelines import LabData, declared, pipeline_file, pipeline_info, present
from ..worker.kinds import ID_KINDS, kind_problem, shown
from ..worker.protein_ids import wrong_ids

MAX_FILE = 4 * 2**20  # a pipeline file is code: 4 MiB of it is already far more
SHA256 = re.compile(r"^[0-9a-f]{64}$")


def carried(shas) -> dict:
    """{sha: {"name", "source" (base64)}} of the pipelines among ``shas`` whose verified file
    this KIT_HOME holds (a pipeline known here only from a bundle has none to carry)."""
    out = {}
    for sha in sorted(set(shas)):
        if present(sha):
            out[sha] = {
                "name": pipeline_info(sha)["name"],
                "source": base64.b64encode(pipeline_file(sha).read_bytes()).decode(),
            }
    return out


def declarations(doc: dict, path) -> dict:
    """{sha: what the pipeline declares} for each pipeline of the bundle's runs whose file it
    carries (checked: it hashes to the runs' pipeline and parses) or this KIT_HOME holds.
    KitError, one line, for a carried file that is not its runs' pipeline."""
    labs = {r["spec"].get("pipeline") for r in doc["runs"]} - {None, ""}
    files = doc.get("pipelines", {})
    if not isinstance(files, dict):
        raise KitError(f"{path}: bundle.json is malformed (pipelines)")
    out = {}
    for sha, got in files.items():
        out[sha] = _declared(sha, got, labs, path)
    for sha in labs - set(out):
        if present(sha):  # this KIT_HOME's own verified copy of the same bytes
            info = pipeline_info(sha)
            out[sha] = {
                "name": info.get("name", sha[:12]),
                "seeds": info.get("seeds", []),
                "kinds": info.get("kinds", {}),
                "dtype": bool(info.get("dtype")),
                "requires": info.get("requires", []),
            }
    return out


def _declared(sha, got, labs, path) -> dict:
    where = f"{path}: the bundle's pipeline file {str(sha)[:12]}"
    if not (isinstance(sha, str) and SHA256.fullmatch(sha)) or sha not in labs:
        raise KitError(f"{where} is no pipeline of its runs; refusing the bundle")
    name = got.get("name") if isinstance(got, dict) else None
    source = got.get("source") if isinstance(got, dict) else None
    if not (isinstance(name, str) and isinstance(source, str) and set(got) == {"name", "source"}):
        raise KitError(f"{where} is malformed (name and source)")
    if not (
        name.endswith(".py")
        and 3 < len(name) <= 255
        and name.isprintable()
        and not set(name) & set("/\\")
    ):
        raise KitError(f"{where} has a name that is not a plain .py file name")
    if len(source) > MAX_FILE * 4 // 3 + 4:
        raise KitError(f"{where} is over {MAX_FILE // 2**20} MiB: not a pipeline file")
    try:
        data = base64.b64decode(source, validate=True)
    except (binascii.Error, ValueError):
        raise KitError(f"{where} is not base64") from None
    if hashlib.sha256(data).hexdigest() != sha:
        raise KitError(f"{where} does not hash to its runs' pipeline; refusing the bundle")
    try:
        info = declared(name, data)
    except KitError as e:
        raise KitError(f"{path}: {e}") from None
    return {"name": name, **info}


def check_runs(doc: dict, found: dict, path) -> None:
    """Each run of a carried pipeline as its file declares: the named seeds, every output
    KINDS names (the worker refuses a run without one)."""
    for r in doc["runs"]:
        info = found.get(r["spec"].get("pipeline"))
        if info is None:
            continue
        name = f"{path}: run {r['id'][:12]}"
        if sorted(RunSpec.from_dict(r["spec"]).seed_dict) != sorted(info["seeds"]):
            raise KitError(
                f"{name}'s seeds are not the ones its pipeline file names "
                f"({', '.join(info['seeds'])})"
            )
        lacking = [k for k in info["kinds"] if k not in r["stages"]]
        if lacking:
            raise KitError(
                f"{name} lacks output {shown(lacking[0])}, which its pipeline file's KINDS names"
            )
        rows = {
            v: r["stages"][k]["shape"][:1]
            for k, v in info["kinds"].items()
            if v in ("proteins", "truth")
        }
        if len(rows) == 2 and rows["proteins"] != rows["truth"]:
            raise KitError(f"{name}: its protein ids are not one per truth row")


def kind_mismatch(dtype: str, shape: list, kind: str) -> str | None:
    """Why a lab's stage (a plain number or text type) is not what its ``kind`` needs, as the
    worker checks it: the readers compare by kind and must not fail on a forged one."""
    why = kind_problem(kind, len(shape), np.dtype(dtype).kind)
    return f"is declared {kind} by its pipeline's file, which must be {why}" if why else None


def check_ids(doc: dict, files: dict, found: dict, path) -> None:
    """The protein ids of a bundle's runs as the worker checks them (kit.worker.protein_ids:
    distinct, one per truth row, no test protein among the train proteins), read from the
    verified members: a forged leakage split would otherwise read as homologs."""
    for r in doc["runs"]:
        kinds = (found.get(r["spec"].get("pipeline")) or {}).get("kinds", {})
        keys = [k for k, v in kinds.items() if v in ID_KINDS or v == "truth"]
        if not any(kinds[k] in ID_KINDS for k in keys) or not all(
            r["blobs"][k] in files for k in keys
        ):
            continue  # no ids, or a hashes-only bundle: nothing to read or analyse
        out = {k: np.load(files[r["blobs"][k]], allow_pickle=False) for k in keys}
        why = wrong_ids(out, {k: kinds[k] for k in keys})
        if why:
            raise KitError(f"{path}: run {r['id'][:12]}: {why}; refusing the bundle")


def summary(sha: str, info: dict) -> dict:
    """The store's summary of a bundle's pipeline known only by its carried file: what the
    file declares, which readers read as they read pipeline_info's."""
    data = LabData({"sha256": sha, **info}).summary()
    return {
        **data,
        "seeds": list(info["seeds"]),
        "kinds": dict(info["kinds"]),
        "dtype": bool(info["dtype"]),
        "declared_by": "the bundle's file (read, not kept)",
    }
