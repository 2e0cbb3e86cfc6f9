"""kit.data.uniprot against a real local server speaking UniProt's TSV search API."""

import json
import re
import shutil

import pytest
from uniprot_server import TM_CELL, FakeUniProt

from kit.cli import main
from kit.core.errors import KitError
from kit.data import load_dataset, uniprot
from kit.data.http import Limits
from kit.data.uniprot import Protocol, fetch_dataset, label, verify

TAXA = [t for t, _ in uniprot.ORGANISMS]


@pytest.fixture
def server():
    srv = FakeUniProt(TAXA)
    yield srv
    srv.stop()


FAST = Limits(backoff_s=0.05, read_s=5, page_s=20, deadline_s=300)


def fetch(url, **kw):
    kw.setdefault("limits", FAST)
    raw = uniprot.fetch(url, **kw)
    ds, _ = uniprot.derive(raw, kw.get("protocol", Protocol()))
    return ds


def test_labels_from_transmembrane_cells():
    assert label("") == 0
    assert label(TM_CELL) == 1


def test_fetch_survives_429_503_and_a_truncated_body(server):
    server.faults[(9606, 0)] = ["429"]
    server.faults[(10090, 1)] = ["503"]
    server.faults[(7955, 2)] = ["truncate"]
    ds = fetch_dataset(server.url)
    s = ds.summary()
    assert (s["rows"], s["train"], s["test"]) == (6000, 4002, 1998)
    truth = server.truth()
    assert all(truth[a] == lab for a, lab in zip(ds.ids, ds.labels, strict=True))
    assert s["positives"] == sum(truth[a] for a in ds.ids)
    assert s["release"] == "2026_03" and s["release_date"] == "05-Oct-2026"
    assert ds.source == "uniprot:2026_03"
    c = ds.meta["counts"]["human"]
    assert (c["fetched"], c["usable"], c["sampled"], c["malformed"], c["nonstandard"]) == (
        1101,
        1099,
        1000,
        1,
        1,
    )
    assert set(ds.organisms) == {n for _, n in uniprot.ORGANISMS}
    assert "organism_id%3A9606" in ds.meta["queries"]["human"]
    # each fault was answered by a retry of the same page; Retry-After: 1 was honoured
    reqs = [r for r in server.requests if r[:2] == (9606, 0)]
    assert [r[2] for r in reqs] == ["429", 200] and reqs[1][3] - reqs[0][3] >= 0.9
    assert [r[2] for r in server.requests if r[:2] == (10090, 1)] == ["503", 200]
    assert [r[2] for r in server.requests if r[:2] == (7955, 2)] == ["truncate", 200]


def test_second_fetch_needs_no_network_and_order_of_pages_does_not_matter(server):
    first = fetch_dataset(server.url)
    server.stop()
    again = fetch_dataset("http://127.0.0.1:9")  # nothing listens there
    assert again.sha256 == first.sha256 and load_dataset("swissprot").sha256 == first.sha256
    other = FakeUniProt(TAXA)
    for t in other.data:
        other.data[t].reverse()  # same entries, another API order
    try:
        assert fetch(other.url, refresh=True).sha256 == first.sha256
    finally:
        other.stop()


def test_tampered_cache_is_refused(server, capsys):
    fetch_dataset(server.url)
    page = uniprot.cache_dir() / "raw" / "9606" / "page-0001.tsv"
    page.write_bytes(page.read_bytes().replace(b"\t9606\t", b"\t9607\t", 1))
    with pytest.raises(KitError, match="does not match its sha256"):
        fetch_dataset(server.url)
    assert main(["data", "verify"]) == 1
    assert "does not match" in capsys.readouterr().err
    fetch_dataset(server.url, refresh=True)
    assert verify()["ok"]


def test_interrupted_fetch_leaves_no_dataset(server):
    server.faults[(7955, 1)] = ["truncate"] * 4  # every attempt at this page is cut short
    with pytest.raises(KitError, match="failed 4 times"):
        fetch(server.url)
    raw = uniprot.cache_dir() / "raw"
    assert not (raw / "7955").exists()
    assert not [p for p in raw.iterdir() if p.name.startswith(".")]  # no temporary folders
    with pytest.raises(KitError, match="no dataset 'swissprot'"):
        load_dataset("swissprot")
    # the next fetch reuses the eleven complete organisms and fetches the missing one
    n_before = len(server.requests)
    fetch(server.url)
    assert {r[0] for r in server.requests[n_before:]} == {7955}


