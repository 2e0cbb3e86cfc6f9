"""A real local HTTP server that speaks the UniProt REST search API's TSV format.

Per organism it serves deterministic entries in scrambled order, pages of ``size`` with a
``Link: <...>; rel="next"`` header, ``X-Total-Results`` and the release headers, gzip when asked,
the TSV header repeated on every page, one malformed row, one sequence with a non-standard
residue, empty and multi-feature Transmembrane cells. Faults are scripted per (taxid, page);
``hostile`` makes the whole answer wrong in one of the ways ``HOSTILE`` lists (consistent
headers, complete pages: only the rows themselves, or their count, are wrong).
"""

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

import numpy as np

HEADER = "Entry\tOrganism (ID)\tSequence\tTransmembrane"
TM_CELL = (
    'TRANSMEM 52..81; /note="Helical; Name=1"; /evidence="ECO:0000305|PubMed:29872227"; '
    'TRANSMEM 95..116; /note="Helical; Name=2"; /evidence="ECO:0000305"'
)
RELEASE, RELEASE_DATE = "2026_03", "05-Oct-2026"


def make_entries(taxid, n, seed=0):
    rng = np.random.default_rng([taxid, seed])
    aa = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    rows = []
    for i in range(n):
        acc = f"Q{taxid % 97:02d}{i:05d}"
        seq = "".join(aa[rng.integers(0, 20, int(rng.integers(60, 701)))])
        tm = TM_CELL if rng.random() < 0.25 else ""
        if i == 3:
            seq = seq[:10] + "X" + seq[11:]  # non-standard residue: dropped by the protocol
        rows.append(f"{acc}\t{taxid}\t{seq}\t{tm}")
    rows.insert(5, f"BROKEN{taxid}\t{taxid}")  # a malformed row: two columns
    order = rng.permutation(len(rows))  # the API's order is not accession order
    return [rows[i] for i in order]


HOSTILE = (
    "one-accession",  # every row of an organism carries the same accession
    "malformed",  # 90% of the rows have two columns instead of four
    "same-set",  # every organism's rows carry the first organism's accessions
    "few",  # human holds 300 entries (announced and served): fewer than asked
    "short",  # human's paging ends at 600 rows though 1101 are announced
    "overfull",  # pages of twice the size asked (all rows still add up)
    "extra",  # human announces 1000 rows and serves 1101
)


def _hostile(data, mode):
    """The rows a server answering wrongly in ``mode`` holds (``data`` is changed in place)."""
    first = next(iter(data))
    for t, rows in data.items():
        if mode == "one-accession":
            data[t] = [r.replace(r.split("\t")[0], f"Q{t % 97:02d}00000", 1) for r in rows]
        elif mode == "malformed":
            data[t] = [
                r if i % 10 == 0 else r.split("\t")[0] + f"\t{t}" for i, r in enumerate(rows)
            ]
        elif mode == "same-set":
            data[t] = [r.replace(f"\t{first}\t", f"\t{t}\t", 1) for r in data[first]]
    if mode == "few" and 9606 in data:
        data[9606] = data[9606][:300]


