"""A lab's own pipeline file: imported by path, its SEEDS, KINDS and run() checked, outputs hashed.

The contract (docs/pipelines.md): a plain Python file that imports nothing of kit, with
``SEEDS`` (the named seeds, a tuple of names), optionally ``KINDS`` ({output: kind}; an output
not named is an "array"), and ``run(seeds)`` or ``run(seeds, dtype)`` returning
{output name: numpy array} in stage order. This module runs inside a stack's interpreter, so it
uses the standard library and numpy alone and stays Python 3.9-compatible.

Every mistake a user makes in the file is a ContractError of one line; an exception raised by
the pipeline's own code is a PipelineFailed: one line naming its last frame in the file, and the
full traceback for the run's log. Whether a named seed is *used* is checked two ways: here, a
seed ``run`` never reads from its ``seeds`` argument is an error (the value reaches no code); and,
by measurement, a seed that is read but whose variation changes no output is said by the
comparison of ``seed:NAME`` pairs (it may be legitimately inert: a convex model's init), never
here.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import importlib.util
import inspect
import os
import re
import sys
import traceback

import numpy as np

from .dtypes import canonical, output_problem, sha256_of
from .kinds import ID_KINDS, OUTPUT_KINDS, a_kind, control_in, kind_problem, shown, values_problem
from .names import unknown
from .protein_ids import declared_twice, wrong_ids
from .seeds_arg import Seeds, UnknownSeed
from .text import one_line

DTYPES = ("float64", "float32")
# an output is stored as NAME.npy beside the run's manifest: a plain file name, never hidden
# (fullmatch: `$` also matches before a final newline, and "x\n" passed as a plain name)
_OUTPUT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
_RESERVED = ("manifest",)
# a lab names a handful of seeds and outputs; a bundle's file may name millions
MAX_NAMES = 1000


def plain_output_name(key) -> bool:
    """Whether ``key`` is a name a run's output may have (what a bundle's runs are held to too:
    no name a worker refuses reaches a table, a file or a spreadsheet)."""
    return isinstance(key, str) and bool(_OUTPUT_NAME.fullmatch(key)) and key not in _RESERVED


class ContractError(Exception):
    """A pipeline file that does not keep the contract: the message is one line naming the fix."""


class PipelineFailed(Exception):
    """The pipeline's own code raised: ``line`` (one line, its last frame in the file) and
    ``traceback`` (the full text, for the run's log)."""

    def __init__(self, line: str, text: str):
        super().__init__(line)
        self.line = line
        self.traceback = text


class Contract:
    """A loaded pipeline file: its path, sha256, seed names, kinds and run function."""

    def __init__(self, path, name, sha256, seeds, kinds, run, takes_dtype):
        self.path = path
        self.name = name  # the file's name as the user knows it, for messages
        self.sha256 = sha256
        self.seeds = seeds  # tuple of names, in the file's order
        self.kinds = kinds  # {output: kind} as declared (outputs not named: "array")
        self.run = run
        self.takes_dtype = takes_dtype  # run(seeds, dtype): the precision factor applies

    def kind(self, output: str) -> str:
        return self.kinds.get(output, "array")


def file_sha256(path) -> str:
    """The pipeline's identity: the sha256 of its file's bytes (an edited file: a new pipeline)."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# each file imported once per process, by hash: a warm worker's runs share the module as a
# notebook's or a service's calls of run do, so a generator kept at module level carries its
# state from one run to the next and the process factor (fresh vs warm) sees it
_LOADED: dict = {}


def load(path, name=None) -> Contract:
    """Import the pipeline file at ``path`` (under a private module name, once per process and
    file hash) and check its contract; ``name``: the file's name in messages (kit's stored copy
    is named by its hash)."""
    path = os.path.abspath(str(path))
    name = name or os.path.basename(path)
    if not os.path.isfile(path):
        raise ContractError(f"no pipeline file {path}")
    if not path.endswith(".py"):
        raise ContractError(f"{name}: a pipeline is a Python file (.py)")
    sha = file_sha256(path)
    c = _LOADED.get(sha)
    if c is None:
        c = _LOADED[sha] = _import(path, name, sha)
    return Contract(c.path, name, sha, c.seeds, c.kinds, c.run, c.takes_dtype)


def _import(path, name, sha) -> Contract:
    spec = importlib.util.spec_from_file_location("kit_user_pipeline_" + sha[:16], path)
    assert spec is not None and spec.loader is not None  # a path ending .py always has both
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look their module up by name
    try:
        with _as_script(path):
            spec.loader.exec_module(module)
    except BaseException as e:  # noqa: BLE001
        # the file raised while imported (SyntaxError, sys.exit, KeyboardInterrupt too: no Ctrl-C of
        # kit reaches a worker)
        del sys.modules[spec.name]
        raise _failed(e, path, name, "importing it") from None
    seeds = check_seeds(name, getattr(module, "SEEDS", None))
    kinds = check_kinds(name, getattr(module, "KINDS", {}))
    run = getattr(module, "run", None)
    if run is None:
        raise ContractError(
            f"{name}: no run function: define run(seeds) returning {{output name: numpy array}}"
        )
    if not callable(run):
        raise ContractError(
            f"{name}: run is a {type(run).__name__}, not a function: define "
            f"run(seeds) returning {{output name: numpy array}}"
        )
    return Contract(path, name, sha, seeds, kinds, run, _takes_dtype(name, run))


def call(c: Contract, seeds: dict, dtype: str = "float64") -> dict:
    """Call the pipeline with ``seeds`` ({name: int}, every name of SEEDS) and check what it
    returns: {output name: C-contiguous numpy array}, in the order run returned them."""
    name = c.name
    if set(seeds) != set(c.seeds):
        raise ContractError(
            f"{name}: seeds given ({', '.join(map(shown, sorted(seeds)))}) are "
            f"not SEEDS ({', '.join(map(shown, c.seeds))})"
        )
    if dtype not in DTYPES:
        raise ContractError(f"dtype must be one of {DTYPES}, not {dtype!r}")
    if dtype != "float64" and not c.takes_dtype:
        raise ContractError(
            f"{name}: run(seeds) takes no dtype: define run(seeds, dtype) for the precision factor"
        )
    given = Seeds((k, int(seeds[k])) for k in c.seeds)
    try:
        with _as_script(c.path):
            got = c.run(given, dtype) if c.takes_dtype else c.run(given)
    except UnknownSeed as e:
        raise ContractError(
            unknown(
                f"{name}: run read seeds[",
                e.name,
                c.seeds,
                f" (SEEDS: {', '.join(map(shown, c.seeds)) or 'none'})",
                "], which SEEDS does not name",
            )
        ) from None
    except BaseException as e:  # noqa: BLE001
        # a sys.exit, argparse's exit or a KeyboardInterrupt the pipeline raised itself (kit's
        # Ctrl-C never reaches a worker: it runs in a session of its own) ends the run, not the
        # worker
        raise _failed(e, c.path, name, "in run") from None
    unread = [k for k in c.seeds if k not in given.read]
    if unread:
        raise ContractError(
            f"{name}: SEEDS names {', '.join(map(shown, unread))} but run never "
            f"reads seeds[{shown(unread[0])}]: use it or remove it from SEEDS"
        )
    out = check_outputs(name, got, c.kinds)
    floats = [k for k, a in out.items() if a.dtype.kind == "f"]
    if dtype != "float64" and floats and not any(out[k].dtype == np.dtype(dtype) for k in floats):
        raise ContractError(
            f"{name}: run(seeds, dtype={dtype!r}) returned no {dtype} output "
            f"({', '.join(f'{k} {out[k].dtype}' for k in floats[:3])}): the "
            f"precision factor needs run to compute in dtype"
        )
    return out


def check_outputs(name: str, got, kinds: dict) -> dict:
    """What run returned, checked: {output: array} with plain names, arrays of numbers (or
    text) of a dtype kit stores (kit.worker.dtypes), each in its canonical form."""
    if not isinstance(got, dict):
        raise ContractError(
            f"{name}: run returned a {type(got).__name__}, not a dict {{output name: numpy array}}"
        )
    if not got:
        raise ContractError(f"{name}: run returned no outputs")
    out = {}
    for key, a in got.items():
        _refuse_control(name, "output name", key)
        if not plain_output_name(key):
            raise ContractError(
                f"{name}: output name {shown(key)} is not a plain name "
                f"(letters, digits, _ . -; not 'manifest')"
            )
        if not isinstance(a, np.ndarray):
            raise ContractError(
                f"{name}: output {shown(key)} is a {type(a).__name__}, not a "
                f"numpy array (return np.asarray(...))"
            )
        if a.dtype.hasobject:
            raise ContractError(
                f"{name}: output {shown(key)} has object dtype: return an array "
                f"of numbers (or fixed-width strings), e.g. .astype(float)"
            )
        why = output_problem(a.dtype)
        # ids too wide are said by protein_ids, in a protein id's words
        if why and not (a.dtype.kind in "US" and kinds.get(key) in ID_KINDS):
            raise ContractError(f"{name}: output {shown(key)} is {why}")
        _check_kind(name, key, a, kinds.get(key, "array"))
        out[key] = canonical(a)  # stored as its values: the one form, whatever the view
    missing = [k for k in kinds if k not in out]
    if missing:
        raise ContractError(
            unknown(
                f"{name}: KINDS names",
                missing[0],
                out,
                f" (it returned {', '.join(map(shown, out))})",
                ", which run did not return",
            )
        )
    wrong = wrong_ids(out, kinds)
    if wrong:
        raise ContractError(f"{name}: {wrong}")
    return out


def stages(arrays: dict) -> dict:
    """Each output as kit records a stage: sha256 of its C-contiguous bytes, dtype and shape."""
    out = {}
    for key, a in arrays.items():
        a = np.ascontiguousarray(a)
        out[key] = {"sha256": sha256_of(a), "dtype": a.dtype.str, "shape": list(a.shape)}
    return out


def check_seeds(name, seeds) -> tuple:
    """SEEDS as the contract wants it: a tuple (or list) of distinct plain names."""
    if seeds is None:
        raise ContractError(
            f"{name}: no SEEDS: name the pipeline's seeds, e.g. "
            f'SEEDS = ("split", "init") (or SEEDS = () if it draws none)'
        )
    if isinstance(seeds, str) or not isinstance(seeds, (tuple, list)):
        raise ContractError(
            f"{name}: SEEDS is a {type(seeds).__name__}, not a tuple of names, "
            f'e.g. SEEDS = ("split", "init")'
        )
    if len(seeds) > MAX_NAMES:
        raise ContractError(f"{name}: SEEDS names {len(seeds)} seeds: at most {MAX_NAMES}")
    for s in seeds:
        _refuse_control(name, "seed name", s, " in SEEDS")
        if not isinstance(s, str) or not s.isidentifier():
            raise ContractError(
                f"{name}: seed name {shown(s)} in SEEDS is not a plain name (letters, digits, _)"
            )
    dup = sorted(s for s, n in collections.Counter(seeds).items() if n > 1)
    if dup:
        raise ContractError(f"{name}: SEEDS names {shown(dup[0])} twice")
    return tuple(seeds)


def check_kinds(name, kinds) -> dict:
    """KINDS as the contract wants it: {output: one of OUTPUT_KINDS}."""
    if not isinstance(kinds, dict):
        raise ContractError(
            f"{name}: KINDS is a {type(kinds).__name__}, not a dict {{output: kind}}"
        )
    if len(kinds) > MAX_NAMES:
        raise ContractError(f"{name}: KINDS names {len(kinds)} outputs: at most {MAX_NAMES}")
    for out, kind in kinds.items():
        _refuse_control(name, "output name", out, " in KINDS")
        if not isinstance(out, str):
            raise ContractError(
                f"{name}: KINDS names the output {shown(out)}, not a string "
                f"(a {type(out).__name__}): an output's name is a string"
            )
        if kind not in OUTPUT_KINDS:
            raise ContractError(
                unknown(
                    f"{name}: KINDS[{shown(out)}] is",
                    kind,
                    OUTPUT_KINDS,
                    f", not a kind: one of {', '.join(OUTPUT_KINDS)}",
                )
            )
    twice = declared_twice(kinds)
    if twice:
        raise ContractError(f"{name}: {twice}")
    return dict(kinds)


def _refuse_control(name, what: str, value, where: str = "") -> None:
    """A declared name holding a control character, refused naming it (quoted: the message
    stays one line whatever the name holds)."""
    c = control_in(value)
    if c is not None:
        raise ContractError(
            f"{name}: {what} {shown(value)}{where} holds the control character "
            f"{c!r}: a name is printable text"
        )


def _takes_dtype(name, run) -> bool:
    try:
        params = list(inspect.signature(run).parameters.values())
    except (TypeError, ValueError):  # a builtin or C function: called as run(seeds)
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    keyword = [p for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    # the precision factor's dtype is a second parameter named so: any other (n_rows=5) is
    # the lab's own, left at its default
    dtype = len(positional) >= 2 and positional[1].name == "dtype"
    if len(required) > 1 + dtype or keyword or not (positional or varargs):
        raise ContractError(
            f"{name}: run takes {len(required) + len(keyword)} required "
            f"arguments: define run(seeds) or run(seeds, dtype)"
        )
    return dtype


def _check_kind(name, key, a, kind):
    """What a kind needs of its array for its comparison to mean anything."""
    why = kind_problem(kind, a.ndim, a.dtype.kind)
    if why:
        raise ContractError(
            f"{name}: output {shown(key)} is {a_kind(kind)} output but is "
            f"{a.ndim}-d {a.dtype}: it must be {why}"
        )
    why = values_problem(kind, a)
    if why:  # its shape and dtype are right: what is wrong is values, and they are named
        raise ContractError(f"{name}: output {shown(key)} ({kind}): {why}")


@contextlib.contextmanager
def _as_script(path):
    """sys.argv as when the file is run as a script: a pipeline that parses its arguments
    (argparse at import) must not read the worker's own --serve or --spec."""
    saved, sys.argv = sys.argv, [path]
    try:
        yield
    finally:
        sys.argv = saved


