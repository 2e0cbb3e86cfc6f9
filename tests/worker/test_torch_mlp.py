"""The torch stage: device availability, torch factor plans, and the CPU path end to end.

The end-to-end part builds the real Linux CPU torch stack (its lock installs torch 2.13.0+cpu
from /opt/wheels, present on this project's machines) and is skipped where that stack cannot
exist; the CUDA pair is measured by bench/torch_devices.sh on a GPU machine.
"""

import json

import pytest

from kit.cli import main
from kit.core.errors import KitError
from kit.envs.catalogue import definitions
from kit.envs.kinds import stack_kind
from kit.envs.platforms import Platform, detect
from kit.envs.stacks import Stack
from kit.runs.planning.availability import availability, devices
from kit.runs.planning.options import PlanOptions
from kit.runs.planning.plan import plan, required_stacks

D = "d" * 64
MAC = Platform("darwin", "arm64", (14, 5), rosetta=True)
OLD_MAC = Platform("darwin", "arm64", (12, 1))
LINUX = Platform("linux", "x86_64")
GPU_LINUX = Platform("linux", "x86_64", cuda_devices=("GPU 0: NVIDIA H200",))


def fake_get(name):
    return Stack(name, ("python",), "id-" + name, {})


def test_device_reasons():
    assert MAC.device_reason("mps") is None and MAC.device_reason("cpu") is None
    assert "macOS 12.3 or later" in OLD_MAC.device_reason("mps")
    assert "Apple silicon" in LINUX.device_reason("mps")
    assert LINUX.device_reason("cuda").startswith("no CUDA device visible")
    assert GPU_LINUX.device_reason("cuda") is None
    assert devices(LINUX) == {
        "cpu": None,
        "mps": LINUX.device_reason("mps"),
        "cuda": LINUX.device_reason("cuda"),
    }


def test_torch_factor_plans():
    seed = plan("torch-seed", D, PlanOptions(seeds=(0, 1, 2)), plat=LINUX, get=fake_get)
    assert [p.b.seed_dict for p in seed] == [{"init": 1, "shuffle": 1}, {"init": 2, "shuffle": 2}]
    assert all(p.a.kind == "torch" and p.a.stack == "torch-linux-cpu" for p in seed)
    ref = seed[0].a.input
    assert all(s.input == ref for p in seed for s in (p.a, p.b))  # one fixed embedding
    det = plan("torch-deterministic", D, PlanOptions(), plat=LINUX, get=fake_get)
    assert [(p.a.deterministic, p.b.deterministic) for p in det] == [(False, True)]
    mac = plan("torch-device", D, PlanOptions(), plat=MAC, get=fake_get)
    assert {(p.a.device, p.b.device) for p in mac} == {("cpu", "mps")}
    assert all(p.a.stack == "torch-macos" for p in mac)
    gpu = plan("torch-device", D, PlanOptions(device="cuda"), plat=GPU_LINUX, get=fake_get)
    assert {p.b.device for p in gpu} == {"cuda"} and gpu[0].a.stack == "torch-linux-cuda"
    with pytest.raises(KitError, match="device cuda is not available here: no CUDA device"):
        plan("torch-device", D, PlanOptions(), plat=LINUX, get=fake_get)
    with pytest.raises(KitError, match="MPS needs Apple silicon"):
        plan("torch-device", D, PlanOptions(device="mps"), plat=LINUX, get=fake_get)
    assert required_stacks(["torch-seed"], MAC) == ["host", "torch-macos"]


def test_torch_threads_are_capped_at_the_cores():
    from kit.core.processes import cores

    ps = plan("torch-threads", D, PlanOptions(), plat=LINUX, get=fake_get)
    assert [p.b.threads for p in ps] == [t for t in (2, 4, 8) if t <= cores()]