def test_release_change_mid_fetch_is_refused(server):
    server.faults[(9606, 1)] = []
    orig = server._send

    def send(h, status, data, headers, truncate=False):
        if headers.get("Link") is None and "X-UniProt-Release" in headers:
            headers["X-UniProt-Release"] = "2026_04"  # the last page comes from a new release
        orig(h, status, data, headers, truncate)

    server._send = send
    with pytest.raises(KitError, match="release changed"):
        fetch(server.url)


def test_protocol_parameters_and_offline_message(server):
    ds = fetch(server.url, protocol=Protocol(per_organism=50, keep=300))
    assert ds.n == 300 and ds.n_train == 201
    assert max(v["sampled"] for v in ds.meta["counts"].values()) == 50
    with pytest.raises(KitError, match="cannot reach UniProt"):
        uniprot.fetch("http://127.0.0.1:9", refresh=True, limits=FAST)


def test_cli_fetch_info_verify(server, capsys, monkeypatch):
    monkeypatch.setenv("KIT_UNIPROT_URL", server.url)
    assert main(["data", "fetch"]) == 0
    out = capsys.readouterr().out
    assert "swissprot: 6000 proteins (4002 train, 1998 test)" in out and "2026_03" in out
    assert main(["data", "info", "swissprot", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["release"] == "2026_03" and info["rows"] == 6000 and len(info["raw_sha256"]) == 64
    assert info["synthetic"] is False and info["counts"]["mouse"]["sampled"] == 1000
    assert main(["data", "verify", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    shutil.rmtree(uniprot.cache_dir() / "raw" / "10090")
    assert main(["data", "verify"]) == 1


# -- every wait and every read is bounded, and the message names the bound ---------------------
@pytest.mark.parametrize(
    "fault, limits, says",
    [
        ("wait-forever", FAST, "asks to wait 100000 s .* kit waits at most 120 s"),
        ("drip", Limits(backoff_s=0.05, page_s=1, attempts=2), "took more than 1 s to arrive"),
        ("silent", Limits(backoff_s=0.05, read_s=1, attempts=2), "no answer within 1 s"),
        ("html", Limits(backoff_s=0.05, attempts=2), "not a UniProt TSV page .*text/html"),
        ("drip", Limits(backoff_s=0.05, deadline_s=2), "passed its deadline of 2 s"),
    ],
    ids=["retry-after", "drip", "silent", "html", "deadline"],
)
def test_a_faulty_server_ends_the_fetch_with_the_bound_named(server, fault, limits, says):
    import time

    server.faults[(9606, 0)] = [fault] * 4
    start = time.monotonic()
    with pytest.raises(KitError, match=says):
        fetch(server.url, limits=limits)
    assert time.monotonic() - start < 20  # never hours, never 905 s
    raw = uniprot.cache_dir() / "raw"
    assert not [p for p in raw.iterdir() if p.name.startswith(".")]


def test_a_page_cut_inside_its_last_row_is_fetched_again(server):
    """Accepted before: one protein missing, another dataset hash, exit 0."""
    server.faults[(9606, 1)] = ["cut-row"]
    first = fetch(server.url)
    assert [r[2] for r in server.requests if r[:2] == (9606, 1)] == ["cut-row", 200]
    assert first.summary()["counts"]["human"]["fetched"] == 1101


def test_a_huge_page_is_refused(server):
    with pytest.raises(KitError, match="larger than 0 MiB"):
        fetch(server.url, limits=Limits(page_bytes=1000))


def test_a_killed_fetch_leaves_no_temporary_folder_behind(server):
    """A folder of a fetch whose process is gone is swept by the next fetch."""
    raw = uniprot.cache_dir() / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    (raw / ".9606-999999999-abc").mkdir()  # a pid that cannot exist
    fetch(server.url, protocol=Protocol(per_organism=10, keep=100))
    assert not [p for p in raw.iterdir() if p.name.startswith(".")]


# -- a fetch ends by itself, and never ends short with exit 0 ----------------------------------
def test_a_server_dripping_a_byte_every_few_seconds_ends_within_the_page_deadline(server):
    """Before, each wait lasted until the next byte (or 30 s of silence): 5 s per byte, and the
    page deadline was only looked at between bytes, so the fetch ran for 10+ minutes."""
    import time

    server.drip_every = 5.0
    server.faults[(9606, 0)] = ["drip"] * 2
    limits = Limits(backoff_s=0.05, page_s=1, attempts=2)
    start = time.monotonic()
    with pytest.raises(
        KitError,
        match=r"failed 2 times: the page took more than 1 s to arrive "
        r"\(the page deadline: --page-deadline",
    ):
        fetch(server.url, limits=limits)
    assert time.monotonic() - start < 2 * 1 + 1.5  # page deadline x attempts, and no more
    assert [r[2] for r in server.requests if r[:2] == (9606, 0)] == ["drip", "drip"]


def test_a_short_fetch_without_x_total_results_is_refused_not_stored(server, capsys, monkeypatch):
    """Before: exit 0 with 600 human proteins instead of 1101, and no warning."""
    server.omit_total = True
    server.short[9606] = 600
    monkeypatch.setenv("KIT_UNIPROT_URL", server.url)
    assert main(["data", "fetch"]) == 1
    err = capsys.readouterr().err
    assert (
        len(err.strip().splitlines()) == 1
        and "organism 9606: UniProt's page 1 has no X-Total-Results" in err
    )
    assert not (uniprot.cache_dir() / "raw" / "9606").exists()
    with pytest.raises(KitError, match="no dataset 'swissprot'"):
        load_dataset("swissprot")


def test_a_redirect_loop_is_one_line(server, capsys, monkeypatch):
    """Before: requests' TooManyRedirects ended the command in `internal error`."""
    monkeypatch.setenv("KIT_UNIPROT_URL", server.url + "/loop")
    assert main(["data", "fetch"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "internal error" not in err
    assert "UniProt redirects in a loop from " in err and "--base-url or KIT_UNIPROT_URL" in err


def test_a_page_naming_itself_as_the_next_page_is_one_line(server):
    """Before: the same page was fetched again and again until the deadline."""
    import time

    server.faults[(9606, 1)] = ["self-link"] * 100
    start = time.monotonic()
    with pytest.raises(
        KitError,
        match=r"organism 9606: page 2 from UniProt names itself .* as "
        "the next page",
    ):
        fetch(server.url, limits=Limits(backoff_s=0.05, deadline_s=10))
    assert time.monotonic() - start < 5


def test_offline_is_information_for_a_caller_with_a_fallback(capsys):
    """bootstrap falls back to the synthetic set offline: that is expected, not `kit: error:`."""
    nobody = "http://127.0.0.1:9"  # nothing listens there
    assert main(["data", "fetch", "--base-url", nobody, "--offline-ok"]) == 75
    err = capsys.readouterr().err
    assert "cannot reach UniProt" in err and "error" not in err and "nothing fetched" in err
    assert main(["data", "fetch", "--base-url", nobody]) == 1
    assert "kit: error: cannot reach UniProt" in capsys.readouterr().err


# -- a wrong answer is refused whole: one line, exit 3, nothing cached -------------------------
def _kept(home):
    """Every file and folder under KIT_HOME's dataset and UniProt cache folders, as text."""
    return sorted(
        str(p.relative_to(home))
        for d in ("datasets", "uniprot")
        for p in (home / d).rglob("*")
        if p.is_file() or p.name.startswith(".")
    )


@pytest.mark.parametrize(
    "mode, says",
    [
        (
            "one-accession",
            r"UniProt returned accession Q0300000 twice within organism 9606 "
            r"\(both on page 1\)",
        ),
        (
            "malformed",
            r"organism 9606: 45\d of UniProt's first 500 rows are malformed \(at most 1% "
            r"of the 1101 announced, 11, are skipped\)",
        ),
        ("same-set", r"UniProt returned accession Q03\d{5} twice \(organism 9606 and 10090\)"),
        (
            "few",
            r"organism 9606 \(human\): UniProt's answer holds 29\d usable proteins, fewer than "
            r"the 1000 per organism that were asked \(--per-organism\)",
        ),
        ("short", r"organism 9606: received 600 rows but UniProt announced 1101"),
        ("overfull", r"organism 9606: UniProt's page 1 holds 1000 rows, more than the 500 asked"),
        ("extra", r"organism 9606: UniProt announced 1000 rows but its pages hold more"),
    ],
)
def test_a_wrong_answer_is_refused_in_one_line_and_nothing_is_cached(
    mode, says, capsys, monkeypatch, kit_home
):
    """Before: `one-accession` gave "swissprot: 12 proteins", `malformed` 1,332 and `same-set`
    6,000 proteins of 1,098 distinct ids, `few` 299 human proteins where the protocol samples
    1,000, `overfull` was accepted, all exit 0; `short` and `extra` exited 1, as any failure."""
    srv = FakeUniProt(TAXA, hostile=mode)
    try:
        before = _kept(kit_home)
        monkeypatch.setenv("KIT_UNIPROT_URL", srv.url)
        code = main(["data", "fetch"])
        out, err = capsys.readouterr()
    finally:
        srv.stop()
    assert (code, out) == (3, "")
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    assert lines[0].startswith("kit: error: ") and re.search(says, lines[0]), lines[0]
    assert lines[0].endswith("refusing the download, nothing cached")
    assert _kept(kit_home) == before == []
    with pytest.raises(KitError, match="no dataset 'swissprot'"):
        load_dataset("swissprot")


def test_a_refused_refresh_leaves_the_earlier_cache_and_dataset_as_they_were(server, kit_home):
    """Before: each organism fetched again replaced its cached pages as it came, so a refresh
    refused at the second organism left the first one's new pages under the old dataset."""
    fetch_dataset(server.url, limits=FAST)
    files = {p: p.read_bytes() for p in kit_home.rglob("*") if p.is_file()}
    srv = FakeUniProt(TAXA, hostile="same-set")
    try:
        with pytest.raises(KitError, match=r"twice \(organism 9606 and 10090\)"):
            fetch_dataset(srv.url, refresh=True, limits=FAST)
    finally:
        srv.stop()
    assert {p: p.read_bytes() for p in kit_home.rglob("*") if p.is_file()} == files
    assert verify()["ok"]


def test_malformed_rows_within_the_bound_are_skipped_counted_and_said(server, capsys, monkeypatch):
    """Before: the one malformed row of each organism was skipped without a word."""
    for t in TAXA[:2]:  # 11 of 1101 more in human and mouse: 12, past 1%; 11 is at the bound
        rows = server.data[t]
        rows[:10] = [r.split("\t")[0] + "\tbroken" for r in rows[:10]]
    monkeypatch.setenv("KIT_UNIPROT_URL", server.url)
    assert main(["data", "fetch", "--per-organism", "50", "--keep", "300"]) == 0
    out = capsys.readouterr().out
    assert "skipped 32 malformed rows (11 human, 11 mouse, 1 in each of the 10 others" in out
    counts = load_dataset("swissprot").meta["counts"]
    assert counts["human"]["malformed"] == 11 and counts["zebrafish"]["malformed"] == 1
    server.data[9606][10] = "one\tcolumn\ttoo few"
    assert main(["data", "fetch", "--refresh", "--per-organism", "50", "--keep", "300"]) == 3
    assert "organism 9606: 12 of UniProt's " in capsys.readouterr().err


def test_bootstrap_tells_a_refused_answer_from_an_offline_machine(capsys):
    """`--offline-ok` (bootstrap's call) turns only an unreachable server into exit 75 ("UniProt
    not reached"); a wrong answer stays an error, exit 3, and bootstrap says the fetch failed."""
    srv = FakeUniProt(TAXA, hostile="one-accession")
    try:
        assert main(["data", "fetch", "--base-url", srv.url, "--offline-ok"]) == 3
    finally:
        srv.stop()
    err = capsys.readouterr().err
    assert err.strip().startswith("kit: error: UniProt returned accession Q0300000 twice")
    assert len(err.strip().splitlines()) == 1 and "nothing fetched" not in err


def test_keep_more_than_the_organisms_can_give_is_refused_before_any_request(server, capsys):
    """Before: `--keep 20000` gave a dataset of 12,000 proteins, exit 0."""
    assert main(["data", "fetch", "--base-url", server.url, "--keep", "20000"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == (
        "kit: error: --keep 20000 is more than the 12 organisms x 1000 "
        "proteins (--per-organism) can give: at most 12000"
    )
    assert server.requests == []
