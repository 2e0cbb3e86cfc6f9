"""What a UniProt answer must be to be kept: every accession once, few bad rows, the count asked."""

from __future__ import annotations

from ..core.errors import WrongAnswer

# Real UniProt TSV has no malformed row. One broken by a stray tab or newline in a cell is skipped,
# counted and said; past 1% of an organism's rows the answer is not a format kit understands (a
# changed layout, a damaged mirror), and sampling from what parsed would draw another, biased
# subset under the paper's name. At least one row is allowed, so a small organism is not refused
# for a single broken row.
MALFORMED_SHARE = 0.01
REFUSED = "refusing the download, nothing cached"


def malformed_allowed(total: int) -> int:
    """How many malformed rows an organism of ``total`` rows may have (skipped and counted)."""
    return max(1, int(total * MALFORMED_SHARE))


def shown(text: str) -> str:
    """An accession as a message shows it: as is when plain, else quoted and cut."""
    return text if text.isalnum() and len(text) <= 20 else repr(text[:20])


class Answer:
    """The checks of one fetch (or one derivation from the cache), fed page by page; the first
    thing wrong raises WrongAnswer naming it. ``usable(sequence)``: does the protocol keep it."""

    def __init__(self, per_organism: int, usable, page_size: int):
        self.per_organism, self.usable, self.page_size = per_organism, usable, page_size
        self._first: dict = {}  # accession -> (taxid, page) where it was first seen

    def organism(self, taxid: int, name: str, total: int) -> Tally:
        return Tally(self, taxid, name, total)


class Tally:
    """One organism's pages against what its server announced (``total`` rows)."""

    def __init__(self, answer: Answer, taxid: int, name: str, total: int):
        self.answer, self.taxid, self.name, self.total = answer, taxid, name, total
        self.pages = self.rows = self.malformed = self.usable = 0

    def page(self, rows, bad: int) -> None:
        """One page's well-formed ``rows`` (accession first) and count of malformed ones."""
        a, t = self.answer, self.taxid
        self.pages += 1
        held = len(rows) + bad
        if held > a.page_size:
            raise WrongAnswer(
                f"organism {t}: UniProt's page {self.pages} holds {held} rows, more "
                f"than the {a.page_size} asked (size={a.page_size}); {REFUSED}"
            )
        self.rows += held
        if self.rows > self.total:
            raise WrongAnswer(
                f"organism {t}: UniProt announced {self.total} rows but its pages "
                f"hold more ({self.rows} by page {self.pages}); {REFUSED}"
            )
        self.malformed += bad
        allowed = malformed_allowed(self.total)
        if self.malformed > allowed:  # said as soon as it is past the bound: no more pages
            raise WrongAnswer(
                f"organism {t}: {self.malformed} of UniProt's first {self.rows} "
                f"rows are malformed (at most 1% of the {self.total} announced, "
                f"{allowed}, are skipped); {REFUSED}"
            )
        for row in rows:
            acc = row[0]
            if acc in a._first:
                raise WrongAnswer(_twice(acc, a._first[acc], (t, self.pages)))
            a._first[acc] = (t, self.pages)
            self.usable += bool(a.usable(row[2]))

    def end(self, last_page_rows: int) -> None:
        """All pages are in: as many rows as announced, and enough proteins for the protocol."""
        t = self.taxid
        if self.rows != self.total:
            raise WrongAnswer(
                f"organism {t}: received {self.rows} rows but UniProt announced "
                f"{self.total} (the last page, {self.pages}, held {last_page_rows} "
                f"and named no next page); {REFUSED}"
            )
        if self.usable < self.answer.per_organism:
            raise WrongAnswer(
                f"organism {t} ({self.name}): UniProt's answer holds {self.usable} "
                f"usable proteins, fewer than the {self.answer.per_organism} per "
                f"organism that were asked (--per-organism); {REFUSED}"
            )


def _twice(acc: str, first: tuple, again: tuple) -> str:
    """The refusal of an accession seen at ``first`` and again at ``again`` (taxid, page)."""
    if first[0] != again[0]:
        where = f"(organism {first[0]} and {again[0]})"
    elif first[1] == again[1]:
        where = f"within organism {first[0]} (both on page {first[1]})"
    else:
        where = f"within organism {first[0]} (pages {first[1]} and {again[1]})"
    return f"UniProt returned accession {shown(acc)} twice {where}; {REFUSED}"
