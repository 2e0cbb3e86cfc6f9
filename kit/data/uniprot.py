"""The paper's Swiss-Prot subset: fetch from the UniProt REST API, cache, verify, derive.

Fetch: reviewed entries of twelve organisms, length 60-700 filtered by the server, as TSV pages
of 500 following ``Link: <...>; rel="next"``. Each organism's raw pages are written to a
temporary folder, with a manifest of their sha256; the complete folders are renamed into the
cache when all twelve are in, and a wrong answer (``answer.Answer``) keeps none of them. Derive:
the protocol in ``Protocol`` turns the cached pages into the ``swissprot`` dataset (checked
again). docs/data.md documents both.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ..core.atomic import write_bytes
from ..core.errors import KitError, WrongAnswer
from ..core.paths import subdir
from ..core.processes import alive
from ..worker.pipeline import AMINO_ACIDS
from .answer import Answer
from .dataset import MAX_LEN, MIN_LEN, load_dataset, make_dataset, save_dataset
from .http import Fetcher, Limits

DEFAULT_URL = "https://rest.uniprot.org"
NAME = "swissprot"
ORGANISMS = (  # (taxonomy id, name), in the order the protocol samples them
    (9606, "human"),
    (10090, "mouse"),
    (559292, "budding yeast"),
    (284812, "fission yeast"),
    (83333, "E. coli K-12"),
    (224308, "B. subtilis"),
    (3702, "Arabidopsis"),
    (7227, "Drosophila"),
    (6239, "C. elegans"),
    (83332, "M. tuberculosis H37Rv"),
    (44689, "Dictyostelium"),
    (7955, "zebrafish"),
)
FIELDS = "accession,organism_id,sequence,ft_transmem"
COLUMNS = ("Entry", "Organism (ID)", "Sequence", "Transmembrane")
PAGE_SIZE = 500
_STANDARD = frozenset(AMINO_ACIDS)
# a UniProt accession is 6 or 10 letters and digits; any plain token passes (a mirror's own ids),
# but one with spaces, control characters or markup is a malformed row, never an id
_ACCESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")


@dataclass(frozen=True)
class Protocol:
    """The paper's sampling protocol; every parameter can be overridden."""

    per_organism: int = 1000
    keep: int = 6000
    seed: int = 20261005
    min_len: int = MIN_LEN
    max_len: int = MAX_LEN


def base_url(url: str | None = None) -> str:
    return (url or os.environ.get("KIT_UNIPROT_URL") or DEFAULT_URL).rstrip("/")


def query(taxid: int, protocol: Protocol = Protocol()) -> str:
    return (
        f"reviewed:true AND organism_id:{taxid} AND "
        f"length:[{protocol.min_len} TO {protocol.max_len}]"
    )


def cache_dir() -> Path:
    return subdir("uniprot")


def usable(seq: str, protocol: Protocol) -> bool:
    """Does the protocol keep this sequence (standard residues, length within bounds)?"""
    return set(seq) <= _STANDARD and protocol.min_len <= len(seq) <= protocol.max_len


def answer_for(protocol: Protocol) -> Answer:
    """The checks a fetch (or a derivation) under ``protocol`` must pass."""
    return Answer(protocol.per_organism, lambda seq: usable(seq, protocol), PAGE_SIZE)


# -- HTTP ---------------------------------------------------------------------------------------
def _page_problem(r, body: bytes) -> str | None:
    """Why a complete-looking answer is not a page of the search (retried, then reported)."""
    ctype = r.headers.get("Content-Type", "")
    if "html" in ctype or not r.headers.get("X-UniProt-Release"):
        return (
            f"the answer is not a UniProt TSV page (Content-Type {ctype or 'none'}, no "
            "release header): a proxy or maintenance page?"
        )
    if body and not body.endswith(b"\n"):
        return "the page was cut short inside its last row"
    return None


# -- fetch ------------------------------------------------------------------------------------
def _parse_rows(text: str):
    """Rows of one TSV page as (accession, organism id, sequence, transmembrane cell) + bad count."""
    lines = text.split("\n")
    header = lines[0].rstrip("\r").split("\t") if lines else []
    if tuple(header) != COLUMNS:
        raise KitError(f"unexpected UniProt TSV header {header!r}; expected {COLUMNS!r}")
    rows, bad = [], 0
    for line in lines[1:]:
        if not line.strip():
            continue
        cols = line.rstrip("\r").split("\t")
        if len(cols) != 4 or not _ACCESSION.fullmatch(cols[0]) or not cols[2]:
            bad += 1
            continue
        rows.append(tuple(cols))
    return rows, bad


