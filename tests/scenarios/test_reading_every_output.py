"""Every reader prints what it printed when the saved copy was made: a refactor changes no output.

The copy under tests/support/saved_outputs/ holds every reading command's output on the
every-kind store (tests/support/outputs.py), with times masked. A change that is meant to alter an
output saves the copy anew (``KIT_UPDATE_OUTPUTS=1``) and the diff shows what it altered.

The copy holds on any machine of its kind (the cores, Python and factors in MACHINE.json; a
store of other factors is another set of outputs, and the test says so in one line and
skips). On the host fingerprint that saved it (the CPU's flags and the BLAS kernels
threadpoolctl reports, not the CPU's model name) every byte must match. On another
fingerprint the saved text is a template (tests/support/measured.py): every line, word and mark
exactly, while a measured token -- a number, a hash or run id, a BLAS kernel name -- only
by its shape and within a factor of ten (small counts within two), so that another kernel's
last digits pass and a changed word fails.
"""

import difflib
import hashlib
import json
import os
import platform
from pathlib import Path

import pytest
from measured import differences
from outputs import dump, file_name, write
from places import SAVED

pytestmark = pytest.mark.slow
MACHINE = "MACHINE.json"  # what the outputs depend on beyond kit: the CPU, cores, stacks held
# what must match for the copy to apply at all: a store of other factors holds other readers
_SAME_KIND = ("cores", "python", "system", "factors")


def _cpu() -> tuple:
    """(model name, sha256 of the sorted CPU flags) of this machine; flags None off Linux."""
    info = Path("/proc/cpuinfo")
    lines = info.read_text().splitlines() if info.exists() else []

    def field(key):
        return next(
            (ln.split(":", 1)[1].strip() for ln in lines if ln.split(":")[0].strip() == key), None
        )

    flags = field("flags") or field("Features")
    return (
        field("model name") or platform.processor(),
        hashlib.sha256(" ".join(sorted(flags.split())).encode()).hexdigest()[:16]
        if flags
        else None,
    )


def _blas() -> list:
    """The BLAS kernels this interpreter's numpy and scipy load, as threadpoolctl names them."""
    import numpy  # noqa: F401  (loads the BLAS so threadpoolctl sees it)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info

    return sorted(
        f"{p.get('internal_api')} {p.get('version')} {p.get('architecture')}"
        for p in threadpool_info()
        if p.get("user_api") == "blas"
    )


def _machine(held: dict) -> dict:
    cpu, flags = _cpu()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "system": platform.system(),
        "factors": sorted(held["factors"]),
        "fingerprint": {"cpu_flags": flags, "blas": _blas()},
    }


def _diff(saved: str, now: str) -> str:
    return "".join(
        difflib.unified_diff(saved.splitlines(True), now.splitlines(True), "saved", "now", n=1)
    )[:3000]


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
    other = {k: (saved_on.get(k), machine[k]) for k in _SAME_KIND if saved_on.get(k) != machine[k]}
    if other:
        pytest.skip(
            f"the saved outputs are of another kind of machine ({other}): "
            "KIT_UPDATE_OUTPUTS=1 saves them for this one (after checking them)"
        )
    saved = {p.name: p.read_text() for p in SAVED.glob("*.txt")}
    assert sorted(mine) == sorted(saved), "a reader was added or removed"
    changed = [n for n in sorted(mine) if mine[n] != saved[n]]
    if saved_on.get("fingerprint") == machine["fingerprint"]:  # the saving host: every byte
        assert not changed, (
            f"{len(changed)} outputs changed, first {changed[0]}:\n"
            f"{_diff(saved[changed[0]], mine[changed[0]])}"
        )
        return
    wrong = {n: differences(saved[n], mine[n]) for n in changed}
    wrong = {n: d for n, d in wrong.items() if d}
    assert not wrong, (
        f"{len(wrong)} outputs changed beyond what another host measures "
        f"(tests/support/measured.py), first {next(iter(wrong))}: "
        f"{wrong[next(iter(wrong))][:5]}\n"
        f"{_diff(saved[next(iter(wrong))], mine[next(iter(wrong))])}"
    )
