"""What every tab's pane does: show its data when opened, and name the widget keys go to."""

from __future__ import annotations

from textual.containers import Vertical


class Pane(Vertical):
    MAIN = None  # the selector of the widget focused when the tab opens

    def show(self) -> None:
        """(Re)read what the pane shows; called each time its tab opens."""

    def focus_main(self) -> None:
        if self.MAIN:
            self.query_one(self.MAIN).focus()
