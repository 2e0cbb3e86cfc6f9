"""The saved outputs' comparison (tests/support/measured.py) fails on a word and passes a
measurement."""

import json
import re
import shutil

from measured import close, differences
from places import SAVED


def _copy(tmp_path, name: str) -> str:
    return shutil.copy(SAVED / name, tmp_path / name) and (tmp_path / name).read_text()


def test_one_changed_word_of_a_saved_output_fails(tmp_path):
    saved = _copy(tmp_path, "budget.txt")
    changed = saved.replace("Bits: pairs in which", "Bits: pairs where", 1)
    assert changed != saved
    assert differences(saved, changed)
    assert differences(saved, saved.replace("factor", "factors", 1))
    assert differences(saved, saved.replace("[exit 0]", "[exit 1]"))
    assert differences(saved, saved + "one more line\n")


def test_a_measured_number_on_another_host_passes_within_tolerance(tmp_path):
    saved = _copy(tmp_path, "budget.txt")
    line = next(ln for ln in saved.splitlines() if ln.startswith("threads ") and "e-" in ln)
    number = re.search(r"\d\.\de-\d\d", line).group()
    other = f"{float(number) * 0.65:.1e}"  # 2.5e-13 -> 1.6e-13: another BLAS kernel's digits
    assert not differences(saved, saved.replace(line, line.replace(number, other, 1)))
    # precision's 5.3e-05 a hundred times larger: not another kernel's noise
    line = next(ln for ln in saved.splitlines() if ln.startswith("precision ") and "e-05" in ln)
    number = re.search(r"\d\.\de-05", line).group()
    far = f"{float(number) * 100:.1e}"
    assert differences(saved, saved.replace(line, line.replace(number, far, 1)))
    near = f"{float(number) * 0.83:.1e}"  # 5.9e-05 -> 4.9e-05, as issue 43 saw
    assert not differences(saved, saved.replace(line, line.replace(number, near, 1)))
    # a flip count, a kernel name and a hash, where the column widths shift with them
    kernels = saved.replace("0/1", "1/1", 1).replace("Haswell", "SkylakeX")
    assert not differences(saved, kernels)
    sha = re.search(r"sha256 ([0-9a-f]{12})", saved).group(1)
    assert not differences(saved, saved.replace(sha, "0123456789ab"))
    assert differences(saved, saved.replace(sha, "0123456789"))  # an id of another shape


def test_json_outputs_compare_keys_exactly_and_numbers_by_tolerance(tmp_path):
    saved = _copy(tmp_path, "budget_--json.txt")
    head, body = saved.split("\n", 2)[:2], saved.split("\n", 2)[2]
    data, stderr = body.rsplit("--- stderr\n", 1)
    rows = json.loads(data)

    def again(value) -> str:
        return "\n".join(head) + "\n" + json.dumps(value, indent=1) + "\n--- stderr\n" + stderr

    assert not differences(saved, again(rows))
    row = next(r for r in rows["rows"] if isinstance(r.get("pairs"), int))
    moved = json.loads(json.dumps(rows))
    [r for r in moved["rows"] if r == row][0]["pairs"] = row["pairs"] + 1
    assert not differences(saved, again(moved))
    renamed = json.loads(json.dumps(rows))
    renamed["rows"][0]["factors"] = renamed["rows"][0].pop("factor")
    assert differences(saved, again(renamed))
    reworded = json.loads(json.dumps(rows))
    reworded["rows"][0]["factor"] = "repeats"
    assert differences(saved, again(reworded))


def test_close_reads_measurements_not_anything():
    assert close(5.9e-05, 4.9e-05) and close(2.5e-13, 1.6e-13) and close(0, 1e-13)
    assert close(1e-16, 1e-13) and close(2e-7, 8e-9)  # both at the rounding floor
    assert not close(5.9e-05, 5.9e-03) and not close(0, 0.5) and not close(1.0, -1.0)
    assert close(0, 1) and close(2, 1) and not close(0, 9)
