"""kit: measure a reproducibility budget for a protein-sequence pipeline."""

# Deliberately empty of imports: ``python -m kit.worker`` runs inside foreign interpreters
# (Python 3.9-3.14, old numpy) where kit's own dependencies are absent.
__version__ = "0.1.0"
