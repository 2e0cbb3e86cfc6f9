"""Read a user's own proteins from TSV or FASTA, check every row, and store them as a dataset.

TSV with a header: columns found by name (case ignored), any order, other columns ignored:
``accession`` or ``Entry``; ``sequence`` or ``Sequence``; ``label``, or a UniProt
``Transmembrane`` column (label 1 when it holds a TRANSMEM feature, as `kit data fetch` derives
it); optionally ``organism``/``Organism``/``Organism (ID)``. That is a UniProt export as it is.
TSV without a header: ``accession, sequence, label[, organism]``.
FASTA: ``>ACCESSION label=1 [organism=NAME]``, or a UniProt header
``>sp|P12345|NAME_HUMAN ... OS=Homo sapiens ... label=1``; the sequence on the following lines.
Labels are 0/1 (or true/false, yes/no). Only the first non-comment line may be a header: every
other row is imported or rejected (with ``--filter``: dropped and counted), never skipped.
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import chain
from pathlib import Path

from ..core.errors import KitError
from ..core.paths import subdir
from .dataset import (
    MAX_LEN,
    MIN_LEN,
    SPLIT_SEED,
    Dataset,
    check_name,
    find_stored,
    n_train_for,
    save_dataset,
    split_order,
)
from .lines import MAX_BYTES, numbered_lines  # noqa: F401 - MAX_BYTES: the default limit
from .sink import Sink
from .uniprot import label as _transmembrane  # as `kit data fetch` derives it

FORMATS = __doc__.split("\n\n", 1)[1]  # `kit data import --help` shows the formats above
MIN_RECORDS = 100  # 64 SVD components, 30 clusters, 10 neighbours and a test set
_LABELS = {"1": 1, "0": 0, "true": 1, "false": 0, "yes": 1, "no": 0}
# header names, lower-cased, of each field
_COLUMNS = {
    "accession": ("accession", "entry", "id"),
    "sequence": ("sequence",),
    "label": ("label",),
    "transmembrane": ("transmembrane",),
    "organism": ("organism", "organism (id)"),
}
_UNIPROT = re.compile(r"^(?:sp|tr)\|([^|]+)\|\S*")


class _Reject(Exception):
    """One row that cannot be imported: its line and the reason."""

    def __init__(self, no, why):
        super().__init__(why)
        self.no, self.why = no, why


def _label(text):
    try:
        return _LABELS[text.strip().lower()]
    except KeyError:
        raise ValueError(f"label {text!r} is not 0/1 (or true/false, yes/no)") from None


def _header(cols):
    """{field: column index} when ``cols`` names columns, else None (a headerless file)."""
    lower = [c.strip().lower() for c in cols]
    found = {
        f: next((i for i, c in enumerate(lower) if c in names), None)
        for f, names in _COLUMNS.items()
    }
    found = {f: i for f, i in found.items() if i is not None}
    return found or None


def _read_tsv(lines, path, sink):
    cols_of = None  # the header's columns, when the first line is a header
    first = True
    for no, line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.rstrip("\n\r").split("\t")
        if first:
            first = False
            cols_of = _header(cols)
            if cols_of is not None:
                missing = [f for f in ("accession", "sequence") if f not in cols_of]
                if "label" not in cols_of and "transmembrane" not in cols_of:
                    missing.append("label (or Transmembrane)")
                if missing:
                    raise KitError(
                        f"{path}:{no}: the header names no {', no '.join(missing)} "
                        f"column; it held {_shown(cols)}. Expected columns: accession "
                        "(or Entry), sequence, label (or Transmembrane)[, organism]"
                    )
                continue
        try:
            sink.add(_tsv_row(cols, cols_of, no))
        except _Reject as r:
            if cols_of is None and not sink.parsed and not sink.rejects:
                # the first line: neither a header nor a record, so say both ways to read it
                r.why += (
                    f"; nor is it a header (it held {_shown(cols)}): a header names "
                    "accession (or Entry), sequence, label (or Transmembrane)"
                )
            sink.reject(r)


def _shown(cols):
    text = "\t".join(cols)
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _tsv_row(cols, cols_of, no):
    if cols_of is None:
        if len(cols) not in (3, 4):
            raise _Reject(
                no,
                f"expected 3 or 4 tab-separated columns (accession, sequence, "
                f"label[, organism]), got {len(cols)}",
            )
        acc, seq, lab = cols[0], cols[1], cols[2]
        org = cols[3] if len(cols) == 4 else ""
        try:
            return _record(acc, seq, _label(lab), org, no)
        except ValueError as e:
            raise _Reject(no, str(e)) from None
    width = max(cols_of.values()) + 1
    if len(cols) < width:
        raise _Reject(
            no,
            f"expected at least {width} tab-separated columns as the header names, got {len(cols)}",
        )
    get = lambda f: cols[cols_of[f]] if f in cols_of else ""  # noqa: E731
    try:
        lab = _label(get("label")) if "label" in cols_of else _transmembrane(get("transmembrane"))
    except ValueError as e:
        raise _Reject(no, str(e)) from None
    return _record(get("accession"), get("sequence"), lab, get("organism"), no)


def _record(acc, seq, label, organism, no):
    acc = acc.strip()
    if not acc:
        raise _Reject(no, "empty accession")
    return (acc, seq.strip().upper(), label, organism.strip(), no)


def _read_fasta(lines, path, sink):
    head, seq, length = None, [], 0
    cap = sink.max_len + 1 if sink.check else None  # a longer sequence is dropped: not kept whole

    def close():
        if head is None:
            return
        acc, fields, org, no, problem = head
        try:
            if problem:
                raise _Reject(no, problem)
            if "label" not in fields:
                raise _Reject(
                    no,
                    f"FASTA header for {acc!r} has no label=0|1 (add ' label=1' "
                    "or ' label=0' to each header)",
                )
            try:
                lab = _label(fields["label"])
            except ValueError as e:
                raise _Reject(no, str(e)) from None
            sink.add(_record(acc, "".join(seq), lab, fields.get("organism", org), no), length)
        except _Reject as r:
            sink.reject(r)

    for no, line in lines:
        line = line.strip()
        if line.startswith(">"):
            close()
            head, seq, length = _fasta_header(line[1:], no), [], 0
        elif line:
            if head is None:
                raise KitError(f"{path}:{no}: sequence before the first '>' header")
            if cap is None or length <= cap:
                seq.append(line)
            length += len(line)
    close()


def _fasta_header(text, no):
    """(accession, key=value fields, UniProt organism, line, problem) of one FASTA header."""
    words = text.split()
    if not words:
        return ("", {}, "", no, "FASTA header without an accession")
    m = _UNIPROT.match(words[0])
    acc = m.group(1) if m else words[0]  # >sp|P12345|NAME_HUMAN -> P12345
    os_ = re.search(r"\bOS=(.+?)(?=\s+\w+=|$)", text)  # UniProt: OS=Homo sapiens OX=9606 ...
    organism = os_.group(1).strip() if os_ else ""
    fields, problem = {}, None
    for w in words[1:]:
        k, eq, v = w.partition("=")
        if not eq or k in ("OS", "OX", "GN", "PE", "SV"):
            continue
        if k in fields:
            problem = f"FASTA header for {acc!r} repeats {k}="
        fields[k] = v
    return (acc, fields, organism, no, problem)


def _read(path, sink) -> None:
    """Stream ``path`` into ``sink``: TSV or FASTA, told by its first line that is no comment."""
    lines = numbered_lines(path)
    peeked = []
    for no, line in lines:
        peeked.append((no, line))
        if not line.startswith("#"):
            break
    first = peeked[-1][1] if peeked and not peeked[-1][1].startswith("#") else ""
    (_read_fasta if first.startswith(">") else _read_tsv)(chain(peeked, lines), path, sink)
    if sink.rejects and not sink.parsed:
        sink.refuse_rejects()
    if not sink.parsed:
        raise KitError(
            f"{path}: no records found; expected a header naming accession (or Entry), "
            "sequence, label (or Transmembrane), or rows of accession<TAB>sequence<TAB>"
            f"label, or FASTA with label= in each header (the first line held "
            f"{_shown([first])})"
        )


def _check_classes(ds: Dataset, path):
    if ds.n < MIN_RECORDS:
        raise KitError(
            f"{path}: {ds.n} usable records; the pipeline needs at least {MIN_RECORDS} "
            "(64 SVD components, 30 clusters, a test set)"
        )
    for part, labels in (("training", ds.labels[: ds.n_train]), ("test", ds.labels[ds.n_train :])):
        if len(set(labels)) < 2:
            raise KitError(
                f"{path}: the {part} part holds only label {labels[0]}; the "
                "classifiers and AUC need both classes in each part"
            )


def import_file(
    path,
    name,
    shuffle=True,
    filter_bad=False,
    split_seed=SPLIT_SEED,
    min_len=MIN_LEN,
    max_len=MAX_LEN,
    replace=False,
):
    """Check, split and store a user's file; returns (dataset, {reason: rows dropped}).

    The file is read as a stream, the records kept spilled to a temporary file beside the
    datasets (gone on every exit): nothing is held until the whole file is accepted. Nothing is
    written unless it is (or, with ``filter_bad``, every row that is not imported is counted in
    the returned reasons).
    """
    check_name(name)
    path = Path(path)
    with Sink(
        path, True, min_len, max_len, keep_going=filter_bad, spill_dir=subdir("datasets")
    ) as sink:
        _read(path, sink)
        if sink.rejects and not filter_bad:
            sink.refuse_rejects()
        bad = sum(sink.dropped.values())
        if bad and not filter_bad:
            shown = "; ".join(f"{a}: {why} (line {no})" for a, why, no in sink.shown)
            more = f" (and {bad - 5} more)" if bad > 5 else ""
            raise KitError(
                f"{path}: {bad} record(s) rejected: {shown}{more}; fix those lines or "
                "pass --filter to drop them"
            )
        dropped = Counter(sink.dropped)
        if sink.rejects:
            dropped["unreadable rows"] = sink.rejects
        if not sink.kept:
            raise KitError(f"{path}: every record was dropped ({_dropped_text(dropped)})")
        n = sink.kept
        order = split_order(name, n, split_seed, shuffle)
        columns = sink.columns(order)  # read back straight into split order, one at a time
    del order
    ds = Dataset(
        name,
        f"import:{path.name}",
        *columns,
        n_train_for(n),
        split_seed if shuffle else None,
        {
            "dropped": sum(dropped.values()),
            "dropped_by": dict(dropped),
            "file": str(path.resolve()),
        },
    )
    del columns
    _check_classes(ds, path)
    old = find_stored(name)
    if old is not None and old != ds.sha256 and not replace:
        raise KitError(
            f"a dataset named {name!r} already exists (sha256 {old[:12]}) with other "
            "content; choose another --name, or pass --replace to overwrite it (runs "
            "made on it stay in the store under its hash)"
        )
    save_dataset(ds)
    return ds, dict(dropped)


def _dropped_text(dropped: dict) -> str:
    return ", ".join(f"{n} {why}" for why, n in sorted(dropped.items())) or "none"
