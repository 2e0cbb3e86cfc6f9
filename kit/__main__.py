"""``python -m kit``: the same as the ``kit`` command (for an interpreter with kit on its path)."""

import sys

from .cli import main

sys.exit(main())
