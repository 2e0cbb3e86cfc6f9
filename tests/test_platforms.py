"""kit.platforms: platform keys from injected facts, and detection on this machine."""

from kit.platforms import Platform, detect


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
