"""kit: measure a reproducibility budget for a protein-sequence pipeline."""

# Only what the standard library can import: ``python -m kit.worker`` runs inside foreign
# interpreters (Python 3.9-3.14, old numpy) where kit's own dependencies are absent.
from .core.version import __version__

__all__ = ["__version__", "open"]


def __getattr__(name):
    # kit.open() for notebooks, imported on first use: the worker never pays for pandas
    if name == "open":
        from .notebook import open

        return open
    raise AttributeError(f"module 'kit' has no attribute {name!r}")
