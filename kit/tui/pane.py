"""What every tab's pane does: show its data when opened (read in a worker, drawn on the app's
thread), and name the widget keys go to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.containers import Vertical
from textual.message import Message

from .errors import guarded, say

if TYPE_CHECKING:  # the app imports every pane
    from .app import KitApp


class _Failed:
    """What a read raised, carried to the app's thread (said there, kit.tui.errors.say: a bug
    ends the app there, Textual's widgets being the app thread's alone)."""

    def __init__(self, error: Exception):
        self.error = error


class Pane(Vertical):
    MAIN: str | None = None  # the selector of the widget focused when the tab opens
    LEAVE: str | None = (
        None  # where Escape from a text field goes (None: MAIN, unless MAIN is that field)
    )

    # each slot's latest load (Pane.load): set on a pane's first load, not in __init__, which a
    # pane subclass need not call through
    _tickets: dict[str, int]

    if TYPE_CHECKING:  # a pane lives in kit's app alone, whose state (store, subject...) it reads

        @property
        def app(self) -> KitApp: ...  # type: ignore[override]  # (a narrower App)

    class Loaded(Message):
        """From a pane's reading worker to the pane: what ``read`` returned, for ``draw``."""

        def __init__(self, ticket: tuple[str, int], choice: tuple, draw, result):
            super().__init__()
            self.ticket, self.choice, self.draw, self.result = ticket, choice, draw, result

    def show(self) -> None:
        """(Re)read what the pane shows; called each time its tab opens."""

    def load(self, read, draw, slot: str = "show") -> None:
        """``read()`` in a worker thread (the store, the analyses, a report's plots: never on
        the app's thread, which draws and takes keys), then ``draw(result)`` on the app's
        thread. One read drawn per pane and ``slot`` (what it fills: the pane, a factor's pairs,
        ...): a newer load replaces an older one (which runs on, undrawn), and a result read for
        another subject than the tabs show by the time it arrives is dropped."""
        tickets = self.__dict__.setdefault("_tickets", {})
        tickets[slot] = ticket = tickets.get(slot, 0) + 1
        choice = self.app.choice()
        # not exclusive: a thread cannot be stopped midway, so a replaced read runs to its end
        # either way and its ticket drops it; cancelled, it raised WorkerCancelled in whoever
        # waited for the app's workers (the Setup tab now reads as the app starts)
        self.run_worker(
            lambda: self._in_worker(slot, ticket, choice, read, draw),
            thread=True,
            group=f"load-{slot}",
            exit_on_error=False,
        )

    def _in_worker(self, slot: str, ticket: int, choice: tuple, read, draw) -> None:
        try:
            result = read()
        except Exception as e:  # noqa: BLE001 - said or ended on the app's thread
            result = _Failed(e)
        self.post_message(self.Loaded((slot, ticket), choice, draw, result))

    @guarded
    def on_pane_loaded(self, m: Loaded) -> None:
        m.stop()
        slot, ticket = m.ticket
        if ticket != self._tickets.get(slot):
            return  # an earlier load's, replaced by a newer one
        self.settled(slot)
        if m.choice != self.app.choice():
            return  # read for what the tabs no longer show: the load for what they show draws
        if isinstance(m.result, _Failed):
            return say(self.app, m.result.error)
        m.draw(m.result)
        return None

    def drop(self, slot: str) -> None:
        """Forget the load of ``slot`` under way: what it reads is not drawn."""
        tickets = self.__dict__.setdefault("_tickets", {})
        tickets[slot] = tickets.get(slot, 0) + 1

    def settled(self, slot: str) -> None:
        """The latest load of ``slot`` has come back (drawn, failed or dropped)."""

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
        selector = self.LEAVE or self.MAIN
        if selector:
            self.query_one(selector).focus()
