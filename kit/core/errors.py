"""The one exception kit raises for problems a user can fix; the CLI prints it on one line, and
foreign text it quotes made one line (``one_line``, the worker's own: it says its errors so too)."""

# re-exported (``X as X``): kit's one way to quote foreign text
from ..worker.text import LINE_CHARS as LINE_CHARS
from ..worker.text import one_line as one_line


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
    the subject, a path it must not write through. Nothing was read past it or written.
    ``option``: the command-line option at fault, where one is (the CLI says it as a usage
    error for that option); ``reason``: what is wrong, without the option's name."""

    def __init__(self, message: str, option: str | None = None, reason: str | None = None):
        super().__init__(message)
        self.option = option
        self.reason = reason if reason is not None else message


class Failed(KitError):
    """Work kit started did not finish: a stack that did not build, a run that failed. ``reason``
    is the cause alone, without the message's lead-in, for a caller that lists several."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason if reason is not None else message


class TooSlow(Failed):
    """Work that ran out of its time: a fetch past its deadline, a page that took longer than
    its own. A caller with a fallback catches this type, never a message's words."""


class HttpStatus(KitError):
    """A server that answered with an HTTP status kit cannot use; ``status`` is that code (a
    caller tells a missing project, 404, from the rest by it, never by the message)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status
