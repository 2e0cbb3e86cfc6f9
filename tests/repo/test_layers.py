"""kit's packages are floors of one house: each imports only the floors below it, and no
module imports another that (directly or not) imports it back. Function-level imports count;
an import under `if TYPE_CHECKING:` counts for the floors but is no circle (it never runs)."""

import ast
import re
from pathlib import Path

from places import KIT

# lowest first; a package may import its own modules and any package listed before it
ORDER = (
    "worker",
    "core",
    "data",
    "envs",
    "runs",
    "analysis",
    "app",
    "views",
    "notebook",
    "tui",
    "cli",
)
TOP = set()  # the TUI is below the CLI: `kit tui` starts it, and it never imports the CLI


def modules() -> dict:
    """{module name: path} of every kit module."""
    out = {}
    for p in KIT.rglob("*.py"):
        parts = p.relative_to(KIT.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _type_only(tree) -> set:
    """The import nodes under ``if TYPE_CHECKING:``: read by type checkers, never run."""
    return {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
        for stmt in node.body
        for n in ast.walk(stmt)
    }


def imports(name: str, path: Path, known: dict, type_only: bool = True) -> set:
    """The kit modules ``name`` imports, at module level or inside functions (and, with
    ``type_only``, under ``if TYPE_CHECKING:``)."""
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    found = set()
    tree = ast.parse(path.read_text())
    skip = set() if type_only else _type_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("kit")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parent = base[: len(base) - node.level + 1]
                target = ".".join(parent + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("kit"):
                continue
            subs = {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known}
            found |= subs or {target}
    return {m for m in found if m in known and m != name}


def floor(module: str):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None  # kit itself (__init__, __main__): the door


def graph(type_only: bool = True) -> dict:
    known = modules()
    return {m: imports(m, p, known, type_only) for m, p in known.items()}


def test_every_import_goes_down_the_floors():
    wrong = []
    for m, deps in graph().items():
        f = floor(m)
        if f is None or f == "__main__":
            continue
        for d in deps:
            g = floor(d)
            if g is None:
                wrong.append(f"{m} imports the package root {d}")
            elif g not in ORDER or f not in ORDER:
                wrong.append(f"{m} -> {d}: a package outside {ORDER}")
            elif ORDER.index(g) > ORDER.index(f) or (f in TOP and g in TOP and f != g):
                wrong.append(f"{m} ({f}) imports {d} ({g}), a floor above")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_circles():
    g = graph(type_only=False)
    state, cycles = {}, []

    def visit(m, stack):
        state[m] = "open"
        for d in sorted(g[m]):
            if state.get(d) == "open":
                cycles.append(" -> ".join(stack[stack.index(d) :] + [d]))
            elif d not in state:
                visit(d, stack + [d])
        state[m] = "done"

    for m in sorted(g):
        if m not in state:
            visit(m, [m])
    assert not cycles, "\n".join(cycles)


def test_the_worker_imports_nothing_else_of_kit():
    for m, deps in graph().items():
        if floor(m) == "worker":
            assert all(floor(d) == "worker" for d in deps), (m, deps)


def test_only_the_worker_imports_scikit_learn():
    """kit's own process never pays scikit-learn's import (1.5 CPU s beside the runs): it is
    the worker's library; kit's analysis computes its AUC and ARI itself."""
    for name, path in modules().items():
        if name == "kit.worker" or name.startswith("kit.worker."):
            continue
        assert not _imported("sklearn", path), name


def _imported(package: str, path: Path) -> bool:
    """Whether the module at ``path`` imports ``package`` (or a module of it) anywhere."""
    for node in ast.walk(ast.parse(path.read_text())):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and not node.level
            else []
        )
        if any(n == package or n.startswith(f"{package}.") for n in names):
            return True
    return False


_SQL = re.compile(
    r"\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|PRAGMA|WITH|BEGIN|VACUUM)\b",
    re.IGNORECASE,
)


def _sql_run(path: Path) -> list:
    """The lines of the module at ``path`` that hand SQL text to an ``execute`` call."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("execute", "executemany", "executescript")
            and node.args
        ):
            continue
        first = node.args[0]
        text = (
            first.value
            if isinstance(first, ast.Constant)
            else "".join(v.value for v in first.values if isinstance(v, ast.Constant))
            if isinstance(first, ast.JoinedStr)
            else ""
        )
        if isinstance(text, str) and _SQL.match(text):
            out.append(node.lineno)
    return out


def test_no_sql_outside_the_store():
    """The store's SQLite index is kit.runs.store's alone: no other module imports sqlite3 or
    hands SQL to an execute call (a reader of the index's records asks the store)."""
    wrong = []
    for name, path in modules().items():
        if name == "kit.runs.store" or name.startswith("kit.runs.store."):
            continue
        if _imported("sqlite3", path):
            wrong.append(f"{name} imports sqlite3")
        wrong += [f"{name}:{line} executes SQL" for line in _sql_run(path)]
    assert not wrong, "\n".join(wrong)


def test_the_sql_check_sees_sql_and_sqlite3(tmp_path):
    """The check above finds what it looks for: it is not blind."""
    module = tmp_path / "m.py"
    module.write_text(
        'import sqlite3\ncon = sqlite3.connect("x")\ncon.execute("SELECT 1")\n'
        'con.execute(f"  insert into t values ({1})")\nrun.execute(plan)\n'
    )
    assert _imported("sqlite3", module) and _sql_run(module) == [3, 4]


def test_every_kit_import_names_a_module_that_exists():
    """A function-level import is only checked when it runs: after a module moves, a relative
    import left one dot short would fail on the first user who reaches it."""
    known = modules()
    missing = []
    for name, path in known.items():
        is_pkg = path.name == "__init__.py"
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                target = ".".join(
                    base[: len(base) - node.level + 1] + ([node.module] if node.module else [])
                )
            elif isinstance(node, ast.ImportFrom):
                target = node.module or ""
            else:
                continue
            if target.startswith("kit") and target not in known:
                missing.append(f"{name}: {target}")
    assert not missing, missing
