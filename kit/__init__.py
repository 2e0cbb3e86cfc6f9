"""kit: measure a reproducibility budget for a protein-sequence pipeline."""

# Only what the standard library can import: ``python -m kit.worker`` runs inside foreign
# interpreters (Python 3.9-3.14, old numpy) where kit's own dependencies are absent.
from .core.version import __version__

__all__ = ["Kit", "__version__", "open"]


def __getattr__(name):
    # kit.open() for notebooks and kit.Kit, the facade every front end calls, imported on
    # first use: the worker never pays for pandas or the store
    if name == "open":
        from .notebook import open

        return open
    if name == "Kit":
        from .app.facade import Kit

        return Kit
    raise AttributeError(f"module 'kit' has no attribute {name!r}")
