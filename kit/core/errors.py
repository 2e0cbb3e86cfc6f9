"""The one exception kit raises for problems a user can fix; the CLI prints it on one line."""


class KitError(Exception):
    """A user-facing error: bad input, a missing dataset, an unavailable stack."""


class Unreachable(KitError):
    """A server that could not be reached at all (offline, or nothing listens there): for a
    caller with a fallback, information rather than a failure."""


class Damaged(KitError):
    """Something the store holds is not what kit wrote there (a run's row, an array, the index,
    the arrays folder): the one line names it and `kit store check --repair`."""
