"""Waits with a bound: a call into a library that has none of its own."""

from __future__ import annotations

import threading

from .errors import KitError


def bounded(call, seconds: float, what: str):
    """``call()``'s answer, or KitError once ``seconds`` have passed: Dask's blocking calls
    (scheduler_info, run, cancel) have no bound of their own, and a scheduler or worker that
    stops answering must not hang kit. The call goes on in a daemon thread, which exit ignores."""
    box: dict = {}

    def call_it():
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
    return box["answer"]
