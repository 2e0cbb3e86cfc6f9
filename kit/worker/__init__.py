"""The pipeline worker: the only kit code that runs inside a stack's interpreter.

It imports the standard library, numpy, scipy, scikit-learn and (if present) threadpoolctl,
never the rest of kit: ``kit.envs.launch`` copies this package alone next to an empty ``kit``.
"""
