"""Things said once and true: the seed run set is not listed twice, and the README's sklearn row
names the stacks the catalogue pairs (issue 26, item 8)."""

import re
import tomllib

from places import ROOT
from stored import budget_store

from kit.analysis.verdicts import stability_report, verdict_sets


def test_the_seed_set_is_listed_once_and_found_by_either_name(tmp_path):
    st = budget_store(tmp_path)
    sets = verdict_sets(st, "d" * 64)
    assert "seeds" in sets and "seed" not in sets
    assert list(stability_report(st, "d" * 64, "seed")) == ["seeds"]


def test_the_readme_sklearn_row_is_the_catalogue():
    cat = tomllib.loads((ROOT / "stacks" / "stacks.toml").read_text())
    stacks = {s for pair in cat["pairs"]["sklearn"]["linux-x86_64"] for s in pair}
    versions = sorted({cat["stack"][s]["scikit-learn"] for s in stacks})
    row = next(
        ln for ln in (ROOT / "README.md").read_text().splitlines() if ln.startswith("| `sklearn` |")
    )
    assert re.findall(r"1\.\d+\.\d+", row.split("at numpy")[0]) == versions
    words = {2: "two", 3: "three", 4: "four"}
    assert f"({words[len(stacks)]} stacks" in row
