"""What goes wrong in the TUI: a KitError is the user's to fix (said, and the app goes on);
anything else is a bug (the app ends with exit status 1 and one line naming its traceback's log)."""

from __future__ import annotations

import functools

from ..core.errors import KitError
from ..views.quoting import markup


def say(app, error: KitError) -> None:
    """A KitError as the user reads it: one red toast (its text is text, never markup)."""
    app.notify(markup(error), severity="error", timeout=10)


def guarded(handler):
    """A message handler or action of the app or a pane that starts work: its KitError is said,
    a bug ends the app (KitApp.bug). Textual's own ending of an unhandled exception prints a
    traceback; only its private methods could change that, so the work is caught here."""

    @functools.wraps(handler)  # Textual counts the handler's parameters through __wrapped__
    def run(self, *args, **kwargs):
        try:
            return handler(self, *args, **kwargs)
        except KitError as e:
            say(self.app, e)
        except Exception as e:  # noqa: BLE001 - a bug: its one line and exit status 1
            self.app.bug(e)
        return None

    return run
