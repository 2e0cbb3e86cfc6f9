"""The one exception kit raises for problems a user can fix; the CLI prints it on one line."""


class KitError(Exception):
    """A user-facing error: bad input, a missing dataset, an unavailable stack."""

    exit_code = 1  # the CLI's exit status for it (kit.cli.main); a subclass may say another


class Unreachable(KitError):
    """A server that could not be reached at all (offline, or nothing listens there): for a
    caller with a fallback, information rather than a failure."""


class WrongAnswer(KitError):
    """A server that answered, but wrongly (an id twice, rows it cannot have meant, not the
    count asked for): refused whole, nothing kept. Exit 3; `kit data fetch --offline-ok` says
    an unreachable server with 75 (sysexits' EX_TEMPFAIL: try again later), so a wrong answer
    never reads as "offline"."""

    exit_code = 3


class Damaged(KitError):
    """Something the store holds is not what kit wrote there (a run's row, an array, the index,
    the arrays folder): the one line names it and `kit store check --repair`."""


class NotFound(KitError):
    """What was asked for is not there: no such dataset, pipeline, factor, pair or run stored
    (the one line says what makes it). A caller with a fallback catches this, never a message."""


class Refused(KitError):
    """Input kit will not take: a document that breaks its schema, an option that does not fit
    the subject, a path it must not write through. Nothing was read past it or written."""


class Failed(KitError):
    """Work kit started did not finish: a stack that did not build, a run that failed. ``reason``
    is the cause alone, without the message's lead-in, for a caller that lists several."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason if reason is not None else message


_ESCAPES = None  # compiled on first use: a terminal's escape sequences (CSI, OSC, two-byte)
LINE_CHARS = 300  # a quoted foreign line's length: a 20 MB "line" is never printed whole


def one_line(text, limit: int = LINE_CHARS) -> str:
    """Foreign text (a pipeline's error, a tool's stderr) as one printable line: terminal
    escapes and control characters gone, whitespace one space, at most ``limit`` characters
    (the cut said with an ellipsis). Quoted in every error line that carries such text."""
    import re

    global _ESCAPES
    if _ESCAPES is None:
        _ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
                              r"|\x1b[@-_]|\x9b[0-?]*[ -/]*[@-~]")
    text = _ESCAPES.sub("", str(text))
    # every other control character (C0, DEL, C1) is a space, then runs of spaces are one
    text = " ".join("".join(" " if (ord(c) < 32 or 127 <= ord(c) < 160) else c
                            for c in text).split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"
