"""How long building stacks will take, said as an estimate: the wheels their uv.lock files list
for this platform, at a rate measured here (this machine's earlier builds, else one wheel
downloaded now), never at an assumed one."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..core.errors import KitError, TooSlow
from ..core.numbers import is_duration, span

PROBE_BYTES = (2 * 2**20, 16 * 2**20)  # the wheel downloaded to measure: 2 to 16 MiB
PROBE_S = 10.0  # ... within this; a slower network is said as slower than what that would be


@dataclass(frozen=True)
class Estimate:
    """``stacks``: [(name, download bytes or None)] to build; ``rate``: bytes a second, or
    None (not measured: ``how`` says why); ``how``: where the rate was measured."""

    stacks: tuple
    rate: float | None
    how: str

    @property
    def total(self) -> int:
        return sum(b or 0 for _, b in self.stacks)

    @property
    def seconds(self) -> float | None:
        return self.total / self.rate if self.rate else None


def past_rate(kinds) -> tuple | None:
    """(bytes a second, builds) over the earlier builds of ``kinds`` (catalogue stacks) that
    recorded their size and time, or None: download, unpacking and compiling, as they ran here
    (wheels uv had cached made a build quicker)."""
    # a marker is a file under KIT_HOME: what it holds is checked before it is a number
    done = [
        (m["download_bytes"], m["build_s"])
        for m in (k.build_record() for k in kinds)
        if m
        and is_duration(m.get("build_s"))
        and m["build_s"] > 0
        and is_duration(m.get("download_bytes"))
        and m["download_bytes"] > 0
    ]
    if not done:
        return None
    return sum(b for b, _ in done) / sum(s for _, s in done), len(done)


def probe_rate(wheels) -> tuple:
    """(bytes a second, how) of one of ``wheels`` ([(url, size)]) downloaded now (the smallest
    of PROBE_BYTES's sizes), or (None, why not): no such wheel, the index not answering, or
    slower than PROBE_S allows."""
    from ..data.http import Fetcher, Limits

    fit = sorted(
        (size, url)
        for url, size in wheels
        if url.startswith(("https://", "http://")) and PROBE_BYTES[0] <= size <= PROBE_BYTES[1]
    )
    if not fit:
        return (
            None,
            f"no wheel of {PROBE_BYTES[0] // 2**20} to {PROBE_BYTES[1] // 2**20} MiB "
            "in their lock files to measure the rate with",
        )
    size, url = fit[0]
    host = url.split("/")[2]
    fetcher = Fetcher(
        Limits(deadline_s=PROBE_S, page_s=PROBE_S, page_bytes=size + 1, read_s=PROBE_S, attempts=1),
        what=host,
    )
    start = time.monotonic()
    try:
        _, body = fetcher.get(url)
    except TooSlow:
        return None, (
            f"slower than {size / PROBE_S / 2**20:.1f} MB/s: a {_mb(size)} wheel "
            f"from {host} took over {PROBE_S:.0f} s"
        )
    except KitError as e:
        return None, f"the rate could not be measured ({e})"
    seconds = max(time.monotonic() - start, 1e-3)
    return len(body) / seconds, (
        f"the download rate measured now (a {_mb(len(body))} wheel "
        f"from {host} in {seconds:.1f} s), to which unpacking and "
        "compiling add"
    )


def estimate(kinds, plat, measure=probe_rate) -> Estimate:
    """The Estimate of building ``kinds`` (catalogue stacks not built yet) on ``plat``."""
    stacks = tuple((k.name, k.download_bytes(plat)) for k in kinds)
    if not stacks:
        return Estimate((), None, "")
    from .kinds import names, stack_kind
    from .kinds.catalogue import CatalogueStack

    built = [k for k in (stack_kind(n) for n in names()) if isinstance(k, CatalogueStack)]
    past = past_rate(built)
    if past:
        rate, n = past
        return Estimate(
            stacks,
            rate,
            f"the rate of this machine's {n} earlier build"
            f"{'s' if n > 1 else ''} (download, unpacking and compiling)",
        )
    rate, how = measure([w for k in kinds for w in k.wheels(plat) or ()])
    return Estimate(stacks, rate, how)


def said(e: Estimate) -> list:
    """The estimate in words, as lines: the stacks and their sizes, then the time and where
    its rate was measured."""
    if not e.stacks:
        return ["every stack available here is built: nothing to build"]
    lines = [
        f"{len(e.stacks)} stack{'s' if len(e.stacks) > 1 else ''} to build: "
        + ", ".join(f"{n} ({_mb(b) if b is not None else 'size unknown'})" for n, b in e.stacks)
    ]
    unknown = [n for n, b in e.stacks if b is None]
    if unknown:  # no lock file to read them from: no total, and no time, is made up
        return lines + [
            f"time not estimated: the size of {', '.join(unknown)} is unknown (no "
            "readable uv.lock for this platform)"
        ]
    if e.seconds is None or not e.rate:  # no time without a rate
        return lines + [
            f"{_mb(e.total)} of wheels (their uv.lock files); time not estimated: {e.how}"
        ]
    return lines + [
        f"{_mb(e.total)} of wheels (their uv.lock files): an estimate of about "
        f"{_span(e.seconds)} at {e.rate / 2**20:.1f} MB/s, {e.how}; wheels already "
        "in uv's cache are not downloaded again"
    ]


def _mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MB" if n >= 2**20 else f"{n / 2**10:,.0f} kB"


def _span(seconds: float) -> str:
    return span(max(seconds, 1.0))
