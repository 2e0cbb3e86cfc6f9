"""What every tab's pane does: show its data when opened, and name the widget keys go to."""

from __future__ import annotations

from textual.containers import Vertical


class Pane(Vertical):
    MAIN = None   # the selector of the widget focused when the tab opens
    LEAVE = None  # where Escape from a text field goes (None: MAIN, unless MAIN is that field)

    def show(self) -> None:
        """(Re)read what the pane shows; called each time its tab opens."""

    def text_width(self) -> int:
        """The columns a text of kit's fits in this pane, a scrollbar's left free (before the
        pane's first layout: the screen's less the tab's padding)."""
        return (self.size.width or self.app.size.width - 2) - 2

    def focus_main(self) -> None:
        if self.MAIN:
            self.query_one(self.MAIN).focus()

    def leave_field(self) -> None:
        """Escape from a text field: focus a widget that is not one, so that the next keys are
        commands again (a tab whose main widget is the field leaves it for LEAVE)."""
        self.query_one(self.LEAVE or self.MAIN).focus()
