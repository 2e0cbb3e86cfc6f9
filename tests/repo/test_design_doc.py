"""docs/design.md names every module of kit by its concern: a new module is added there too."""

import re

from places import ROOT


def test_every_module_is_named_in_the_design():
    doc = (ROOT / "docs" / "design.md").read_text()
    missing = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "kit").rglob("*.py"))
        if p.stem != "__init__" and not re.search(rf"\b{re.escape(p.stem)}\b", doc)
    ]
    assert not missing, f"docs/design.md does not name {', '.join(missing)}"
