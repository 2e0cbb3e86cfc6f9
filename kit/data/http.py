"""Fetch pages from a web API with every wait and every read bounded, and say which bound was hit.

A fetch has a total deadline; each page has its own deadline (counted from the request, enforced
on every socket read, so a server dripping one byte every few seconds is given up on when the
page's time is spent, not at its next byte) and size limit; a ``Retry-After`` longer than a cap is
refused rather than obeyed for hours; a body cut short (a Content-Length not met, a gzip stream
without its end, a last line without its newline) is fetched again; a redirect loop is one line.
"""

from __future__ import annotations

import os
import time
import zlib
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlparse

from ..core.errors import Failed, HttpStatus, KitError, TooSlow, Unreachable

RETRY_STATUS = (429, 500, 502, 503, 504)


@dataclass(frozen=True)
class Limits:
    deadline_s: float = 1800.0  # the whole fetch (KIT_FETCH_DEADLINE)
    page_s: float = 120.0  # one page, from request to last byte (KIT_FETCH_PAGE_DEADLINE)
    retry_after_max_s: float = (
        120.0  # a longer Retry-After ends the fetch (KIT_FETCH_RETRY_AFTER_MAX)
    )
    page_bytes: int = 64 * 2**20  # one page, decoded (500 proteins are ~0.3 MB)
    connect_s: float = 10.0
    read_s: float = 30.0  # silence longer than this is a failed attempt
    attempts: int = 4
    backoff_s: float = 1.0

    @classmethod
    def from_env(cls, **over) -> Limits:
        env = {
            "deadline_s": "KIT_FETCH_DEADLINE",
            "retry_after_max_s": "KIT_FETCH_RETRY_AFTER_MAX",
            "page_s": "KIT_FETCH_PAGE_DEADLINE",
        }
        values: dict[str, Any] = {}  # floats from the environment, any field from ``over``
        for field, var in env.items():
            if os.environ.get(var):
                try:
                    values[field] = float(os.environ[var])
                except ValueError:
                    values[field] = -1.0
                if not 0 < values[field] < 1e7:
                    raise KitError(
                        f"{var} must be a positive number of seconds, not {os.environ[var]!r}"
                    )
        values.update({k: v for k, v in over.items() if v is not None})
        return replace(cls(), **values)