def _failed(e: BaseException, path: str, name: str, where: str | None) -> PipelineFailed:
    """One line for an exception the pipeline raised: its last frame in the pipeline file
    (the line the user edits; the innermost frame may be a library's), and the full text."""
    text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    frames = traceback.extract_tb(e.__traceback__)
    mine = [f for f in frames if os.path.abspath(f.filename) == path]
    if isinstance(e, SyntaxError) and e.filename and os.path.abspath(e.filename) == path:
        at = f"{name}:{e.lineno}"
    elif mine:
        f = mine[-1]
        code = f" `{f.line.strip()}`" if f.line else ""
        at = f"{name}:{f.lineno} in {f.name}{code}"
        # the frame that raised is run itself: "(in run, at mine.py:4 in run)" says it twice
        where = None if where == f"in {f.name}" else where
    else:
        at = name
    try:  # every line of it: "shape mismatch:" alone said nothing of the shapes
        msg = one_line(str(e))
    except Exception:  # noqa: BLE001
        # its __str__ raised: the type and the place still say what happened
        msg = "(its message could not be read: str() of it raised)"
    # kit imports its copy kept by hash: a helper module or a data file beside the user's file
    # is not beside the copy
    copy = isinstance(e, (ImportError, FileNotFoundError)) and os.path.basename(path) != name
    raised = type(e).__name__
    if isinstance(e, KeyboardInterrupt):  # not kit's Ctrl-C: the worker has a session of its own
        raised += " itself (an interrupt from inside the pipeline, not a Ctrl-C of kit)"
    raised += f": {msg}" if msg else ""
    at_where = f"({where}, at {at})" if where else f"(at {at})"
    hint = (
        (
            "; it runs from kit's copy kept by its hash, so keep it one self-contained file and "
            "read data by absolute path"
        )
        if copy
        else ""
    )
    return PipelineFailed(f"the pipeline raised {raised} {at_where}{hint}", text)
