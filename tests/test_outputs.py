"""Every reader prints what it printed when the saved copy was made: a refactor changes no output.

The copy under tests/saved_outputs/ holds every reading command's output on the
every-kind store (tests/outputs.py), with times masked. A change that is meant to alter an
output saves the copy anew (``KIT_UPDATE_OUTPUTS=1``) and the diff shows what it altered.
"""

import difflib
import json
import os
import platform
from pathlib import Path

import pytest

from outputs import dump, file_name, write

pytestmark = pytest.mark.slow
SAVED = Path(__file__).parent / "saved_outputs"
MACHINE = "MACHINE.json"  # what the outputs depend on beyond kit: the CPU, cores, stacks held


def _machine(held: dict) -> dict:
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() \
        else platform.processor()
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "system": platform.system(), "factors": sorted(held["factors"])}


def test_every_reader_prints_what_it_printed_before(on_every_kind):
    mine = {file_name(k): v for k, v in dump(stable=True).items()}
    machine = _machine(on_every_kind)
    if os.environ.get("KIT_UPDATE_OUTPUTS"):
        for old in SAVED.glob("*.txt"):
            old.unlink()
        write(SAVED, dump(stable=True))
        (SAVED / MACHINE).write_text(json.dumps(machine, indent=1) + "\n")
        pytest.skip(f"saved {len(mine)} outputs anew in {SAVED}")
    saved_on = json.loads((SAVED / MACHINE).read_text())
    if saved_on != machine:
        pytest.skip(f"the saved outputs were made on {saved_on}, this is {machine}: "
                    "KIT_UPDATE_OUTPUTS=1 saves them for this machine (after checking them)")
    saved = {p.name: p.read_text() for p in SAVED.glob("*.txt")}
    assert sorted(mine) == sorted(saved), "a reader was added or removed"
    changed = [n for n in sorted(mine) if mine[n] != saved[n]]
    diff = "".join(difflib.unified_diff(saved[changed[0]].splitlines(True),
                                        mine[changed[0]].splitlines(True), "saved", "now",
                                        n=1)) if changed else ""
    assert not changed, f"{len(changed)} outputs changed, first {changed[0]}:\n{diff[:3000]}"