class Fetcher:
    """GET pages under one deadline; ``what`` names the server in messages ("UniProt")."""

    def __init__(self, limits: Limits = Limits(), session=None, what: str = "the server"):
        import requests
        from requests.adapters import HTTPAdapter
        from urllib3.util.retry import Retry

        self.limits, self.what = limits, what
        self.deadline = time.monotonic() + limits.deadline_s
        if session is None:
            # connection errors only: statuses and broken bodies are retried here, with bounds
            session = requests.Session()
            adapter = HTTPAdapter(
                max_retries=Retry(
                    total=None, connect=2, read=False, status=0, other=0, backoff_factor=0.5
                )
            )
            session.mount("https://", adapter)
            session.mount("http://", adapter)
        session.headers.update(
            {"Accept-Encoding": "gzip", "User-Agent": "kit-reproducibility-budget"}
        )
        self.session = session

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TooSlow(
                f"the fetch from {self.what} passed its deadline of "
                f"{self.limits.deadline_s:.0f} s (--deadline or KIT_FETCH_DEADLINE "
                "allows more); what is complete is kept for the next attempt"
            )
        return left

    def _sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, min(seconds, self._left())))

    def get(self, url: str, params=None, check=None):
        """(response, decoded body) of one page. ``check(response, body)`` may return why a
        complete-looking page is not what was asked for (an HTML error page, say): retried."""
        import requests

        lim, why, late = self.limits, "no attempt", False
        for attempt in range(lim.attempts):
            left = self._left()
            page_end = time.monotonic() + lim.page_s  # this attempt at the page, headers included
            try:
                r = self.session.get(
                    url,
                    params=params,
                    stream=True,
                    timeout=(lim.connect_s, min(lim.read_s, lim.page_s, left)),
                )
            except requests.exceptions.ReadTimeout:  # connected, then silence
                why, late = f"no answer within {min(lim.read_s, lim.page_s):.0f} s", True
                self._sleep(lim.backoff_s * 2**attempt)
                continue
            except requests.exceptions.TooManyRedirects as e:
                raise KitError(
                    f"{self.what} redirects in a loop from {url} (more than "
                    f"{self.session.max_redirects} redirects); check the base URL "
                    "(--base-url or KIT_UNIPROT_URL)"
                ) from e
            except requests.exceptions.ConnectionError as e:  # includes ConnectTimeout
                raise Unreachable(
                    f"cannot reach {self.what} at {_origin(url)} (offline?): {type(e).__name__}"
                ) from e
            except requests.exceptions.RequestException as e:  # a malformed URL or answer
                raise KitError(
                    f"cannot fetch {url} from {self.what}: {type(e).__name__}: "
                    f"{str(e)[:160]}; check the base URL (--base-url or "
                    "KIT_UNIPROT_URL)"
                ) from e
            with r:
                if r.status_code in RETRY_STATUS:
                    wait = _retry_after(r) or lim.backoff_s * 2**attempt
                    if wait > lim.retry_after_max_s:
                        raise KitError(
                            f"{self.what} asks to wait {wait:.0f} s before trying again "
                            f"(HTTP {r.status_code}); kit waits at most "
                            f"{lim.retry_after_max_s:.0f} s (--max-retry-after or "
                            "KIT_FETCH_RETRY_AFTER_MAX): try later"
                        )
                    why, late = f"HTTP {r.status_code}", False
                    self._sleep(wait)
                    continue
                if r.status_code != 200:
                    raise HttpStatus(
                        f"{self.what} answered HTTP {r.status_code} for {r.url}", r.status_code
                    )
                body, why, late = self._body(r, page_end)
                if body is not None and check:
                    why = check(r, body)
                if why is None:
                    return r, body
            self._sleep(lim.backoff_s * 2**attempt / 2)
        raise (TooSlow if late else Failed)(
            f"{self.what} page {url} failed {lim.attempts} times: {why}"
        )

    def _body(self, r, page_end: float) -> tuple:
        """(decoded bytes, None, False), or (None, why the body is incomplete or late, whether
        it ran out of its time)."""
        lim = self.limits
        late = (
            f"the page took more than {lim.page_s:.0f} s to arrive (the page deadline: "
            "--page-deadline or KIT_FETCH_PAGE_DEADLINE)"
        )
        raw = bytearray()
        gz = "gzip" in r.headers.get("Content-Encoding", "")
        dec = zlib.decompressobj(31) if gz else None
        out = bytearray()
        try:
            while True:
                # every wait for bytes ends at the page's deadline (or the fetch's), whichever
                # comes first: a drip of one byte every few seconds cannot stretch it
                wait = min(page_end - time.monotonic(), self._left())
                if wait <= 0:
                    return None, late, True
                _read_timeout(r, min(lim.read_s, wait))
                chunk = r.raw.read1(65536, decode_content=False)
                if not chunk:
                    break
                raw += chunk
                out += (
                    dec.decompress(chunk, lim.page_bytes + 1 - len(out))
                    if dec is not None
                    else chunk
                )
                if len(out) > lim.page_bytes:
                    raise KitError(
                        f"a page from {self.what} is larger than "
                        f"{lim.page_bytes / 2**20:.0f} MiB; refusing it"
                    )
        except (OSError, ValueError, zlib.error) as e:
            return (None, *self._broken(e, page_end, late))
        except Exception as e:  # noqa: BLE001 - urllib3's protocol errors: a broken body
            if isinstance(e, KitError):
                raise
            return (None, *self._broken(e, page_end, late))
        length = r.headers.get("Content-Length")
        if length and length.isdigit() and int(length) != len(raw):
            return None, f"the body was cut short ({len(raw)} of {length} bytes)", False
        if dec is not None and not dec.eof:
            return None, "the gzip stream was cut short", False
        return bytes(out), None, False

    def _broken(self, e: Exception, page_end: float, late: str) -> tuple:
        """(why a read failed, whether it ran out of time): the fetch's deadline (raised), the
        page's, or a broken body."""
        self._left()
        if time.monotonic() >= page_end - 0.05:
            return late, True
        return f"the body broke off ({type(e).__name__})", False


def _read_timeout(r, seconds: float) -> None:
    """Bound the next socket read of ``r`` (urllib3 sets a timeout once, per connection)."""
    sock = getattr(getattr(r.raw, "connection", None), "sock", None)
    if sock is not None:
        sock.settimeout(max(seconds, 0.01))


def _retry_after(r) -> float | None:
    value = r.headers.get("Retry-After", "").strip()
    if value.isdigit():
        return float(value)
    if value:
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None
    return None


def _origin(url: str) -> str:
    u = urlparse(url)
    return f"{u.scheme}://{u.netloc}"
