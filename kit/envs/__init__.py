"""Environments: platforms, interpreters, the stack catalogue, stacks of three kinds, builds."""
