"""What goes wrong in the TUI, said as the CLI says it (kit.core.said.translate): a KitError, a
full disk, a read-only or missing path is the user's or the machine's to fix (one red line, and
the app goes on); anything else is a bug (the app ends with exit status 1 and one line naming
its traceback's log)."""

from __future__ import annotations

import functools

from ..core.said import translate
from ..views.quoting import markup


def say(app, error: BaseException) -> None:
    """``error`` as the user reads it, on the app's thread: one red toast (its text is text,
    never markup), or, for a bug, the app's end (KitApp.ended_by)."""
    said = translate(error)
    if said.bug:
        app.ended_by(said)
    else:
        app.notify(markup(said.text), severity="error", timeout=10)


def said_in_worker(app, error: BaseException) -> str | None:
    """``error``'s line, in a worker thread, for the work's own answer to show; None for a bug,
    which ends the app (on its thread: Textual's widgets are the app thread's alone)."""
    said = translate(error)
    if said.bug:
        app.call_from_thread(app.ended_by, said)
        return None
    return said.text


def guarded(handler):
    """A message handler or action of the app or a pane that starts work: what it raises is
    said (``say``). Textual's own ending of an unhandled exception prints a traceback; only its
    private methods could change that, so the work is caught here."""

    @functools.wraps(handler)  # Textual counts the handler's parameters through __wrapped__
    def run(self, *args, **kwargs):
        try:
            return handler(self, *args, **kwargs)
        except Exception as e:  # noqa: BLE001 - said in one line; a bug ends the app
            say(self.app, e)
        return None

    return run
