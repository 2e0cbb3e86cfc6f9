"""kit.core.logs: the cluster libraries' logging and warnings go to cluster.log, never to the
terminal, whatever a cluster does to its loggers; every other warning is shown as before."""

import logging
import warnings
from pathlib import Path

import pytest

from kit.core.logs import cluster_logs_to_file


def test_cluster_log_keeps_warnings_while_a_cluster_silences_its_logs(capfd):
    """Every Dask cluster lowers distributed's stream handlers to ERROR while it runs (a
    local one to CRITICAL): cluster.log, one of them, had kept nothing but errors."""
    from distributed.utils import silence_logging_cmgr

    path = cluster_logs_to_file()
    logging.getLogger("distributed").setLevel(logging.WARNING)
    with silence_logging_cmgr("critical"):
        logging.getLogger("distributed.nanny").warning("Worker process 123 was killed by signal 9")
    assert "Worker process 123 was killed by signal 9" in Path(path).read_text()
    assert "signal 9" not in capfd.readouterr().err


def test_warnings_of_the_cluster_libraries_go_to_the_log_and_others_as_before(capfd):
    from distributed.versions import VersionMismatchWarning

    with warnings.catch_warnings(record=True) as shown:  # "as before": recorded here
        warnings.simplefilter("always")
        path = cluster_logs_to_file()
        warnings.warn(
            VersionMismatchWarning("Mismatched versions found: numpy"),  # its class
            stacklevel=1,
        )
        warnings.warn("an unrelated warning", UserWarning, stacklevel=1)
    assert [str(w.message) for w in shown if w.category is not ResourceWarning] == [
        "an unrelated warning"
    ]
    assert "Mismatched versions" not in capfd.readouterr().err
    assert "VersionMismatchWarning: Mismatched versions found: numpy" in Path(path).read_text()


@pytest.mark.slow
def test_a_taken_port_8787_is_said_in_the_log_not_on_stderr(capfd, port_8787_taken):
    """distributed's own warning, raised in its code, as a scheduler started here meets a
    dashboard port someone else holds."""
    import distributed

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        path = cluster_logs_to_file()
        with distributed.Client(
            processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":8787"
        ):
            pass
    assert "8787" not in capfd.readouterr().err
    assert "Port 8787 is already in use" in Path(path).read_text()


@pytest.mark.slow
def test_the_workers_of_a_local_cluster_say_their_warnings_in_the_log(capfd):
    """A local cluster's worker processes share kit's terminal (their stderr is kit's): what
    distributed warns in them goes to cluster.log too."""
    from distributed.versions import VersionMismatchWarning

    from kit.runs.executing.dask_executor import DaskExecutor

    with DaskExecutor("local:1") as ex:
        fut = ex.client.submit(
            warnings.warn, VersionMismatchWarning("in a worker: numpy"), pure=False
        )  # distributed's code calls it: its warning
        fut.result(timeout=60)
        path = cluster_logs_to_file()
    assert "in a worker" not in capfd.readouterr().err
    assert "VersionMismatchWarning: in a worker: numpy" in Path(path).read_text()
