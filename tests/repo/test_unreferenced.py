"""No dead code in kit: every function and method it defines is referred to somewhere in kit
(tests/support/unreferenced.py says how that is judged, and which framework hooks are exempt)."""

import subprocess
import sys

from places import SUPPORT
from unreferenced import unreferenced


def test_every_function_kit_defines_is_used_in_kit():
    assert unreferenced() == []


def test_a_function_only_a_test_calls_is_named(tmp_path):
    kit = tmp_path / "kit"
    kit.mkdir()
    (kit / "a.py").write_text(
        "import atexit\n\n\ndef used():\n    return 1\n\n\n"
        "def only_tests():\n    return used()\n\n\n"
        "@atexit.register\ndef hooked():\n    pass\n\n\n"
        "class C:\n    @property\n    def unread(self):\n        return 1\n\n"
        "    def __len__(self):\n        return 0\n"
    )
    assert unreferenced(kit) == ["kit/a.py:8: only_tests", "kit/a.py:19: unread"]


def test_the_script_prints_nothing_and_exits_0_on_kit():
    done = subprocess.run(
        [sys.executable, str(SUPPORT / "unreferenced.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "")
