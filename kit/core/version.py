"""kit's version, written into bundles and reports."""

__version__ = "0.1.0"
