"""tests/ mirrors kit's packages (#57): kit/a/b.py is tested in tests/a/test_b.py, or is listed in
tests/support/unmirrored.txt with where it is tested instead. Besides the mirror, tests/ holds
scenarios/ (what a user does, across packages), repo/ (checks of the whole tree) and support/
(helpers and data)."""

from places import KIT, SUPPORT, TESTS

LIST = SUPPORT / "unmirrored.txt"
# the folders of tests/ that mirror no package, each said in the module docstring
NOT_MIRRORS = {"scenarios", "repo", "support"}


def modules() -> dict[str, str]:
    """{dotted module name: its mirrored test file, relative to tests/} of every module of kit
    (a package's __init__ and a __main__ need no test file of their own)."""
    found = {}
    for path in sorted(KIT.rglob("*.py")):
        rel = path.relative_to(KIT)
        if path.name in ("__init__.py", "__main__.py") or "__pycache__" in rel.parts:
            continue
        name = ".".join(("kit", *rel.with_suffix("").parts))
        found[name] = str(rel.parent / f"test_{path.stem}.py")
    return found


def listed() -> dict[str, str]:
    """{module: reason} of the list's lines (MODULE: REASON; # comments and blank lines)."""
    out = {}
    for line in LIST.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        module, sep, reason = line.partition(": ")
        assert sep and reason.strip(), f"{LIST.name}: {line!r} says no reason"
        assert module not in out, f"{LIST.name}: {module} is listed twice"
        out[module] = reason
    return out


def test_every_module_has_its_mirrored_test_file_or_is_listed_with_its_reason():
    missing = [
        f"{name} (tests/{place})"
        for name, place in modules().items()
        if not (TESTS / place).is_file() and name not in listed()
    ]
    assert not missing, (
        "no test file at these modules' mirrored places: write one there, or list the module in "
        f"tests/support/{LIST.name} with where it is tested: " + ", ".join(missing)
    )


def test_the_list_names_only_modules_that_have_no_mirrored_file():
    """The list only shrinks: a module given its test file, renamed or removed leaves it."""
    mods = modules()
    gone = [m for m in listed() if m not in mods]
    mirrored = [m for m in listed() if m in mods and (TESTS / mods[m]).is_file()]
    assert not gone, f"listed in {LIST.name} but no module of kit: {gone}"
    assert not mirrored, f"listed in {LIST.name} but tested at its place, drop its line: {mirrored}"


def test_every_test_file_outside_scenarios_and_repo_is_at_a_module_s_place():
    """tests/a/test_b.py names kit/a/b.py or the package kit/a/b/: a test of a theme goes into the
    file of the module it tests, or to scenarios/ when it drives kit across packages."""
    strays = []
    for path in sorted(TESTS.rglob("test_*.py")):
        rel = path.relative_to(TESTS)
        if rel.parts[0] in NOT_MIRRORS or "__snapshots__" in rel.parts:
            continue
        name = path.stem.removeprefix("test_")
        target = KIT / rel.parent / name
        if not (target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()):
            strays.append(str(rel))
    assert not strays, f"test files named after no module of kit at their place: {strays}"


def test_every_folder_of_tests_mirrors_a_package_and_is_one():
    """A folder under tests/ is a package of kit's (or one of NOT_MIRRORS), and a package itself
    (__init__.py): two folders may then hold test files of one name."""
    wrong = []
    for folder in sorted(p for p in TESTS.rglob("*") if p.is_dir()):
        rel = folder.relative_to(TESTS)
        if rel.parts[0] == "support" or {"__snapshots__", "__pycache__"} & set(rel.parts):
            continue
        if rel.parts[0] not in NOT_MIRRORS and not (KIT / rel / "__init__.py").is_file():
            wrong.append(f"{rel}: no package kit/{rel}")
        if not (folder / "__init__.py").is_file():
            wrong.append(f"{rel}: no __init__.py")
    assert not wrong, wrong
