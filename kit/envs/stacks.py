"""``Stack``: a stack as the runner needs it, an interpreter to start and an identity.

Every kind of stack (kit.envs.kinds) gives one from ``runnable()``; its identity goes into every
RunSpec made in it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stack:
    """A runnable stack: how to start its interpreter and what it is."""

    name: str
    command: tuple  # argv prefix, e.g. ("/usr/bin/arch", "-x86_64", ".../bin/python")
    identity: str  # hash of what the stack is; part of every RunSpec made in it
    attributes: dict  # python, numpy, scipy, scikit-learn, ... as declared or measured
