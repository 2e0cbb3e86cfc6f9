"""A pipeline whose error holds terminal escapes, control characters and 20,000 characters."""

SEEDS = ("init",)


def run(seeds):
    seeds["init"]
    raise ValueError("\x1b[31mred\x1b[0m \x1b]0;a title\x07bell\x08\x00 " + "long " * 4000)
