"""A saved output read as a template: its wording exact, its measurements within a tolerance.

Two machines of one kind (same CPU model name, cores, Python) still measure differently: the
BLAS kernel OpenBLAS picks follows the CPU's flags (Haswell on one, SkylakeX on another), and
the last digits of a reduction, a sign flip or a hash follow the kernel. ``differences(saved,
now)`` compares two outputs so that such a host passes and a changed word fails:

- text: every line, every word and every punctuation mark exactly (runs of spaces count as
  one, so a table whose column is one letter wider keeps its shape); a measured token --
  a number, a hex id or hash, a BLAS kernel name, the OS build (platform.platform()) -- only by its
  shape and, for a number, its
  size (``close``);
- JSON (``--json`` outputs): the keys and the structure exactly, numeric leaves by ``close``,
  string leaves as text, booleans exactly except a stage's bitwise identity (``identical``:
  the same measurement as a flip count in the text tables).
"""

from __future__ import annotations

import json
import math
import re

# OpenBLAS's kernel (core) names: which one a machine gets follows its CPU flags, not its name
KERNELS = (
    "Prescott",
    "Core2",
    "Penryn",
    "Dunnington",
    "Nehalem",
    "Sandybridge",
    "Haswell",
    "SkylakeX",
    "Cooperlake",
    "SapphireRapids",
    "Atom",
    "Zen",
    "Barcelona",
    "Opteron",
    "Bulldozer",
    "Piledriver",
    "Steamroller",
    "Excavator",
    "Katmai",
    "Coppermine",
    "Northwood",
    "Banias",
    "Yonah",
    "Athlon",
    "Nano",
    "Armv8",
    "CortexA53",
    "CortexA57",
    "CortexA72",
    "CortexA73",
    "NeoverseN1",
    "NeoverseN2",
    "NeoverseV1",
    "VORTEX",
)
_NUMBER = r"[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?"
_TOKEN = re.compile(
    rf"(?P<platform>\b(?:Linux|Darwin|Windows)-[\w.+-]*\d[\w.+-]*)"
    rf"|(?P<hex>\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{{7,64}}\b)"
    rf"|(?P<kernel>\b(?:{'|'.join(KERNELS)})\b)"
    rf"|(?P<rule>-{{3,}})"
    rf"|(?P<number>(?<![\w.]){_NUMBER}(?![\w]))",
    re.IGNORECASE,
)


def close(saved: float, now: float) -> bool:
    """Two measurements of one quantity on two hosts: equal, or within a factor of ten (a
    difference that moves a 5.9e-05 to 4.9e-05 passes, one that moves it to 5.9e-03 fails);
    two numbers below 1e-6 pass whatever their ratio (one kernel's exact reduction against
    another's last bits: 1e-16 against 1e-13, float32's 1e-7 against 1e-9). Small counts (a flipped
    pair out of two) differ by one or two."""
    if saved == now:
        return True
    a, b = abs(saved), abs(now)
    if isinstance(saved, int) and isinstance(now, int):  # counts (JSON ints, "0/2" in text)
        return abs(saved - now) <= max(2, 0.5 * max(a, b))
    if max(a, b) < 1e-6:  # both at float32's rounding floor or below: where the kernels differ
        return True
    return (saved > 0) == (now > 0) and abs(math.log10(a / b)) <= 1


def _tokens(line: str) -> list:
    """(kind, text) pieces of one line: measured tokens and the words between them."""
    out, at = [], 0
    for m in _TOKEN.finditer(line):
        words = " ".join(line[at : m.start()].split())
        if words:
            out.append(("words", words))
        out.append((m.lastgroup, m.group()))
        at = m.end()
    words = " ".join(line[at:].split())
    if words:
        out.append(("words", words))
    return out


def _number(text: str):
    text = text.replace(",", "")
    return float(text) if "." in text or "e" in text.lower() else int(text)


def _same_token(saved: tuple, now: tuple) -> bool:
    (kind, a), (kind_now, b) = saved, now
    if kind != kind_now:
        return False
    if kind == "words":
        return a == b
    if kind == "hex":
        return len(a) == len(b)
    if kind in ("kernel", "rule"):
        return True
    if kind == "platform":  # the OS build: Linux-6.18.44-fc-v1045-x86_64-... on each host its own
        return a.split("-")[0] == b.split("-")[0]
    # a count stays a count; a float may change its form (repr writes 1e-4 as 0.0001, 9e-05)
    x, y = _number(a), _number(b)
    return type(x) is type(y) and close(x, y)


def text_differences(saved: str, now: str) -> list:
    """Lines of ``now`` that are not ``saved`` read as a template: [(line number, saved, now)]."""
    old, new = saved.split("\n"), now.split("\n")
    if len(old) != len(new):
        return [(0, f"{len(old)} lines", f"{len(new)} lines")]
    out = []
    for i, (a, b) in enumerate(zip(old, new, strict=True), 1):
        if a == b:
            continue
        ta, tb = _tokens(a), _tokens(b)
        if len(ta) != len(tb) or not all(_same_token(x, y) for x, y in zip(ta, tb, strict=True)):
            out.append((i, a, b))
    return out


def _json_differences(saved, now, where: str) -> list:
    if isinstance(saved, bool) or isinstance(now, bool):  # bitwise identity is measured
        loose = ".identical" in where and isinstance(saved, bool) and isinstance(now, bool)
        return [] if saved == now or loose else [(where, saved, now)]
    if isinstance(saved, (int, float)) and isinstance(now, (int, float)):
        return [] if close(saved, now) else [(where, saved, now)]
    if isinstance(saved, dict) and isinstance(now, dict):
        if sorted(saved) != sorted(now):
            return [(where, sorted(saved), sorted(now))]
        return [d for k in saved for d in _json_differences(saved[k], now[k], f"{where}.{k}")]
    if isinstance(saved, list) and isinstance(now, list):
        if len(saved) != len(now):
            return [(where, f"{len(saved)} items", f"{len(now)} items")]
        return [
            d
            for i, (a, b) in enumerate(zip(saved, now, strict=True))
            for d in _json_differences(a, b, f"{where}[{i}]")
        ]
    if isinstance(saved, str) and isinstance(now, str):
        return [(where, saved, now)] if text_differences(saved, now) else []
    return [] if saved == now else [(where, saved, now)]


def differences(saved: str, now: str) -> list:
    """What ``now`` changed from ``saved`` beyond a measurement's tolerance; [] when nothing.

    A saved output is ``$ kit ...`` and ``[exit N]`` lines, stdout and ``--- stderr``; when
    its stdout is JSON it is compared as JSON."""
    if saved == now:
        return []
    if saved.split("\n", 2)[:2] != now.split("\n", 2)[:2]:  # the command and its exit code
        return [(1, "\n".join(saved.split("\n", 2)[:2]), "\n".join(now.split("\n", 2)[:2]))]
    parts = [text.split("\n", 2) for text in (saved, now)]
    if all(len(p) == 3 for p in parts) and parts[0][:2] == parts[1][:2]:
        (head, code, body), (_, _, body_now) = parts
        split = [b.rsplit("--- stderr\n", 1) for b in (body, body_now)]
        if head.endswith("--json") and all(len(s) == 2 for s in split):
            try:
                data, data_now = json.loads(split[0][0]), json.loads(split[1][0])
            except ValueError:
                pass
            else:
                return _json_differences(data, data_now, "$") + text_differences(
                    split[0][1], split[1][1]
                )
    return text_differences(saved, now)
