"""RunSpec: everything that defines one pipeline run; its canonical JSON hash is the run's id."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Any, Literal, get_args

from ..worker.pipeline import FEEDS, SEED_NAMES
from ..worker.torch_mlp import SEED_NAMES as TORCH_SEED_NAMES
from . import factors

# each field's values as a type (the strict spec document's, kit.core.documents) and as a tuple
Dtype = Literal["float64", "float32"]
Kind = Literal["pipeline", "torch", "perturb", "feed"]
Device = Literal["cpu", "mps", "cuda"]
Embedding = Literal["randomized", "arpack"]
Process = Literal["", "fresh", "warm"]  # "": whichever the executor uses (warm by default)
DTYPES: tuple[str, ...] = get_args(Dtype)
KINDS: tuple[str, ...] = get_args(Kind)
DEVICES: tuple[str, ...] = get_args(Device)
EMBEDDINGS: tuple[str, ...] = get_args(Embedding)
PROCESSES: tuple[str, ...] = get_args(Process)
# fields added after runs were first stored: left out of the id at their default, so that every
# run stored before them keeps its id (and a bundle from an older kit still verifies)
_LATER_DEFAULTS = {
    "embedding": "randomized",
    "process": "",
    "split": -1,
    "feed": "",
    "pipeline": "",
}

Seeds = tuple[tuple[str, int], ...]  # ((name, value), ...) in the pipeline's order
Env = tuple[tuple[str, str], ...]  # ((variable, value), ...)


def seeds(value: int = 0, **named: int) -> Seeds:
    """All named seeds set to ``value`` (the paper's single "seed"), then any overrides."""
    unknown = set(named) - set(SEED_NAMES)
    if unknown:
        raise ValueError(f"unknown seed name(s): {', '.join(sorted(unknown))}")
    return tuple((k, int(named.get(k, value))) for k in SEED_NAMES)


def torch_seeds(value: int = 0, **named: int) -> Seeds:
    """The torch stage's named seeds: initial weights and batch order."""
    unknown = set(named) - set(TORCH_SEED_NAMES)
    if unknown:
        raise ValueError(f"unknown torch seed name(s): {', '.join(sorted(unknown))}")
    return tuple((k, int(named.get(k, value))) for k in TORCH_SEED_NAMES)


def pipeline_seeds(names: Sequence[str], value: int = 0, **named: int) -> Seeds:
    """A lab pipeline's named seeds (its file's SEEDS, in its order) set to ``value``, then any
    overrides."""
    unknown = set(named) - set(names)
    if unknown:
        raise ValueError(
            f"unknown seed name(s): {', '.join(sorted(unknown))} (the pipeline's "
            f"SEEDS: {', '.join(names) or 'none'})"
        )
    return tuple((k, int(named.get(k, value))) for k in names)


@dataclass(frozen=True)
class RunSpec:
    dataset: str  # dataset sha256
    stack: str  # stack name, e.g. "host"
    stack_id: str  # what the stack really is: lock hash or measured versions
    threads: int = 1
    dtype: str = "float64"
    svd_iters: int = 5
    seeds: Seeds = field(
        default_factory=seeds
    )  # ((name, value), ...): SEED_NAMES, or the file's SEEDS
    env: Env = ()  # extra environment, e.g. (("OPENBLAS_CORETYPE", "Haswell"),)
    replicate: int = 0  # repeats of an otherwise identical run (the null experiment)
    kind: str = "pipeline"  # "pipeline" (every stage), "torch" (the PyTorch MLP alone), ...
    input: str = ""  # torch, perturb, feed: the run whose stored arrays it starts from
    device: str = "cpu"  # torch: cpu | mps | cuda
    deterministic: bool = False  # torch: torch.use_deterministic_algorithms
    host: str = (
        ""  # the machine that ran it (kit.core.hosts): the same spec elsewhere is another run
    )
    perturb: str = ""  # perturb: "noise:EPS:DRAW" or "float32", applied to input's embedding
    embedding: str = "randomized"  # the SVD that k-means, neighbours and the classifiers use
    process: str = ""  # the process factor: a fresh worker process, or a warm one
    # the split seed (seed:split): -1 keeps the dataset's own cut; s >= 0 re-splits the same
    # records: a permutation of them, in the dataset's stored order, from
    # numpy.random.default_rng(s), then the dataset's cut (n_train train, the rest test)
    split: int = -1
    feed: str = ""  # feed: the first stage rerun, on input's stored arrays (FEEDS)
    # a lab's own pipeline (kit.worker.contract), named by the sha256 of its file; "" is kit's
    # built-in one. Its seeds are the file's SEEDS, and its dataset is the same hash: the file
    # reads its own data, so its runs group apart from every dataset's (and every other file's)
    pipeline: str = ""

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, not {self.dtype!r}")
        if self.threads < 1 or self.svd_iters < 1:
            raise ValueError(
                f"threads and svd_iters must be positive, not {self.threads!r} and "
                f"{self.svd_iters!r}"
            )
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {self.kind!r}")
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, not {self.device!r}")
        if self.kind in ("torch", "perturb", "feed") and not self.input:
            raise ValueError(
                f"a {self.kind} run names the run whose embedding it trains on (input)"
            )
        if self.embedding not in EMBEDDINGS:
            raise ValueError(f"embedding must be one of {EMBEDDINGS}, not {self.embedding!r}")
        if self.process not in PROCESSES:
            raise ValueError(f"process must be one of {PROCESSES}, not {self.process!r}")
        if not isinstance(self.split, int) or isinstance(self.split, bool) or self.split < -1:
            raise ValueError(
                f"split must be -1 (the dataset's own cut) or a seed >= 0, not {self.split!r}"
            )
        if self.split >= 0 and self.kind != "pipeline":
            raise ValueError(
                "a split seed re-splits a pipeline run; a torch or perturbed run "
                "trains on its input's split"
            )
        if self.kind == "perturb" and not self.perturb:
            raise ValueError("a perturb run says which perturbation (noise:EPS:DRAW or float32)")
        if (self.kind == "feed") != bool(self.feed) or (self.feed and self.feed not in FEEDS):
            raise ValueError(
                f"a feed run, and only one, names its first stage rerun, one of "
                f"{tuple(FEEDS)} (not {self.feed!r})"
            )

        for pair in self.env:
            if len(pair) != 2 or not all(isinstance(x, str) for x in pair):
                raise ValueError("env holds (variable, value) pairs of strings")
            var, value = pair
            # a spec crosses machines in bundles and the worker's environment is made of it:
            # a variable no factor sets (PYTHONWARNINGS, BROWSER, OMP_NUM_THREADS behind
            # threads=1) would run code or change a run behind its spec
            form = factors.spec_env().get(var)
            if form is None:
                raise ValueError(
                    f"env variable {var[:40]!r} is not one kit sets "
                    f"({', '.join(factors.spec_env())})"
                )
            if not form.fullmatch(value):
                raise ValueError(f"env {var}={value[:40]!r} is not a value kit writes")
        if self.pipeline:
            self._check_pipeline()

    def _check_pipeline(self) -> None:
        if not re.fullmatch(r"[0-9a-f]{64}", self.pipeline) or self.dataset != self.pipeline:
            raise ValueError(
                "a lab pipeline is named by its file's sha256, which is also its runs' dataset"
            )
        if (
            self.kind != "pipeline"
            or self.split >= 0
            or self.feed
            or self.embedding != "randomized"
        ):
            raise ValueError(
                "a lab pipeline's run is a plain pipeline run: its seeds, dtype, "
                "threads and stack vary; kit's own stages' options do not apply"
            )

    def to_json(self) -> str:
        return self._json

    # A spec is frozen, so its JSON and id are made once: a run's id is asked for dozens of
    # times as it is planned, claimed, stored and analysed (asdict alone was ~5% of the
    # driver's CPU per cluster run). Not fields: equality, hashing and replace() ignore them.
    @cached_property
    def _json(self) -> str:
        d = asdict(self)
        for k, v in _LATER_DEFAULTS.items():
            if d[k] == v:
                del d[k]
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    @cached_property
    def run_id(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    @property
    def seed_dict(self) -> dict[str, int]:
        return dict(self.seeds)

    def with_(self, **changes: Any) -> RunSpec:
        return replace(self, **changes)

    def worker_json(self) -> str:
        """The part of the spec the worker acts on (threads and env act through the process)."""
        return json.dumps(
            {
                "kind": self.kind,
                "dtype": self.dtype,
                "svd_iters": self.svd_iters,
                "seeds": self.seed_dict,
                "threads": self.threads,
                "device": self.device,
                "deterministic": self.deterministic,
                "perturb": self.perturb,
                "embedding": self.embedding,
                "feed": self.feed,
                **({"pipeline": self.pipeline} if self.pipeline else {}),
                **({"split": self.split} if self.split >= 0 else {}),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> RunSpec:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunSpec:
        """A spec from its JSON form; a field an older kit did not write takes its default."""
        d = dict(
            d, seeds=tuple(tuple(p) for p in d["seeds"]), env=tuple(tuple(p) for p in d["env"])
        )
        return cls(**d)
