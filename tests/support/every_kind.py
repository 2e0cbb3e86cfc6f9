"""One small real store holding every kind of run and factor this platform can run.

Every reader (budget, verdicts, advise, report, amplify, runs, export, compare, doctor) and
every TUI tab is tested on it (tests/cli/test_read.py, tests/tui/test_app.py). A new kind of run
or factor joins ``build`` below, and then every reader is tested on it too.

What it holds, at 120 synthetic proteins: the null experiment; seeds and each named seed;
the split seed (seed:split);
threads (where there are two cores); precision; svd-iters and svd-solver; perturb; the
cross-stack factors `sklearn` and `arch` (two real uv-built stacks of a small catalogue);
the torch factors (the real CPU torch stack, where its wheel folder exists); the container and
os factors (np1-sk152's venv against its image, and its images on Debian bookworm and trixie,
where podman and debootstrap work); a lab's own
pipeline file (tests/support/pipelines/lab.py: repeat, seed:split, seed:init), one that declares
every output kind (tests/support/pipelines/every_output.py), and a protein
pipeline read under homology (tests/support/pipelines/proteins.py); and a bundle
made in another KIT_HOME (another host), compared here with `kit compare`: `host` pairs of
imported runs; where containers work, that host's container pair exported with its image and
rerun here in the loaded image (`kit compare --trust-image`: runs on NAME@bundle-ID12).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
from places import PIPELINES, ROOT

from kit.cli import main

N = "120"
PIPELINE_STACKS = ("np1-sk152", "np1-sk191")


def catalogue(folder: Path) -> Path:
    """A stacks folder with two small pipeline stacks, an arch code path and the torch stacks."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in PIPELINE_STACKS + ("torch-linux-cpu",):
        shutil.copytree(ROOT / "stacks" / name, folder / name, dirs_exist_ok=True)
    entries = "".join(
        f'[stack.{n}]\nlock = "{n}"\npython = "3.12"\nnumpy = "1.26.4"\n'
        f'scikit-learn = "{n[-3]}.{n[-2]}.{n[-1]}"\n'
        f'blas = {{ linux-x86_64 = "OpenBLAS", macos-arm64 = "OpenBLAS" }}\n\n'
        for n in PIPELINE_STACKS
    )
    a, b = PIPELINE_STACKS
    text = (
        f'reference = "{b}"\n\n{entries}'
        f'[pairs.sklearn]\nlinux-x86_64 = [["{a}", "{b}"]]\nmacos-arm64 = [["{a}", "{b}"]]\n\n'
        f"[pairs.arch]\nmacos-arm64 = []\n\n"
        f'[codepaths.linux-x86_64.openblas]\nstack = "{b}"\nvariable = "OPENBLAS_CORETYPE"\n'
        'values = ["Prescott", "Sandybridge", "Haswell"]\n'
        'needs = { Sandybridge = "avx", Haswell = "avx2" }\n\n'
        '[stack.torch-linux-cpu]\nkind = "torch"\nlock = "torch-linux-cpu"\npython = "3.11"\n'
        'numpy = "2.3.5"\ntorch = "2.13.0+cpu"\ndevices = ["cpu"]\nneeds_path = "/opt/wheels"\n'
        'blas = { linux-x86_64 = "OpenBLAS" }\n\n'
        '[torch]\nlinux-x86_64 = "torch-linux-cpu"\n'
    )
    (folder / "stacks.toml").write_text(text)
    return folder


def _fixed_host(home: Path, name: str) -> None:
    """A host id fixed in advance, so run ids (and every output naming them) are the same in
    every build of this store (tests/scenarios/test_reading_every_output.py compares them with saved
    copies)."""
    home.mkdir(parents=True, exist_ok=True)
    ident = {"home": "e0e0e0e0e0e0e0e0", "lab": "1ab01ab01ab01ab0"}[name]
    (home / "host.json").write_text(json.dumps({"id": ident, "name": f"every-kind-{name}"}))


