"""Read a user's own proteins from TSV or FASTA, check them, and store them as a dataset.

TSV: columns ``accession, sequence, label[, organism]``, tab-separated, an optional header line.
FASTA: ``>ACCESSION label=1 [organism=NAME]``; the sequence on the following lines.
Labels are 0/1 (or true/false, yes/no).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import KitError
from ..worker.pipeline import AMINO_ACIDS
from .dataset import MAX_LEN, MIN_LEN, SPLIT_SEED, Dataset, make_dataset, save_dataset

_LABELS = {"1": 1, "0": 0, "true": 1, "false": 0, "yes": 1, "no": 0}
_STANDARD = frozenset(AMINO_ACIDS)


def _label(text, where):
    try:
        return _LABELS[text.strip().lower()]
    except KeyError:
        raise KitError(f"{where}: label {text!r} is not 0/1 (or true/false, yes/no)") from None


def _read_tsv(lines, path):
    records = []
    for no, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.rstrip("\n\r").split("\t")
        if len(cols) not in (3, 4):
            raise KitError(f"{path}:{no}: expected 3 or 4 tab-separated columns "
                           f"(accession, sequence, label[, organism]), got {len(cols)}")
        if not records and cols[2].strip().lower() not in _LABELS:
            continue  # a header line
        org = cols[3].strip() if len(cols) == 4 else ""
        records.append((cols[0].strip(), cols[1].strip().upper(), _label(cols[2], f"{path}:{no}"), org))
    return records


def _read_fasta(lines, path):
    records, head, seq = [], None, []

    def close():
        if head is not None:
            acc, fields, no = head
            if "label" not in fields:
                raise KitError(f"{path}:{no}: FASTA header for {acc!r} has no label=0|1")
            records.append((acc, "".join(seq).upper(), _label(fields["label"], f"{path}:{no}"),
                            fields.get("organism", "")))

    for no, line in enumerate(lines, 1):
        line = line.strip()
        if line.startswith(">"):
            close()
            words = line[1:].split()
            if not words:
                raise KitError(f"{path}:{no}: FASTA header without an accession")
            fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
            head, seq = (words[0], fields, no), []
        elif line:
            if head is None:
                raise KitError(f"{path}:{no}: sequence before the first '>' header")
            seq.append(line)
    close()
    return records


def read_records(path):
    """[(accession, sequence, label, organism)] from a TSV or FASTA file."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise KitError(f"cannot read {path}: {e}") from e
    lines = text.splitlines()
    first = next((ln for ln in lines if ln.strip()), "")
    records = (_read_fasta if first.startswith(">") else _read_tsv)(lines, path)
    if not records:
        raise KitError(f"{path}: no records found")
    seen = set()
    for acc, *_ in records:
        if acc in seen:
            raise KitError(f"{path}: accession {acc!r} appears more than once")
        seen.add(acc)
    return records


def _problems(records, min_len, max_len):
    bad = []
    for acc, seq, _, _ in records:
        odd = sorted(set(seq) - _STANDARD)
        if odd:
            bad.append((acc, f"non-standard residue(s) {''.join(odd)}"))
        elif not min_len <= len(seq) <= max_len:
            bad.append((acc, f"length {len(seq)} outside {min_len}-{max_len}"))
    return bad


def import_file(path, name, shuffle=True, filter_bad=False, split_seed=SPLIT_SEED,
                min_len=MIN_LEN, max_len=MAX_LEN):
    """Check, split and store a user's file; returns (dataset, number of records dropped)."""
    if name == "synthetic" or name.startswith("synthetic-"):
        raise KitError("the name 'synthetic' is reserved for the built-in set")
    records = read_records(path)
    bad = _problems(records, min_len, max_len)
    if bad and not filter_bad:
        shown = "; ".join(f"{a}: {why}" for a, why in bad[:5])
        more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
        raise KitError(f"{len(bad)} record(s) rejected: {shown}{more}; pass --filter to drop them")
    drop = {a for a, _ in bad}
    keep = [r for r in records if r[0] not in drop]
    acc, seqs, labels, orgs = (list(c) for c in zip(*keep)) if keep else ([], [], [], [])
    ds: Dataset = make_dataset(name, f"import:{Path(path).name}", acc, seqs, labels, orgs,
                               split_seed=split_seed, shuffle=shuffle,
                               meta={"dropped": len(drop), "file": str(Path(path).resolve())})
    save_dataset(ds)
    return ds, len(drop)