def test_torch_threads_counts_nowhere_offers_are_refused_before_its_stack_is_built():
    """required_stacks, read before any stack is built, refuses torch-threads when where its
    runs go has no count to offer: a cluster's one-core workers (their node class named), or
    this machine's cores (the torch stack was built first, 16-28 s, then the plan refused)."""
    one_core = PlanOptions(cores=1, host="node-a")
    with pytest.raises(
        KitError,
        match=r"the smallest worker of the cluster offers at most 1 "
        r"core\(s\) \(runs go to node class node-a\)",
    ):
        required_stacks(["torch-threads"], LINUX, opts=one_core)
    with pytest.raises(KitError, match=r"needs a thread count from 2 to the \d+ core\(s\) here"):
        required_stacks(["torch-threads"], LINUX, opts=PlanOptions(threads=(1,)))
    two = PlanOptions(cores=2, host="node-a")
    assert required_stacks(["torch-threads"], LINUX, opts=two) == ["host", "torch-linux-cpu"]
    assert [p.b.threads for p in plan("torch-threads", D, two, plat=LINUX, get=fake_get)] == [2]


@pytest.mark.slow
def test_unavailable_torch_devices_and_stacks_say_why():
    rows = {r["factor"]: r for r in availability(LINUX)}
    assert not rows["torch-device"]["available"]
    assert "no CUDA device" in rows["torch-device"]["reason"]
    st, why = stack_kind("torch-linux-cuda").status(LINUX)
    assert st == "unavailable" and "needs an NVIDIA GPU" in why
    assert stack_kind("torch-macos").status(LINUX)[0] == "unavailable"


@pytest.mark.slow
def test_cpu_torch_factors_end_to_end(capsys, tmp_path, monkeypatch):
    st, why = stack_kind("torch-linux-cpu").status(detect())
    if st == "unavailable":
        pytest.skip(f"torch-linux-cpu: {why}")
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "home"))
    argv = [
        "run",
        "--factor",
        "torch-seed,torch-deterministic,torch-threads",
        "--n",
        "200",
        "--seeds",
        "0-2",
        "--json",
        "--yes",
    ]
    assert main(argv) == 0
    rows = {r["factor"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    seed, det = rows["torch-seed"], rows["torch-deterministic"]
    assert seed["pairs"] == 2 and seed["identical"]["torch_mlp"] == 0
    assert seed["models"]["torch_mlp"]["max_dp"] > 0
    # the paper: deterministic algorithms on and off gave identical CPU probabilities
    assert det["identical"]["torch_mlp"] == 1 and det["confounds"] == {}
    assert rows["torch-threads"]["stages"] == ["torch_mlp"]
    assert det["verdicts_changed_max"] is None
    assert main(["runs", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    torch_runs = [r for r in runs if r["spec"]["kind"] == "torch"]
    m = torch_runs[0]["manifest"]
    assert m["env"]["packages"]["torch"].startswith("2.") and m["env"]["torch"]["mkldnn"] in (
        True,
        False,
    )
    assert m["torch_run"]["device"] == "cpu" and m["torch_run"]["first_batch_loss"] > 0
    # the same interpreter registered as an external stack (as a cluster's torch module would be):
    # its own stack id, the same bits, and its torch decides which devices it offers
    from kit.envs import external

    python = str(definitions()["torch-linux-cpu"].venv() / "bin" / "python")
    assert main(["stacks", "add", "site-torch", python]) == 0
    assert "--torch-stack site-torch" in capsys.readouterr().out
    assert (
        main(
            [
                "run",
                "--factor",
                "torch-seed",
                "--seeds",
                "0-1",
                "--n",
                "200",
                "--torch-stack",
                "site-torch",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["runs", "--json"]) == 0
    runs = [
        r
        for r in json.loads(capsys.readouterr().out)
        if r["spec"]["kind"] == "torch"
        and dict(r["spec"]["seeds"])["init"] == 1
        and not r["spec"]["deterministic"]
        and r["spec"]["threads"] == 1
    ]
    by_stack = {r["spec"]["stack"]: r for r in runs}
    assert set(by_stack) == {"torch-linux-cpu", "site-torch"}
    a, b = by_stack["torch-linux-cpu"], by_stack["site-torch"]
    assert a["spec"]["stack_id"] != b["spec"]["stack_id"]
    assert (
        a["manifest"]["stages"]["torch_mlp"]["sha256"]
        == b["manifest"]["stages"]["torch_mlp"]["sha256"]
    )
    assert external.registry()["site-torch"]["facts"]["devices"] == ["cpu"]
    assert (
        main(
            [
                "run",
                "--factor",
                "torch-device",
                "--device",
                "cuda",
                "--n",
                "200",
                "--torch-stack",
                "site-torch",
            ]
        )
        == 1
    )
    assert "device cuda is not available in stack site-torch" in capsys.readouterr().err