class FakeUniProt:
    def __init__(self, organisms, per_organism=1100, page_size=500, seed=0, hostile=None):
        assert hostile in (None, *HOSTILE), hostile
        self.data = {t: make_entries(t, per_organism, seed) for t in organisms}
        _hostile(self.data, hostile)
        self.page_size = page_size
        # (taxid, page) -> faults used in order: "429" | "503" | "truncate" | "wait-forever"
        # (Retry-After: 100000) | "drip" (a byte at a time) | "silent" (never answers) | "html"
        # (a proxy's error page) | "cut-row" (no Content-Length, cut inside the last row) |
        # "self-link" (the page's next link is its own URL)
        self.faults = {}
        self.drip_every = 0.2  # seconds between the bytes of a "drip"
        self.omit_total = False  # send no X-Total-Results header
        self.short = {}  # taxid -> rows served before the paging ends early
        self.announce = {}  # taxid -> the X-Total-Results sent (default: the truth)
        self.oversize = 1  # pages hold this many times the size asked
        if hostile == "short":
            self.short[9606] = 600
        if hostile == "extra":
            self.announce[9606] = 1000
        if hostile == "overfull":
            self.oversize = 2
        self.requests = []  # (taxid, page, status, time)
        self.release = RELEASE
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                server._handle(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def truth(self):
        """accession -> label, from the rows the server holds."""
        out = {}
        for rows in self.data.values():
            for r in rows:
                c = r.split("\t")
                if len(c) == 4:
                    out[c[0]] = int(bool(c[3]))
        return out

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handle(self, h):
        u = urlparse(h.path)
        if u.path.startswith("/loop"):  # a misconfigured mirror: redirects to itself forever
            return self._send(h, 302, b"", {"Location": f"{self.url}{h.path}"})
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        query = q.get("query", "")
        ok = (
            u.path == "/uniprotkb/search"
            and q.get("format") == "tsv"
            and q.get("fields") == "accession,organism_id,sequence,ft_transmem"
            and "reviewed:true" in query
            and "length:[60 TO 700]" in query
        )
        try:
            taxid = int(query.split("organism_id:")[1].split()[0])
        except (IndexError, ValueError):
            ok = False
        if not ok or taxid not in self.data:
            return self._send(h, 400, b"bad request", {})
        size = min(int(q.get("size", 25)), self.page_size) * self.oversize
        cursor = int(q.get("cursor", 0))
        page = cursor // size
        fault = self.faults.get((taxid, page), [])
        kind = fault.pop(0) if fault else None
        self.requests.append((taxid, page, kind or 200, time.monotonic()))
        if kind == "429":
            return self._send(h, 429, b"too many requests", {"Retry-After": "1"})
        if kind == "503":
            return self._send(h, 503, b"unavailable", {})
        if kind == "wait-forever":
            return self._send(h, 429, b"slow down", {"Retry-After": "100000"})
        if kind == "silent":
            time.sleep(30)
            return
        if kind == "html":
            return self._send(
                h,
                200,
                b"<html><body>Service unavailable</body></html>",
                {"Content-Type": "text/html"},
            )
        rows = self.data[taxid]
        served = rows[: self.short.get(taxid, len(rows))]
        body = "\n".join([HEADER] + served[cursor : cursor + size]) + "\n"
        headers = {
            "X-Total-Results": str(self.announce.get(taxid, len(rows))),
            "X-UniProt-Release": self.release,
            "X-UniProt-Release-Date": RELEASE_DATE,
            "Content-Type": "text/plain; format=tsv",
        }
        if self.omit_total:
            del headers["X-Total-Results"]
        if cursor + size < len(served):
            nxt = dict(q, cursor=str(cursor + size), size=str(size // self.oversize))
            headers["Link"] = f'<{self.url}/uniprotkb/search?{urlencode(nxt)}>; rel="next"'
        if kind == "self-link":
            headers["Link"] = f'<{self.url}{h.path}>; rel="next"'
        data = body.encode()
        if kind == "cut-row":  # the connection closes inside the last row; no length to check
            h.send_response(200)
            for k, v in headers.items():
                h.send_header(k, v)
            h.send_header("Connection", "close")
            h.end_headers()
            h.wfile.write(data[:-20])
            h.close_connection = True
            return
        if kind == "drip":
            h.send_response(200)
            for k, v in headers.items():
                h.send_header(k, v)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            try:
                for i in range(len(data)):
                    h.wfile.write(data[i : i + 1])
                    h.wfile.flush()
                    time.sleep(self.drip_every)
            except OSError:
                pass
            return
        if "gzip" in h.headers.get("Accept-Encoding", ""):
            data = gzip.compress(data)
            headers["Content-Encoding"] = "gzip"
        self._send(h, 200, data, headers, truncate=kind == "truncate")

    @staticmethod
    def _send(h, status, data, headers, truncate=False):
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data[: len(data) // 2] if truncate else data)
        if truncate:
            h.close_connection = True
