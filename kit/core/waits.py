"""Waits with a bound: a call into a library that has none of its own."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import KitError

T = TypeVar("T")


def bounded(call: Callable[[], T], seconds: float, what: str) -> T:
    """``call()``'s answer, or KitError once ``seconds`` have passed: Dask's blocking calls
    (scheduler_info, run, cancel) have no bound of their own, and a scheduler or worker that
    stops answering must not hang kit. The call goes on in a daemon thread, which exit ignores."""
    box: dict[str, Any] = {}

    def call_it() -> None:
        try:
            box["answer"] = call()
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=call_it, daemon=True, name="kit-bounded-call")
    t.start()
    t.join(seconds)
    if t.is_alive():
        raise KitError(f"{what} did not answer within {seconds:.0f} s")
    if "error" in box:
        raise box["error"]
    answer: T = box["answer"]
    return answer
