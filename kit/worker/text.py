"""Foreign text (a pipeline's error, a tool's stderr) as one printable line: kit and the worker
quote it the same way (kit.core.errors.one_line is this)."""

import re

LINE_CHARS = 300  # a quoted foreign line's length: a 20 MB "line" is never printed whole
LOG_BYTES = 64 * 1024  # of a failed run's traceback in its log: a 20 MB message never fills it
# a terminal's escape sequences: CSI (colours, cursor), OSC (a window title), two-byte ones
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[@-_]|\x9b[0-?]*[ -/]*[@-~]"
)


def one_line(text, limit: int = LINE_CHARS) -> str:
    """Foreign text (a pipeline's error, a tool's stderr) as one printable line: terminal
    escapes and control characters gone, whitespace one space, at most ``limit`` characters
    (the cut said with an ellipsis). Quoted in every error line that carries such text."""
    text = str(text)
    # a 20 MB message is read only as far as a line can show (escapes and spaces to spare)
    cut, text = len(text) > 16 * limit, _ESCAPES.sub("", text[: 16 * limit])
    # every other control character (C0, DEL, C1) is a space, then runs of spaces are one
    text = " ".join(
        "".join(" " if (ord(c) < 32 or 127 <= ord(c) < 160) else c for c in text).split()
    )
    return text if len(text) <= limit and not cut else text[: limit - 1].rstrip() + "…"


def head_and_tail(data: bytes, limit: int = LOG_BYTES) -> bytes:
    """``data`` if it holds at most ``limit`` bytes, else its first and last ``limit // 2``
    around a line that says how many were left out (a traceback's start says where, its end
    what)."""
    if len(data) <= limit:
        return data
    half = limit // 2
    return data[:half] + left_out(len(data) - 2 * half) + data[-half:]


def left_out(n: int) -> bytes:
    return f"\n… {n:,} bytes left out …\n".encode()
