"""Functions and methods defined in kit that nothing in kit refers to: dead code, or a helper only
the tests call (which belongs in tests/). Run it: `.venv/bin/python tests/support/unreferenced.py`
prints one line per such function and exits 1 if there is any.

A function counts as referenced when its name appears anywhere else in kit: as a name, an
attribute, an imported name, a keyword, or a word inside a string (a Textual action, a hook a
library looks up by name). Names that a framework calls by convention (dunder methods, Textual's
compose/on_*/watch_*/action_*/key_*/validate_*/render*) are not listed, nor is a decorated
function (the decorator registers it: a plan table, an @on handler, atexit); neither are the
entries of ALLOWED, each with its reason.
"""

import ast
import re
import sys
from pathlib import Path

from places import KIT

# name: why nothing in kit calls it
ALLOWED = {
    "dask_setup": "Dask calls a preload module's dask_setup(worker) by name "
    "(kit.runs.executing.node_classes is preloaded on every worker)",
    "_fill_text": "argparse's HelpFormatter calls it (kit.cli.common overrides it)",
    "_check_value": "argparse's ArgumentParser calls it (kit.cli.common overrides it)",
    "check_action": "Textual asks an app or screen whether a binding's action runs",
}
CONVENTION = re.compile(
    r"^(__\w+__|compose|on_\w+|watch_\w+|action_\w+|key_\w+|validate_\w+"
    r"|compute_\w+|render\w*|get_content_\w+)$"
)


def _definitions(tree):
    """(name, line) of the module-level functions and the methods of module-level classes."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield item.name, item.lineno, item


def _uses(tree, skip=()) -> set:
    """Every identifier and string word of ``tree``, the nodes in ``skip`` (a definition's own
    name) left out."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.add(node.name.rsplit(".", 1)[-1])
        elif isinstance(node, ast.keyword) and node.arg:
            out.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.update(re.findall(r"[A-Za-z_]\w*", node.value))
    return out


def _only_typing(node) -> bool:
    """Its decorators only describe it (a property, a static or class method, a cache): they
    register nothing, so it still needs a caller."""
    names = {
        d.id if isinstance(d, ast.Name) else getattr(d, "attr", "")
        for d in (dd.func if isinstance(dd, ast.Call) else dd for dd in node.decorator_list)
    }
    return names <= {
        "property",
        "staticmethod",
        "classmethod",
        "cache",
        "lru_cache",
        "cached_property",
        "wraps",
        "contextmanager",
        "guarded",
    }


def unreferenced(root: Path = KIT) -> list[str]:
    trees = {p: ast.parse(p.read_text(), str(p)) for p in sorted(root.rglob("*.py"))}
    used: set = set()
    for tree in trees.values():
        used |= _uses(tree)
    out = []
    for path, tree in trees.items():
        for name, line, node in _definitions(tree):
            if (
                name in used
                or name in ALLOWED
                or CONVENTION.match(name)
                or node.decorator_list
                and not _only_typing(node)
            ):
                continue
            out.append(f"{path.relative_to(root.parent)}:{line}: {name}")
    return out


if __name__ == "__main__":
    found = unreferenced()
    print("\n".join(found))
    sys.exit(1 if found else 0)
