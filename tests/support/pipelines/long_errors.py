"""A pipeline whose exception carries a 4 MiB message: its run's log keeps the traceback's head
and tail, never the whole message."""

SEEDS = ("init",)


def run(seeds):
    seeds["init"]
    raise ValueError("the start of it " + "z" * (4 * 1024 * 1024) + " the end of it")
