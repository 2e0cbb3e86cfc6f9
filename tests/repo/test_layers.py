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


# The front ends (the CLI, the TUI, the notebook) call kit.Kit, the facade (kit.app.facade), and
# lay out its records with kit.views, standing on kit.core (errors, names, callbacks). What they
# still import below the facade is listed here with its reason: a list to shrink, never to grow.
FRONTS = ("kit.cli", "kit.tui", "kit.notebook")
FLOOR = ("kit.app.facade", "kit.views", "kit.core", *FRONTS)
BELOW_THE_FACADE = {
    # argument types and options: the parsers and records a command line and the Plan's fields
    # share with planning (their ValueError is a usage error), the names of the factors' help
    ("kit.cli.common", "kit.runs.planning.options"): "argument types (parsers of options)",
    ("kit.cli.run", "kit.runs.planning.options"): "SVD_ITERS, --iters' default levels",
    ("kit.tui.plan", "kit.runs.planning.options"): "PlanOptions, built from the Plan's fields",
    ("kit.cli.run", "kit.envs.descriptions"): "the factors' descriptions in --help",
    ("kit.cli.common", "kit.worker.names"): "the one 'did you mean' of a choice typed",
    ("kit.cli.common", "kit.runs.executing.cluster_kinds"): "--cluster's argument type",
    ("kit.cli.common", "kit.envs.kinds"): "--stack's usage error, said by the parser",
    ("kit.cli.common", "kit.runs.store.records"): "--json: the records' one JSON form",
    ("kit.cli.system", "kit.data.dataset"): "the built-in set's name and first-look size",
    ("kit.tui.app", "kit.data.dataset"): "the built-in set's first-look size",
    ("kit.tui.app", "kit.envs.platforms"): "the machine the app plans for (tests inject one)",
    # the TUI's drawing: the models' order and the amplification curves of a budget's rows
    ("kit.tui.budget", "kit.analysis.compare"): "the models' order in the budget's table",
    ("kit.tui.budget", "kit.analysis.amplify"): "the amplification curves drawn from its rows",
    # the Plan tab's choices before a subject is read: what this machine and a subject offer
    ("kit.tui.plan", "kit.runs.planning.availability"): "what this machine can plan",
    ("kit.tui.plan", "kit.runs.planning.offers"): "the factors a subject offers",
    ("kit.tui.plan", "kit.envs.external"): "the added stacks that hold torch",
    # not moved behind the facade yet (#55): data, stacks, cluster and Setup's commands
    ("kit.cli.cluster", "kit.envs.catalogue"): "not behind the facade yet",
    ("kit.cli.cluster", "kit.envs.kinds"): "not behind the facade yet",
    ("kit.cli.cluster", "kit.runs.executing.answers"): "not behind the facade yet",
    ("kit.cli.cluster", "kit.runs.executing.cluster_kinds"): "not behind the facade yet",
    ("kit.cli.cluster", "kit.runs.executing.cluster_settings"): "not behind the facade yet",
    ("kit.cli.cluster", "kit.runs.executing.dask_executor"): "not behind the facade yet",
    ("kit.cli.data", "kit.data"): "not behind the facade yet",
    ("kit.cli.data", "kit.data.answer"): "not behind the facade yet",
    ("kit.cli.data", "kit.data.dataset"): "not behind the facade yet",
    ("kit.cli.data", "kit.data.http"): "not behind the facade yet",
    ("kit.cli.data", "kit.data.importer"): "not behind the facade yet",
    ("kit.cli.data", "kit.data.uniprot"): "not behind the facade yet",
    ("kit.cli.data_homology", "kit.app.selection"): "not behind the facade yet",
    ("kit.cli.data_homology", "kit.data"): "not behind the facade yet",
    ("kit.cli.data_homology", "kit.data.dataset"): "not behind the facade yet",
    ("kit.cli.data_homology", "kit.data.homology"): "not behind the facade yet",
    ("kit.cli.data_homology", "kit.data.homology_edges"): "not behind the facade yet",
    ("kit.cli.data_homology", "kit.data.homology_split"): "not behind the facade yet",
    ("kit.cli.data_homology", "kit.runs.store"): "not behind the facade yet",
    ("kit.cli.stacks", "kit.envs.build_time"): "not behind the facade yet",
    ("kit.cli.stacks", "kit.envs.catalogue"): "not behind the facade yet",
    ("kit.cli.stacks", "kit.envs.containers.bases"): "not behind the facade yet",
    ("kit.cli.stacks", "kit.envs.containers.runtime"): "not behind the facade yet",
    ("kit.cli.stacks", "kit.envs.external"): "not behind the facade yet",
    ("kit.cli.stacks", "kit.envs.kinds"): "not behind the facade yet",
    ("kit.cli.stacks", "kit.envs.platforms"): "not behind the facade yet",
    ("kit.cli.stacks", "kit.envs.probe"): "not behind the facade yet",
    ("kit.cli.stacks", "kit.runs.planning.availability"): "not behind the facade yet",
    ("kit.tui.setup", "kit.data"): "not behind the facade yet",
    ("kit.tui.setup", "kit.data.uniprot"): "not behind the facade yet",
    ("kit.tui.setup", "kit.envs.integrity"): "not behind the facade yet",
    ("kit.tui.setup", "kit.envs.kinds"): "not behind the facade yet",
}


def test_the_front_ends_call_the_facade_and_views_only():
    """kit/cli, kit/tui and kit/notebook.py import kit.Kit's module, kit.views and kit.core;
    anything else only as BELOW_THE_FACADE lists it (and a listed import that is gone fails
    too, so the list says what is left)."""
    found = {
        (m, d)
        for m, deps in graph().items()
        if m.startswith(FRONTS)
        for d in deps
        if not d.startswith(FLOOR)
    }
    assert sorted(found - set(BELOW_THE_FACADE)) == [], "a front end reaches below kit.Kit"
    assert sorted(set(BELOW_THE_FACADE) - found) == [], "gone: delete from BELOW_THE_FACADE"