def fetch_organism(
    fetcher,
    url: str,
    taxid: int,
    dest: Path,
    protocol: Protocol,
    on_page=lambda done, total: None,
    answer: Answer | None = None,
) -> dict:
    """All pages of one organism into ``dest`` (a fresh folder); returns its manifest.

    The rows must add up to the ``X-Total-Results`` the server announced, and every page must
    carry it: without it a page that ends the paging early cannot be told from the last one,
    so a fetch that would be short is an error, never a smaller dataset with exit 0. Every
    page goes through ``answer`` (the whole fetch's checks) as it arrives."""
    answer = answer or answer_for(protocol)
    name = dict(ORGANISMS).get(taxid, str(taxid))
    params = {"query": query(taxid, protocol), "fields": FIELDS, "format": "tsv", "size": PAGE_SIZE}
    next_url = f"{url}/uniprotkb/search"
    pages: list[dict] = []
    rows, total, release, urls = 0, None, None, []
    seen: set[str] = set()
    tally = None
    while True:  # one page a round; the last names no next page
        r, body = fetcher.get(next_url, params if not pages else None, check=_page_problem)
        urls.append(r.url)
        seen.update((next_url, r.url))
        rel = r.headers.get("X-UniProt-Release")
        if release is None:
            release = {"release": rel, "date": r.headers.get("X-UniProt-Release-Date")}
        elif rel != release["release"]:
            raise KitError(
                f"UniProt release changed during the fetch ({release['release']} -> "
                f"{rel}); run the fetch again"
            )
        total = _total(r, taxid, len(pages) + 1, total)
        got, bad = _parse_rows(body.decode("utf-8"))
        tally = tally or answer.organism(taxid, name, total)
        tally.page(got, bad)
        rows += len(got) + bad
        file = f"page-{len(pages) + 1:04d}.tsv"
        (dest / file).write_bytes(body)
        pages.append(
            {
                "file": file,
                "sha256": hashlib.sha256(body).hexdigest(),
                "rows": len(got),
                "malformed": bad,
            }
        )
        on_page(rows, total)
        next_url = r.links.get("next", {}).get("url")
        if next_url in seen:
            raise KitError(
                f"organism {taxid}: page {len(pages)} from UniProt names itself (or an "
                f"earlier page) as the next page ({next_url}); the server's paging "
                "is broken: try again later or another --base-url"
            )
        if next_url and not got and not bad:
            raise KitError(
                f"organism {taxid}: page {len(pages)} from UniProt holds no rows but "
                "links to a next page; the server's paging is broken"
            )
        if not next_url:
            break
    tally.end(pages[-1]["rows"])
    return {"taxid": taxid, "total": total, "urls": urls, "pages": pages, **(release or {})}


def _total(r, taxid: int, page: int, before: int | None) -> int:
    """The row count the server announces; the same on every page."""
    value = r.headers.get("X-Total-Results", "").strip()
    if not value.isdigit():
        raise KitError(
            f"organism {taxid}: UniProt's page {page} has no X-Total-Results header "
            f"(got {value[:20]!r}), so a short answer cannot be told from a complete "
            "one; kit refuses it. Use a server that sends it (rest.uniprot.org does; "
            "check --base-url or KIT_UNIPROT_URL)"
        )
    if before is not None and int(value) != before:
        raise KitError(
            f"organism {taxid}: UniProt's X-Total-Results changed from {before} to "
            f"{value} at page {page}; run the fetch again"
        )
    return int(value)


