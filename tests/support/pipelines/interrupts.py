"""A pipeline that raises KeyboardInterrupt itself (as a library's own signal handling may)."""

SEEDS = ("init",)


def run(seeds):
    seeds["init"]
    raise KeyboardInterrupt
