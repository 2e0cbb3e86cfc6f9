"""A pipeline that never returns: only its deadline (--timeout) ends it."""

SEEDS = ("init",)


def run(seeds):
    seeds["init"]
    while True:
        pass
