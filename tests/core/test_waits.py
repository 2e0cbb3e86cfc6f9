"""kit.core.waits: a library call without a bound of its own gets one."""

import threading
import time

import pytest

from kit.core.errors import KitError
from kit.core.waits import bounded


def test_an_answer_in_time_is_returned_and_an_error_raised_in_the_caller():
    assert bounded(lambda: 42, 5, "the scheduler") == 42
    with pytest.raises(ZeroDivisionError):
        bounded(lambda: 1 / 0, 5, "the scheduler")


def test_a_call_that_never_answers_is_one_line_naming_it_once_the_bound_is_past():
    release = threading.Event()
    start = time.monotonic()
    try:
        with pytest.raises(KitError, match=r"^scheduler_info did not answer within 0 s$"):
            bounded(lambda: release.wait(30), 0.2, "scheduler_info")
    finally:
        release.set()  # the daemon thread the call goes on in ends too
    assert time.monotonic() - start < 5
