"""The Dask executor's poll of a run's result (kit.runs.executing.dask_executor.poll), on a real
in-process Dask cluster: a finished run is never lost to a failure of the poll itself."""

import time

import pytest

from kit.runs.executing.dask_executor import poll

distributed = pytest.importorskip("distributed")


def _wait(x):
    time.sleep(x)
    return x


def _boom():
    raise ValueError("the task's own")


@pytest.fixture(scope="module")
def client():
    with distributed.Client(
        processes=False, n_workers=1, threads_per_worker=4, dashboard_address=":0"
    ) as c:  # its HTTP server listens even
        # without a dashboard (on 8787, where another Dask may be)
        yield c


def test_every_answer_comes_back_however_short_the_poll(client):
    """At a 10 ms poll the answers land as waits time out (distributed's sync then raises an
    UnboundLocalError, hundreds of times in 1,500 at 50 ms): each is read as not ended yet and
    the next poll returns it."""
    futs = [client.submit(_wait, 0.001 * (k % 7), pure=False) for k in range(300)]
    got = []
    for f in futs:
        for _ in range(100_000):
            ended, answer = poll(f, 0.01)
            if ended:
                got.append(answer)
                break
    assert got == [0.001 * (k % 7) for k in range(300)]


def test_the_task_s_own_exception_is_raised_as_it_raised_it(client):
    f = client.submit(_boom, pure=False)
    with pytest.raises(ValueError, match="the task's own"):
        for _ in range(10_000):
            if poll(f, 0.01)[0]:
                break


def test_a_cancelled_task_is_said_not_waited_on(client):
    from concurrent.futures import CancelledError

    f = client.submit(_wait, 5, pure=False)
    f.cancel()
    deadline = time.monotonic() + 10
    with pytest.raises(CancelledError):
        while time.monotonic() < deadline:
            poll(f, 0.01)


def test_a_waiting_poll_asks_the_event_loop_nothing(client, monkeypatch):
    """A run's thread waits on an event its future sets as it ends: a result is asked for
    (a round trip through Dask's event loop) only once the task has ended, not at every poll
    (hundreds of waiting runs polled twice a second each)."""
    from distributed import Future

    f = client.submit(_wait, 0.5, pure=False)
    asked, real = [], Future.result
    monkeypatch.setattr(
        Future, "result", lambda self, *a, **kw: asked.append(1) or real(self, *a, **kw)
    )
    polls = 0
    while True:
        polls += 1
        ended, answer = poll(f, 0.01)
        if ended:
            break
    assert answer == 0.5 and polls > 10 and len(asked) <= 2


@pytest.mark.slow
def test_the_drivers_dask_servers_keep_a_slow_pace(monkeypatch):
    """The scheduler and a local cluster's nannies live in kit's process: their event-loop
    timer ticks once a second, not Dask's 50 times (most of the driver's CPU between runs)."""
    from kit.runs.executing.dask_executor import DaskExecutor

    with DaskExecutor("local:1") as ex:
        servers = [ex.cluster.scheduler, *ex.cluster.workers.values()]
        assert {s.periodic_callbacks["tick"].callback_time for s in servers} == {1000}
