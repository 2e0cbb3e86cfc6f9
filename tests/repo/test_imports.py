"""kit imports at the top of its modules, where every static tool sees the dependency; an
import inside a function is a decision (#57), listed with its reason in
tests/support/in_function_imports.txt. A new one fails here until it is listed (or moved to the
top), and a listed one that is gone fails too, so the list says what the code does."""

import ast
import re
from pathlib import Path

from places import KIT, SUPPORT

LIST = SUPPORT / "in_function_imports.txt"
# the reasons an import may stay inside a function (the list's header says each in full)
CATEGORIES = {
    "startup": "a heavy import kept off start-up",
    "torch-optional": "the worker's optional torch",
    "optional": "a package that may be absent, its ImportError handled",
    "cycle": "at the top it would be a circular import",
    "worker": "runs in a stack's interpreter",
}


def module_name(path: Path, root: Path = KIT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(
    node: ast.Import | ast.ImportFrom, module: str, is_pkg: bool, known: set[str]
) -> list[str]:
    """The absolute names of the modules an import statement imports: a from-import's module,
    or each of kit's modules it names (``from ..data import uniprot``: kit.data.uniprot)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = module.split(".") if is_pkg else module.split(".")[:-1]
        source = ".".join(
            base[: len(base) - node.level + 1] + ([node.module] if node.module else [])
        )
    else:
        source = node.module or ""
    subs = [f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in known]
    return list(dict.fromkeys(subs + ([source] if len(subs) < len(node.names) else [])))


def in_function_imports(root: Path = KIT) -> dict[tuple[str, str], list[int]]:
    """{("module:function", imported module): [line, ...]} of every import made inside a
    function body (a method's function is Class.method; a nested one outer.inner)."""
    found: dict[tuple[str, str], list[int]] = {}
    known = {module_name(p, root) for p in root.rglob("*.py")}
    for path in sorted(root.rglob("*.py")):
        visit(ast.parse(path.read_text()), module_name(path, root), path, known, [], False, found)
    return found


def visit(node, module, path, known, names, in_function, found) -> None:
    """in_function_imports' walk of one module (``names``: the enclosing class and function
    names; ``in_function``: inside a function's body)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            visit(child, module, path, known, [*names, child.name], True, found)
        elif isinstance(child, ast.ClassDef):
            visit(child, module, path, known, [*names, child.name], in_function, found)
        elif isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
            for target in imported(child, module, path.name == "__init__.py", known):
                key = (f"{module}:{'.'.join(names)}", target)
                found.setdefault(key, []).append(child.lineno)
        else:
            visit(child, module, path, known, names, in_function, found)


LINE = re.compile(
    r"^(?P<where>\S+:\S+)\s+(?P<target>\S+)\s+(?P<category>\S+)\s*(#\s*(?P<note>.*))?$"
)


def listed(text: str) -> dict[tuple[str, str], tuple[str, str]]:
    """{("module:function", imported module): (category, note)} of the list's lines."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = LINE.match(line)
        assert m, f"in_function_imports.txt:{n}: not MODULE:FUNCTION IMPORTED CATEGORY [# why]"
        key = (m["where"], m["target"])
        assert key not in out, f"in_function_imports.txt:{n}: {key} is listed twice"
        out[key] = (m["category"], (m["note"] or "").strip())
    return out


def problems(found: dict, allowed: dict) -> list[str]:
    """What differs between the code and the list, one line each."""
    out = [
        f"{where} imports {target} inside the function (line {lines[0]}): import it at the top "
        f"of the module, or list it in tests/support/in_function_imports.txt with its reason "
        f"({', '.join(CATEGORIES)})"
        for (where, target), lines in sorted(found.items())
        if (where, target) not in allowed
    ]
    out += [
        f"{where} no longer imports {target} inside the function: delete its line from "
        f"tests/support/in_function_imports.txt"
        for where, target in sorted(allowed)
        if (where, target) not in found
    ]
    for (where, target), (category, note) in sorted(allowed.items()):
        if category not in CATEGORIES:
            out.append(f"{where} {target}: {category!r} is no reason ({', '.join(CATEGORIES)})")
        elif category == "cycle" and "->" not in note:
            out.append(f"{where} {target}: a cycle's note names it (a -> b -> a)")
    return out


def test_every_in_function_import_is_listed_with_its_reason():
    assert problems(in_function_imports(), listed(LIST.read_text())) == []


def test_a_new_in_function_import_and_a_stale_line_are_each_named(tmp_path):
    kit = tmp_path / "kit"
    (kit / "core").mkdir(parents=True)
    (kit / "__init__.py").write_text("")
    (kit / "core" / "__init__.py").write_text("")
    (kit / "core" / "b.py").write_text("")
    (kit / "core" / "a.py").write_text(
        "import os\n\n\ndef f():\n    from . import b\n    import json\n    return b, json, os\n\n\n"
        "class C:\n    def m(self):\n        def inner():\n            import numpy\n\n"
        "            return numpy\n\n        return inner\n"
    )
    found = in_function_imports(kit)
    assert found == {
        ("kit.core.a:f", "kit.core.b"): [5],
        ("kit.core.a:f", "json"): [6],
        ("kit.core.a:C.m.inner", "numpy"): [13],
    }
    allowed = listed(
        "# a comment\n"
        "kit.core.a:f  kit.core.b  cycle  # kit.core.b -> kit.core.a -> kit.core.b\n"
        "kit.core.a:C.m.inner  numpy  startup  # keeps off numpy\n"
        "kit.core.a:g  kit.core.c  startup\n"
        "kit.core.a:f  requests  fast\n"
    )
    said = problems(found, allowed)
    assert said[0].startswith("kit.core.a:f imports json inside the function (line 6)")
    assert said[1].startswith("kit.core.a:f no longer imports requests inside the function")
    assert said[2].startswith("kit.core.a:g no longer imports kit.core.c inside the function")
    assert "'fast' is no reason" in said[3] and len(said) == 4


def test_a_cycle_names_its_circle():
    allowed = listed("kit.core.a:f  kit.core.b  cycle  # would be circular\n")
    found = {("kit.core.a:f", "kit.core.b"): [3]}
    assert problems(found, allowed) == [
        "kit.core.a:f kit.core.b: a cycle's note names it (a -> b -> a)"
    ]
