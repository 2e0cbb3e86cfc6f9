"""`kit tui`: the Textual app that walks a user from setup to "what to pin first"."""

from .app import KitApp

__all__ = ["KitApp"]
