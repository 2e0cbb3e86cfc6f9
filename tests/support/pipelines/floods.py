"""A pipeline that writes 256 MiB to stderr, then fails: kit keeps the end of it only."""

import os

SEEDS = ("init",)


def run(seeds):
    seeds["init"]
    chunk = b"y" * (1024 * 1024 - 1) + b"\n"
    for _ in range(256):
        os.write(2, chunk)
    os.write(2, b"the last line before the failure\n")
    raise ValueError("flooded")
