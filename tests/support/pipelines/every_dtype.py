"""A pipeline with one output of each dtype kit stores (kit.worker.dtypes: bool, int8-int64,
uint8-uint64, float32, float64, fixed-width text and bytes), one big-endian and one bool whose
bytes are not 0 and 1 (both stored by their values), and a loose float64 output."""

import numpy as np

SEEDS = ("init",)
KINDS = {"ids": "proteins", "score": "metrics"}
NUMBERS = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float32", "float64")


def run(seeds):
    values = np.random.default_rng(seeds["init"]).random(6) * 100
    out = {name: values.astype(name) for name in NUMBERS}
    out["ids"] = np.array([f"P{i:05d}" for i in range(6)])
    out["tags"] = np.array([b"a", b"bc", b"def", b"", b"g", b"h"])
    out["big"] = values.astype(">f8")
    out["flags"] = np.array([0, 2, 1, 255, 0, 7], dtype=np.uint8).view(bool)
    out["score"] = np.array([values.sum()])
    out["noise"] = np.random.default_rng().random(3)  # unseeded: the repeat pair differs here
    return out
