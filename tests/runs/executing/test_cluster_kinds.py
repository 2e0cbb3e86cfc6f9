"""kit.runs.executing.cluster_kinds: the --cluster names and the one settings file (no cluster started)."""

import http.server
import threading
import time

import pytest

from kit.core.errors import KitError
from kit.runs.executing import cluster_kinds, cluster_settings


def test_each_name_chooses_its_kind_and_anything_else_is_one_line():
    assert cluster_kinds.cluster_kind("local:3").expected == 3
    assert cluster_kinds.cluster_kind("local").expected == 2  # the settings' default
    assert cluster_kinds.cluster_kind("tcp://head:8786").address == "tcp://head:8786"
    assert cluster_kinds.cluster_kind("slurm").system == "slurm"
    for bad, says in (
        ("local:x", "number of workers"),
        ("local:0", "the smallest is 1"),
        ("kubernetes", "unknown cluster"),
        ("ssh", "needs hosts"),
    ):
        with pytest.raises(KitError, match=says):
            cluster_kinds.cluster_kind(bad)


@pytest.mark.parametrize(
    "value, says",
    [
        ("tcp://localhost", "'tcp://localhost' names no port"),
        ("tcp://", "'tcp://' names no host and port"),
        ("tcp://:8786", "names no host"),
        ("tcp://localhost:abc", "has port 'abc'; a port is a number from 1 to 65535"),
        ("tcp://localhost:99999", "has port '99999'"),
        ("tcp://localhost:0", "has port '0'"),
        ("tcp://::1:8786", "IPv6 host without [brackets]"),
        ("tls://localhost:1", "tls:// is not supported"),
        ("", "'' names no cluster"),
        (" ", "names no cluster"),
        ("local:", "takes a number of workers"),
        ("local:-1", "takes a number of workers"),
        ("local:100000", "asks for 100,000 workers; the largest is"),
        ("LOCAL:2", "unknown cluster 'LOCAL:2': did you mean local:2?"),
        ("Slurm", "did you mean slurm?"),
        ("TCP://head:8786", "did you mean tcp://head:8786?"),
        ("nope", "unknown cluster 'nope': use local[:N], tcp://HOST:PORT, slurm"),
    ],
)
def test_a_malformed_cluster_is_one_line_naming_it_and_the_forms(value, says):
    with pytest.raises(ValueError) as e:
        cluster_kinds.parse_cluster(value)
    said = str(e.value)
    assert says in said and "\n" not in said
    if "tls" not in value and "did you mean" not in said:
        assert said.endswith(": use " + cluster_kinds.FORMS)


def test_each_form_parses_to_its_kind_and_argument():
    parse = cluster_kinds.parse_cluster
    assert parse("local") == ("local", None) and parse("local:3") == ("local", 3)
    assert parse("tcp://head:8786") == ("tcp", "tcp://head:8786")
    assert parse("tcp://[::1]:65535") == ("tcp", "tcp://[::1]:65535")
    assert [parse(k) for k in ("slurm", "pbs", "ssh")] == [
        ("slurm", None),
        ("pbs", None),
        ("ssh", None),
    ]


def test_a_web_server_is_refused_as_no_dask_scheduler_within_the_connect_deadline(monkeypatch):
    """A real HTTP server at tcp://HOST:PORT accepts the connection and never answers Dask's
    handshake: joining it ends within the connect deadline (it waited for good), one line."""
    pytest.importorskip("distributed")
    from kit.runs.executing.dask_executor import DaskExecutor

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setattr(cluster_kinds, "CONNECT_S", 2)
    ended: dict = {}

    def join():
        try:
            DaskExecutor(address).close()
        except KitError as e:
            ended["said"] = str(e)

    try:
        start = time.monotonic()
        joining = threading.Thread(target=join, daemon=True)
        joining.start()
        joining.join(30)  # the old wait never ended: a failure here, not a hung test
        assert not joining.is_alive(), "joining a web server did not end"
        assert time.monotonic() - start < 10
        assert ended["said"] == f"{address} did not answer as a Dask scheduler within 2 s"
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_that_answers_in_another_protocol_is_one_line(monkeypatch):
    """An SSH server greets first: Dask read its greeting as frame sizes and asked for exabytes
    (an internal MemoryError); now one line that it is no Dask scheduler."""
    import socket

    pytest.importorskip("distributed")
    from kit.runs.executing.dask_executor import DaskExecutor

    listener = socket.create_server(("127.0.0.1", 0))
    held = []

    def greet():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed: the test is over
                return
            conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
            held.append(conn)  # open, as an SSH server waiting for the client's greeting

    threading.Thread(target=greet, daemon=True).start()
    address = f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    monkeypatch.setattr(cluster_kinds, "CONNECT_S", 5)
    try:
        with pytest.raises(
            KitError,
            match=r"did not answer as a Dask scheduler \(its answer is "
            r"not Dask's",
        ):
            DaskExecutor(address)
    finally:
        listener.close()
        for conn in held:
            conn.close()


def test_settings_merge_the_file_over_defaults_and_refuse_typos(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_HOME", str(tmp_path))
    assert cluster_kinds.settings()["jobqueue"]["cores"] == 2
    assert cluster_kinds.init_settings() == str(tmp_path / "cluster.toml")
    assert cluster_kinds.settings() == {
        k: dict(v) for k, v in cluster_settings.DEFAULTS.items()
    }  # template
    (tmp_path / "cluster.toml").write_text('[jobqueue]\ncores = 8\nqueue = "gpu"\n')
    s = cluster_kinds.settings()
    assert s["jobqueue"]["cores"] == 8 and s["jobqueue"]["walltime"] == "01:00:00"
    (tmp_path / "cluster.toml").write_text("[jobqueue]\ncore = 8\n")
    with pytest.raises(KitError, match="no setting 'core'"):
        cluster_kinds.settings()
    (tmp_path / "cluster.toml").write_text("[slurmm]\n")
    with pytest.raises(KitError, match=r"no section 'slurmm'; sections are local, "):
        cluster_kinds.settings()
    (tmp_path / "cluster.toml").write_text("[jobqueue\n")
    with pytest.raises(KitError, match="kit cluster init"):
        cluster_kinds.settings()


def test_init_never_overwrites_a_users_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_HOME", str(tmp_path))
    (tmp_path / "cluster.toml").write_text("[local]\nworkers = 5\n")
    cluster_kinds.init_settings()
    assert cluster_kinds.settings()["local"]["workers"] == 5
