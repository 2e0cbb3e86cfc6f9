"""kit.envs.build_time: how long building stacks will take, from their lock files' wheel sizes
at a rate measured here: a wheel downloaded now from a real local HTTP server, or this
machine's earlier builds (tests/envs/kinds/test_catalogue.py builds real ones)."""

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kit.envs import build_time
from kit.envs.build_time import Estimate, estimate, probe_rate, said
from kit.envs.kinds import stack_kind
from kit.envs.platforms import detect

WHEEL = b"\x00" * (3 * 2**20)  # 3 MiB: within PROBE_BYTES


@pytest.fixture
def index():
    """A local server of one wheel at /fast.whl, and one that drips at /slow.whl."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(WHEEL)))
            self.end_headers()
            if self.path == "/slow.whl":
                for k in range(0, len(WHEEL), 2**16):
                    self.wfile.write(WHEEL[k : k + 2**16])
                    time.sleep(0.2)
            else:
                self.wfile.write(WHEEL)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_rate_is_a_wheel_downloaded_now(index):
    rate, how = probe_rate([(f"{index}/small.whl", 1000), (f"{index}/fast.whl", len(WHEEL))])
    assert rate > 0 and how.startswith(
        "the download rate measured now (a 3 MB wheel from 127.0.0.1:"
    )
    assert probe_rate([(f"{index}/tiny.whl", 1000)]) == (
        None,
        "no wheel of 2 to 16 MiB in their lock files to measure the rate with",
    )


def test_a_network_slower_than_the_probe_allows_is_said_not_waited_for(index, monkeypatch):
    monkeypatch.setattr(build_time, "PROBE_S", 0.5)
    start = time.monotonic()
    rate, how = probe_rate([(f"{index}/slow.whl", len(WHEEL))])
    assert rate is None and how.startswith("slower than 6.0 MB/s: a 3 MB wheel from 127.0.0.1:")
    assert time.monotonic() - start < 5


def test_the_estimate_is_the_lock_files_sizes_at_the_measured_rate(index):
    """The catalogue's own stacks (not built in this test's KIT_HOME), their sizes from uv.lock."""
    plat = detect()
    kinds = [stack_kind(n) for n in ("np1-sk152", "np2-sk191")]
    if any(k.download_bytes(plat) is None for k in kinds):
        pytest.skip(f"no wheels of these stacks for {plat.key}")
    e = estimate(
        kinds,
        plat,
        measure=lambda wheels: (
            probe_rate([(f"{index}/fast.whl", len(WHEEL))])[0] if wheels else None,
            "measured",
        ),
    )
    assert e.total == sum(k.download_bytes(plat) for k in kinds) > 100 * 2**20
    first, second = said(e)
    assert first == "2 stacks to build: " + ", ".join(
        f"{k.name} ({k.download_bytes(plat) / 2**20:,.0f} MB)" for k in kinds
    )
    assert (
        second.startswith(
            f"{e.total / 2**20:,.0f} MB of wheels (their uv.lock files): an estimate of about "
        )
        and f"at {e.rate / 2**20:.1f} MB/s, measured" in second
    )


def test_nothing_to_build_and_no_rate_are_said():
    assert said(estimate([], detect())) == ["every stack available here is built: nothing to build"]
    e = Estimate((("a", 2**20),), None, "the rate could not be measured (offline)")
    assert said(e)[1] == (
        "1 MB of wheels (their uv.lock files); time not estimated: the rate "
        "could not be measured (offline)"
    )
    e = Estimate((("a", 2**20), ("b", None)), 2**20, "measured")
    assert said(e) == [
        "2 stacks to build: a (1 MB), b (size unknown)",
        "time not estimated: the size of b is unknown (no readable uv.lock for this platform)",
    ]


def test_a_local_wheel_counts_its_files_size_or_leaves_the_size_unknown(tmp_path, monkeypatch):
    """torch-linux-cpu's lock installs torch from a local folder (a `path`, no size in
    uv.lock): it was counted as 0, and the stack estimated at ~28 MB (it takes 952 MB once
    installed). Its file's size is counted now; where the file is not here, the size is
    unknown and no total or time is made up."""
    import re

    from every_kind import catalogue

    from kit.envs.platforms import Platform

    cat = catalogue(tmp_path / "stacks")
    monkeypatch.setenv("KIT_STACKS_DIR", str(cat))
    lock = cat / "torch-linux-cpu" / "uv.lock"
    text = lock.read_text()
    local = re.search(r'path = "([^"]+\.whl)"', text).group(1)
    wheel = tmp_path / "wheels" / local.rsplit("/", 1)[1]
    wheel.parent.mkdir()
    wheel.write_bytes(b"\0" * (5 * 2**20))
    lock.write_text(text.replace(local, str(wheel)))
    linux = Platform("linux", "x86_64", cpu_flags=frozenset({"avx2"}), downloads=True)
    k = stack_kind("torch-linux-cpu")
    indexed = sum(size for where, size in k.wheels(linux) if where.startswith("http"))
    assert k.download_bytes(linux) == indexed + 5 * 2**20
    wheel.unlink()
    assert k.download_bytes(linux) is None
    words = " ".join(said(estimate([k], linux)))
    assert (
        "torch-linux-cpu (size unknown)" in words
        and "the size of torch-linux-cpu is unknown" in words
    )