def fetch(
    url: str | None = None,
    refresh: bool = False,
    protocol: Protocol = Protocol(),
    on_progress=lambda taxid, name, done, total: None,
    limits: Limits | None = None,
) -> dict:
    """Fetch (or reuse from the cache) every organism's raw pages; returns the raw manifest.

    The organisms fetched are cached together at the end. A wrong answer (WrongAnswer: an
    accession twice, in one organism or two; malformed rows past the bound; not the count
    announced or asked) caches none of them, so a refused --refresh leaves the earlier cache
    as it was; any other failure (a timeout, an interrupt) keeps the complete ones for the next
    attempt. Organisms reused from the cache pass the same checks as those fetched."""
    _check_request(protocol)
    url = base_url(url)
    raw = cache_dir() / "raw"
    raw.mkdir(exist_ok=True)
    sweep(raw)
    fetcher = Fetcher(limits or Limits.from_env(), what="UniProt")
    answer = answer_for(protocol)
    organisms, made, complete, keep = {}, [], {}, False
    try:
        for taxid, name in ORGANISMS:
            final = raw / str(taxid)
            if final.exists() and not refresh:
                organisms[taxid] = verify_organism(final)  # refuses a tampered cache
                _check_cached(answer, taxid, name, final, organisms[taxid])
                on_progress(taxid, name, 1, 1)
                continue
            tmp = Path(tempfile.mkdtemp(dir=raw, prefix=f".{taxid}-{os.getpid()}-"))
            made.append(tmp)
            m = fetch_organism(
                fetcher,
                url,
                taxid,
                tmp,
                protocol,
                answer=answer,
                on_page=lambda d, t, _id=taxid, _n=name: on_progress(_id, _n, d, t),
            )
            m["accessed"] = datetime.now(UTC).isoformat(timespec="seconds")
            m["name"] = name
            (tmp / "manifest.json").write_text(json.dumps(m, indent=1))
            organisms[taxid], complete[taxid] = m, tmp
        keep = True
    except WrongAnswer:
        raise  # what looked right on its own came from the same wrong server: none of it is kept
    except BaseException:
        keep = True  # what is complete is kept for the next attempt
        raise
    finally:
        if keep:
            for taxid, tmp in complete.items():
                final = raw / str(taxid)
                if final.exists():
                    shutil.rmtree(final)
                os.replace(tmp, final)  # the organism appears whole, or not at all
        for tmp in made:
            shutil.rmtree(tmp, ignore_errors=True)
    releases = {m.get("release") for m in organisms.values()}
    if len(releases) > 1:
        raise KitError(
            f"cached organisms come from different UniProt releases {sorted(map(str, releases))}; "
            "run `kit data fetch --refresh`"
        )
    return {"url": url, "organisms": organisms}


def _check_request(protocol: Protocol) -> None:
    """A protocol that cannot give ``keep`` proteins is refused before any request."""
    most = len(ORGANISMS) * protocol.per_organism
    if protocol.keep > most:
        raise KitError(
            f"--keep {protocol.keep} is more than the {len(ORGANISMS)} organisms x "
            f"{protocol.per_organism} proteins (--per-organism) can give: at most "
            f"{most}"
        )


def _check_cached(answer: Answer, taxid: int, name: str, folder: Path, m: dict) -> None:
    """A cached organism's pages through ``answer``, as if they had just been fetched."""
    tally = answer.organism(taxid, name, m["total"])
    rows: list = []
    for p in m["pages"]:
        rows, bad = _parse_rows((folder / p["file"]).read_bytes().decode("utf-8"))
        tally.page(rows, bad)
    tally.end(len(rows))


def sweep(raw: Path) -> None:
    """Remove the temporary folders of fetches whose process is gone (a kill -9 mid-fetch)."""
    for d in raw.glob(".*-*-*"):
        pid = d.name.split("-")[1]
        if pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


def verify_organism(folder: Path) -> dict:
    try:
        m = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError) as e:
        raise KitError(
            f"UniProt cache {folder} has no readable manifest; run `kit data fetch --refresh`"
        ) from e
    for p in m["pages"]:
        path = folder / p["file"]
        if not path.exists() or hashlib.sha256(path.read_bytes()).hexdigest() != p["sha256"]:
            raise KitError(
                f"UniProt cache page {path} does not match its sha256; refusing it "
                "(run `kit data fetch --refresh`)"
            )
    return m


# -- derive -----------------------------------------------------------------------------------
def label(transmembrane_cell: str) -> int:
    """1 if UniProt records at least one Transmembrane feature."""
    return int("TRANSMEM" in transmembrane_cell)


