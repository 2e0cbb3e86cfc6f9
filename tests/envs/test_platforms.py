"""kit.envs.platforms: platform keys from injected facts, and detection on this machine."""

from kit.envs.platforms import Platform, detect


def test_keys():
    assert Platform("darwin", "arm64").key == "macos-arm64"
    assert Platform("darwin", "arm64").apple_silicon
    assert Platform("linux", "x86_64").key == "linux-x86_64"
    assert Platform("linux", "aarch64").key == "linux-arm64"
    assert not Platform("darwin", "x86_64").apple_silicon


def test_detect_this_machine():
    p = detect()
    assert p.key in ("linux-x86_64", "linux-arm64", "macos-arm64", "macos-x86_64")
    if p.system == "linux":
        assert not p.rosetta and p.cpu_flags  # /proc/cpuinfo flags were read


def test_cuda_devices_from_the_drivers_proc_listing(tmp_path, monkeypatch):
    """Containers often lack nvidia-smi: the driver's /proc listing still shows the GPUs."""
    from kit.envs.platforms import _cuda_devices

    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi on PATH
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    proc = tmp_path / "gpus"
    assert _cuda_devices(str(proc)) == ()
    (proc / "0000:1b:00.0").mkdir(parents=True)
    (proc / "0000:1b:00.0" / "information").write_text("Model: \t\t NVIDIA H200\nIRQ: 42\n")
    (proc / "0000:2c:00.0").mkdir()
    found = _cuda_devices(str(proc))
    assert found[0].startswith("GPU 0: NVIDIA H200 (PCI 0000:1b:00.0")
    assert found[1].startswith("GPU 1: NVIDIA GPU (PCI 0000:2c:00.0")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # hidden from CUDA: none to use
    assert _cuda_devices(str(proc)) == ()
    assert "CUDA_VISIBLE_DEVICES" in Platform("linux", "x86_64").device_reason("cuda")