@contextmanager
def two_node_classes(names, env=None):
    """A Dask scheduler and one one-core worker per node class in ``names`` (its KIT_NODE_CLASS,
    as a lab sets it; ``env``: {class: more of its environment}), on loopback; its address."""
    from distributed import Nanny, Scheduler, SpecCluster

    workers = {
        c: {
            "cls": Nanny,
            "options": {
                "env": {"KIT_NODE_CLASS": c, **(env or {}).get(c, {})},
                "nthreads": 1,
                "resources": {"cores": 1},
                "host": "127.0.0.1",
                "preload": ["kit.runs.executing.node_classes"],
            },
        }
        for c in names
    }
    environ = dict(os.environ)  # the nannies set PYTHONHASHSEED here, as DaskExecutor knows
    try:
        # the scheduler's HTTP server listens even without a dashboard: on a free port, not 8787
        with SpecCluster(
            workers=workers,
            scheduler={
                "cls": Scheduler,
                "options": {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"},
            },
            silence_logs=50,
        ) as cluster:
            yield cluster.scheduler_address
    finally:
        os.environ.clear()
        os.environ.update(environ)


def _kit(*argv, code=0):
    got = main(list(argv))
    assert got == code, f"kit {' '.join(argv)} exited {got}"


def _protein_pipeline(root: Path, mp) -> str:
    """Runs tests/support/pipelines/proteins.py (repeat, seed:split) on the store's synthetic
    proteins, written as the TSV it reads; its sha256."""
    from kit.data.dataset import load_dataset

    ds = load_dataset("synthetic", int(N), generate=False)
    tsv = root / "proteins.tsv"
    tsv.write_text(
        "accession\tsequence\tlabel\n"
        + "".join(
            f"{a}\t{s}\t{int(y)}\n" for a, s, y in zip(ds.ids, ds.seqs, ds.labels, strict=True)
        )
    )
    mp.setenv("KIT_TEST_PROTEINS", str(tsv))
    path = PIPELINES / "proteins.py"
    _kit(
        "run",
        "--pipeline",
        str(path),
        "--factor",
        "repeat,seed:split",
        "--threads",
        "1",
        "--seeds",
        "0-1",
        "--jobs",
        "2",
    )
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(root: Path, images: Path | None = None) -> dict:
    """Fill ``root/home`` (and a lab's ``root/lab``); returns what it holds. ``images``: a
    KIT_HOME whose stack images (tests/support/containers.py) the container factors run in."""
    from kit.envs.kinds import stack_kind
    from kit.envs.platforms import detect

    home, lab = root / "home", root / "lab"
    held = {"home": home, "factors": [], "torch": False, "stacks": False, "threads": False}
    _fixed_host(home, "home")
    _fixed_host(lab, "lab")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_STACKS_DIR", str(catalogue(root / "catalogue")))
        mp.setenv("KIT_HOME", str(home))
        # the same environment in every build, whatever an earlier test left in this process
        mp.delenv("PYTHONHASHSEED", raising=False)
        common = ("--n", N, "--jobs", "2")
        _kit(
            "run",
            "--factor",
            "repeat,process,seed,seed:svd,seed:kmeans,seed:models,precision",
            "--threads",
            "1",
            "--seeds",
            "0-2",
            *common,
        )
        held["factors"] += [
            "repeat",
            "process",
            "seed",
            "seed:svd",
            "seed:kmeans",
            "seed:models",
            "precision",
        ]
        if (os.cpu_count() or 1) >= 2:
            _kit("run", "--factor", "threads", "--threads", "1,2", *common)
            held["factors"].append("threads")
            held["threads"] = True
        # the split seed: the same proteins re-split, training seeds fixed (changes what is measured)
        _kit("run", "--factor", "seed:split", "--threads", "1", "--seeds", "0-2", *common)
        held["factors"].append("seed:split")
        _kit(
            "run",
            "--factor",
            "svd-iters,svd-solver",
            "--threads",
            "1",
            "--seeds",
            "0-1",
            "--iters",
            "5,20",
            *common,
        )
        _kit("run", "--factor", "perturb", "--eps", "0,1e-9,1e-3", "--seeds", "0", *common)
        held["factors"] += ["svd-iters", "svd-solver", "perturb"]
        # kit explain's cross-fed runs (kind feed) of the precision pairs: every reader must
        # leave them out of what they count, and the report and advice read them back
        _kit("explain", "precision", "--yes", "--n", N)
        held["explained"] = ["precision"]
        # runs made on a Dask cluster of two node classes, 0 and 1 (two workers of this machine
        # named as two node types): a host pair whose manifests carry the node they ran on
        with two_node_classes(("0", "1")) as address:
            _kit("run", "--factor", "host", "--hosts", "0,1", "--cluster", address, *common)
        held["factors"].append("host")
        plat = detect()
        if stack_kind(PIPELINE_STACKS[0]).status(plat)[0] != "unavailable":
            _kit("run", "--factor", "sklearn,arch", "--threads", "1", "--yes", *common)
            held["factors"] += ["sklearn", "arch"]
            held["stacks"] = True
        if images is not None and held["stacks"]:
            from containers import STACK, share

            share(images, home)
            _kit(
                "run",
                "--factor",
                "container,os",
                "--stack",
                STACK,
                "--threads",
                "1",
                "--yes",
                *common,
            )
            held["factors"] += ["container", "os"]
            held["containers"] = True
        if stack_kind("torch-linux-cpu").status(plat)[0] != "unavailable":
            _kit(
                "run",
                "--factor",
                "torch-seed,torch-deterministic",
                "--seeds",
                "0-1",
                "--yes",
                *common,
            )
            held["factors"] += ["torch-seed", "torch-deterministic"]
            if held["threads"]:
                _kit("run", "--factor", "torch-threads", "--yes", *common)
                held["factors"].append("torch-threads")
            held["torch"] = True
        # a pipeline declaring every output kind (tests/support/pipelines/every_output.py), stored
        # before lab.py's so that every reader compares each kind and lab.py stays the last
        # pipeline run: its null experiment, both named seeds, and threads for its tolerances
        every = PIPELINES / "every_output.py"
        _kit(
            "run",
            "--pipeline",
            str(every),
            "--factor",
            "repeat,seed:split,seed:init,threads",
            "--threads",
            "1,2",
            "--seeds",
            "0-1",
            "--jobs",
            "2",
        )
        held["every_output"] = hashlib.sha256(every.read_bytes()).hexdigest()
        # a lab's own pipeline file (tests/support/pipelines/lab.py, one deliberately unseeded
        # output): its null experiment and each named seed; its runs are read with --pipeline and
        # must never reach kit's own readers of a dataset
        # (exit 1: its runs are stored, and its null experiment finds the loose generator)
        _kit(
            "run",
            "--pipeline",
            str(PIPELINES / "lab.py"),
            "--factor",
            "repeat,seed:split,seed:init",
            "--threads",
            "1",
            "--seeds",
            "0-1",
            "--jobs",
            "2",
            code=1,
        )
        # and an environment factor, which `kit tolerances --pipeline` reads
        _kit(
            "run",
            "--pipeline",
            str(PIPELINES / "lab.py"),
            "--factor",
            "threads",
            "--threads",
            "1,2",
            "--seeds",
            "0-1",
            "--jobs",
            "2",
            code=1,
        )
        held["pipeline"] = hashlib.sha256((PIPELINES / "lab.py").read_bytes()).hexdigest()
        # another machine's runs (another KIT_HOME is another host id), compared here
        mp.setenv("KIT_HOME", str(lab))
        _kit("run", "--factor", "seed", "--threads", "1", "--seeds", "0-1", *common)
        _kit("export", "--out", str(root / "lab.kit"), "--arrays")
        mp.setenv("KIT_HOME", str(home))
        _kit("compare", str(root / "lab.kit"))
        if held.get("containers"):
            # the lab's container pair exported with its image, rerun here in that image
            # (kit compare --trust-image): runs on a loaded stack, NAME@bundle-ID12
            from containers import STACK, share

            mp.setenv("KIT_HOME", str(lab))
            share(images, lab)
            _kit(
                "run", "--factor", "container", "--stack", STACK, "--threads", "1", "--yes", *common
            )
            image_bundle = root / "lab-image.kit"
            _kit("export", "--out", str(image_bundle), "--factor", "container", "--image")
            mp.setenv("KIT_HOME", str(home))
            _kit("compare", str(image_bundle), "--trust-image", "--yes")
            image_bundle.unlink()  # hundreds of MB: the runs and the loaded image are what count
            held["loaded"] = True
        # homology clusters of the dataset (MMseqs2): every reader then shows the cluster
        # bootstrap and the leakage split beside what it showed before
        _kit("data", "homology", "synthetic", "--n", N)
        held["homology"] = True
        # a lab's protein pipeline (tests/support/pipelines/proteins.py) on the store's own
        # proteins: its protein ids map into the clustering above, so `kit homology --pipeline`
        # reads it
        held["proteins"] = _protein_pipeline(root, mp)
    held["catalogue"] = root / "catalogue"
    held["bundle"] = root / "lab.kit"
    return held