def derive(raw_manifest: dict, protocol: Protocol = Protocol()):
    """Apply the protocol to the cached pages; returns (dataset, derivation manifest). The
    pages pass the fetch's checks again (``answer_for``): a cache is never trusted to hold
    what a fetch would have refused."""
    raw = cache_dir() / "raw"
    rng = np.random.default_rng(protocol.seed)
    pool, counts, raw_hash = [], {}, hashlib.sha256()
    answer = answer_for(protocol)
    for taxid, name in ORGANISMS:
        m = raw_manifest["organisms"][taxid]
        entries, malformed, nonstandard, length = {}, 0, 0, 0
        tally, rows = answer.organism(taxid, name, m["total"]), []
        for p in m["pages"]:
            body = (raw / str(taxid) / p["file"]).read_bytes()
            raw_hash.update(body)
            rows, bad = _parse_rows(body.decode("utf-8"))
            tally.page(rows, bad)
            malformed += bad
            for acc, _org, seq, tm in rows:
                if not set(seq) <= _STANDARD:
                    nonstandard += 1
                elif not protocol.min_len <= len(seq) <= protocol.max_len:
                    length += 1
                else:
                    entries[acc] = (seq, label(tm))
        tally.end(len(rows))
        # the API's order is not a contract: order by accession before sampling
        accs = sorted(entries)
        take: np.ndarray | list[int] = (
            np.sort(
                rng.choice(len(accs), size=min(protocol.per_organism, len(accs)), replace=False)
            )
            if accs
            else []
        )
        chosen = [accs[i] for i in take]
        pool += [(a, entries[a][0], entries[a][1], name) for a in chosen]
        counts[name] = {
            "taxid": taxid,
            "fetched": m["total"],
            "usable": len(accs),
            "sampled": len(chosen),
            "positives": sum(entries[a][1] for a in chosen),
            "malformed": malformed,
            "nonstandard": nonstandard,
            "out_of_bounds": length,
        }
    if len(pool) < 3:
        raise KitError("the UniProt pages hold too few usable proteins to build a dataset")
    first = next(iter(raw_manifest["organisms"].values()))
    meta = {
        "release": first.get("release"),
        "release_date": first.get("date"),
        "base_url": raw_manifest["url"],
        "queries": {name: raw_manifest["organisms"][t]["urls"][0] for t, name in ORGANISMS},
        "accessed": min(m.get("accessed", "") for m in raw_manifest["organisms"].values()),
        "raw_sha256": raw_hash.hexdigest(),
        "protocol": asdict(protocol),
        "counts": counts,
    }
    acc, seqs, labels, orgs = zip(*pool, strict=True)
    full = make_dataset(
        NAME,
        f"uniprot:{meta['release']}",
        acc,
        seqs,
        labels,
        orgs,
        split_seed=protocol.seed,
        meta=meta,
    )
    ds = full if full.n <= protocol.keep else replace(full.head(protocol.keep), name=NAME)
    return ds, meta


def fetch_dataset(
    url=None,
    refresh=False,
    protocol: Protocol = Protocol(),
    on_progress=None,
    limits: Limits | None = None,
):
    """Fetch (or reuse) the raw pages, derive the dataset, store it; returns the dataset."""
    raw = fetch(url, refresh, protocol, on_progress or (lambda *a: None), limits)
    ds, _ = derive(raw, protocol)
    save_dataset(ds)
    write_manifest(ds)
    return ds


def verify(protocol: Protocol | None = None) -> dict:
    """Re-hash the raw pages and re-derive the dataset; raises KitError on any mismatch."""
    raw = cache_dir() / "raw"
    stored = load_dataset(NAME)  # checks the dataset file's own hash
    proto = protocol or Protocol(**stored.meta.get("protocol", {}))
    organisms = {t: verify_organism(raw / str(t)) for t, _ in ORGANISMS if (raw / str(t)).exists()}
    if len(organisms) != len(ORGANISMS):
        raise KitError("the UniProt cache is incomplete; run `kit data fetch`")
    ds, _ = derive({"url": stored.meta.get("base_url"), "organisms": organisms}, proto)
    if ds.sha256 != stored.sha256:
        raise KitError(
            "the stored swissprot dataset does not match what its cached pages give; "
            "run `kit data fetch --refresh`"
        )
    return {
        "dataset": NAME,
        "sha256": ds.sha256,
        "raw_sha256": stored.meta.get("raw_sha256"),
        "pages": sum(len(m["pages"]) for m in organisms.values()),
        "ok": True,
    }


def write_manifest(ds) -> Path:
    """A human-readable copy of the dataset's provenance beside the cache."""
    path = cache_dir() / "manifest.json"
    write_bytes(path, json.dumps({"sha256": ds.sha256, **ds.meta}, indent=1).encode())
    return path
