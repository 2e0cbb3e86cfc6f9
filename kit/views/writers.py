"""How a view's paragraphs, tables and figures are written: as terminal text, Markdown or HTML.

kit's own report and a pipeline file's are laid out once each and written by these writers:
report.md by MARKDOWN, report.html by HTML (one page style, plots inline), the commands' text
by TEXT. A name in any text (a dataset's, a host's, a lab's file's) is quoted for the writer's
format here, never written raw.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass

from tabulate import tabulate

from . import quoting
from .fit import para as fit_para
from .fit import table as fit_table


@dataclass(frozen=True)
class Writer:
    para: Callable  # para(text, indent="") -> a paragraph (indent: text's hanging indent)
    table: Callable  # table(rows, head, wrap=()) -> a table (wrap: text's wrapped columns)
    heading: Callable  # heading(level, text)
    bullets: Callable  # bullets([text, ...]) -> a list ("" when empty)
    image: Callable  # image(file name, caption, png bytes) -> the figure
    join: str  # what goes between blocks
    line: Callable  # line(text): a line text keeps unwrapped; a paragraph in a document
    blank: bool = False  # an empty block is a blank line (text), or nothing (a document)

    def joined(self, blocks) -> str:
        return self.join.join(b for b in blocks if b or self.blank)


def _cells(rows: list, quote) -> list:
    """A table's cells, each quoted (None stays tabulate's blank); a cell's lines kept apart."""
    return [
        [c if c is None else "<br>".join(quote(x) for x in str(c).split("\n")) for c in row]
        for row in rows
    ]


def _md_para(t, indent="") -> str:
    return quoting.markdown(t)


def _html_para(t, indent="") -> str:
    return f"<p>{quoting.html(t)}</p>"


def _md_image(name, caption, data) -> str:
    return f"![{quoting.markdown(caption)}]({name})"


def html_image(name, caption, data) -> str:
    """A PNG inline, so that report.html stands alone."""
    return (
        f'<figure><img alt="{quoting.html(caption)}" src="data:image/png;base64,'
        f'{base64.b64encode(data).decode()}"><figcaption>{quoting.html(caption)}'
        f"</figcaption></figure>"
    )


TEXT = Writer(
    para=lambda t, indent="": fit_para(t, indent, ""),
    table=lambda rows, head, wrap=(): fit_table(rows, head, wrap=wrap),
    heading=lambda level, t: t,
    bullets=lambda xs: "\n".join(f"- {x}" for x in xs),
    image=lambda name, caption, data: f"{caption}: {name}",
    join="\n",
    blank=True,
    line=lambda t: t,
)

MARKDOWN = Writer(
    para=_md_para,
    table=lambda rows, head, wrap=(): tabulate(
        _cells(rows, quoting.markdown),
        [quoting.markdown(h) for h in head],
        tablefmt="github",
        disable_numparse=True,
    ),
    heading=lambda level, t: "#" * level + " " + quoting.markdown(t),
    bullets=lambda xs: "\n".join(f"- {quoting.markdown(x)}" for x in xs),
    image=_md_image,
    join="\n\n",
    line=_md_para,
)

# unsafehtml: tabulate writes the cells as given, each one quoted here as every other text
HTML = Writer(
    para=_html_para,
    table=lambda rows, head, wrap=(): tabulate(
        _cells(rows, quoting.html),
        [quoting.html(h) for h in head],
        tablefmt="unsafehtml",
        disable_numparse=True,
    ),
    heading=lambda level, t: f"<h{level}>{quoting.html(t)}</h{level}>",
    bullets=lambda xs: (
        "<ul>" + "".join(f"<li>{quoting.html(x)}</li>" for x in xs) + "</ul>" if xs else ""
    ),
    image=html_image,
    join="\n",
    line=_html_para,
)

# the page fits a narrow window (tests/scenarios/test_reading_the_report_in_a_browser.py opens it at
# 800 px): a table wider than the page scrolls sideways in its own box, not the whole page, and a
# word longer than a line (a sha256) breaks
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;"
    "color:#222;overflow-wrap:break-word}table{display:block;max-width:100%;overflow-x:auto;"
    "border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px "
    "solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}th{background:#f3f3f3}"
    "img{max-width:100%}figcaption{font-size:12px;color:#555}"
)


def html_page(title: str, blocks: list) -> str:
    """A self-contained report.html of HTML-written blocks: one style for every report."""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{quoting.html(title)}"
        f"</title><style>{_STYLE}</style></head><body>" + "\n".join(blocks) + "</body></html>"
    )
