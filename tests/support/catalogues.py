"""A small real catalogue for tests that build stacks with uv: two stacks of the repository's."""

import shutil
from pathlib import Path

from places import ROOT

PAIR = ("np1-sk152", "np1-sk191")  # numpy 1.26.4 with scikit-learn 1.5.2 and 1.9.1, Python 3.12


def sklearn_pair(home: Path) -> Path:
    """``home``/catalogue: PAIR's lock folders and a stacks.toml pairing them for sklearn."""
    cat = home / "catalogue"
    cat.mkdir()
    for name in PAIR:
        shutil.copytree(ROOT / "stacks" / name, cat / name)
    entries = "".join(
        f'[stack.{n}]\nlock = "{n}"\npython = "3.12"\nnumpy = "1.26.4"\n'
        f'scikit-learn = "{n[-3]}.{n[-2]}.{n[-1]}"\n'
        f'blas = {{ linux-x86_64 = "OpenBLAS", macos-arm64 = "OpenBLAS" }}\n\n'
        for n in PAIR
    )
    pairs = "".join(
        f'{p} = [["{PAIR[0]}", "{PAIR[1]}"]]\n' for p in ("linux-x86_64", "macos-arm64")
    )
    (cat / "stacks.toml").write_text(
        f'reference = "{PAIR[1]}"\n\n{entries}[pairs.sklearn]\n{pairs}'
    )
    return cat
