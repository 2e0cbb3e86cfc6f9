"""Every numeric option of every command has a bound (kit.runs.planning.options.BOUNDS, and
cluster.toml's in cluster_kinds.SETTING_BOUNDS): at the bound it is taken, just past it, and for
NaN, inf, negative or 10**30, it is one line naming the bound, exit 2 (exit 1 for what a file or
--cluster says). Nothing here runs a plan: an accepted `kit run` stops at --dataset missing."""

import random
import re
import time

import pytest

from kit.cli import main, parser
from kit.core import processes
from kit.runs.executing import cluster_kinds
from kit.runs.planning.options import BOUNDS, PlanOptions

CORES = processes.cores()
JOBS = CORES * 4
HUGE = str(10**30)
MISSING = ["--dataset", "missing"]  # an accepted plan ends here, before anything runs
TAKEN = (1, "no dataset 'missing'")


def run(*args):
    return ["run", *args]


ROWS = [
    # --iters: power iterations, 1 to 1,000, at most 100 levels
    (run("--factor", "svd-iters", "--iters", "1000", *MISSING), *TAKEN),
    (run("--factor", "svd-iters", "--iters", "1-100", *MISSING), *TAKEN),
    (run("--factor", "svd-iters", "--iters", "1001"), 2, "the largest is 1,000 (power iterations"),
    (run("--factor", "svd-iters", "--iters", "1000000000"), 2, "the largest is 1,000"),
    (run("--factor", "svd-iters", "--iters", HUGE), 2, "a 31-digit number is not allowed here"),
    (
        run("--factor", "svd-iters", "--iters", "1-101"),
        2,
        "1-101 is 101 power iterations; at most 100",
    ),
    (run("--factor", "svd-iters", "--iters", "0"), 2, "0 is not allowed here: the smallest is 1"),
    (run("--factor", "svd-iters", "--iters", "-5"), 2, "the smallest is 1"),
    (run("--factor", "svd-iters", "--iters", "nan"), 2, "expected numbers like 0-9"),
    (run("--factor", "svd-iters", "--iters", ""), 2, "expected numbers like 0-9"),
    # --seeds: 0 to 2**32 - 1, at most 1,000
    (run("--factor", "seed", "--seeds", "0-999", *MISSING), *TAKEN),
    (run("--factor", "seed", "--seeds", "0,4294967295", *MISSING), *TAKEN),
    (run("--factor", "seed", "--seeds", "0-1000"), 2, "0-1000 is 1,001 seeds; at most 1,000"),
    (run("--factor", "seed", "--seeds", "0-999,5000"), 2, "1,001 seeds; at most 1,000"),
    (run("--factor", "seed", "--seeds", "0-1000000000"), 2, "at most 1,000 in one list"),
    (run("--factor", "seed", "--seeds", f"0-{HUGE}"), 2, "the largest is 4,294,967,295"),
    (run("--factor", "seed", "--seeds", "0,4294967296"), 2, "the largest is 4,294,967,295"),
    (run("--factor", "seed", "--seeds=-1,3"), 2, "-1 is not allowed here: the smallest is 0"),
    (run("--factor", "seed", "--seeds", "inf"), 2, "expected numbers like 0-9"),
    (run("--factor", "seed", "--seeds", ""), 2, "expected numbers like 0-9"),
    (run("--factor", "seed", "--seeds", "1," * 20_000 + "1"), 2, "more than 10,000 numbers"),
    # --eps: finite, 0 to 1, at most 100
    (run("--factor", "perturb", "--eps", "0,1", *MISSING), *TAKEN),
    (run("--factor", "perturb", "--eps", ",".join(["1e-9"] * 100), *MISSING), *TAKEN),
    (
        run("--factor", "perturb", "--eps", ",".join(["1e-9"] * 101)),
        2,
        "101 noise sizes; at most 100",
    ),
    (
        run("--factor", "perturb", "--eps", "1.0001"),
        2,
        "1.0001 is not allowed here: the largest is 1",
    ),
    (run("--factor", "perturb", "--eps", "nan"), 2, "noise sizes are finite numbers from 0 to 1"),
    # issue 54: an underflow is never silently 0 (1e-400) or a subnormal of a few bits (1e-320)
    (
        run("--factor", "perturb", "--eps", "1e-400"),
        2,
        "is below the smallest float64 a noise size keeps",
    ),
    (
        run("--factor", "perturb", "--eps", "1e-7,1e-320"),
        2,
        "'1e-320' is below the smallest float64",
    ),
    (run("--factor", "perturb", "--eps", "inf"), 2, "noise sizes are finite numbers from 0 to 1"),
    (run("--factor", "perturb", "--eps", "1e400"), 2, "finite numbers"),
    (run("--factor", "perturb", "--eps=-1e-9"), 2, "expected non-negative numbers"),
    (run("--factor", "perturb", "--eps=-inf"), 2, "expected non-negative numbers"),
    (run("--factor", "perturb", "--eps", ""), 2, "expected non-negative numbers"),
    # --n: proteins, 1 to 10,000,000 (then the dataset's own size)
    (run("--factor", "seed", "--n", "10000000"), 1, "the synthetic set is generated up to 200,000"),
    (
        run("--factor", "seed", "--n", "10000001"),
        2,
        "the largest is 10,000,000 (proteins: the "
        "synthetic set is generated up to 200,000, an imported dataset up to its size)",
    ),
    (run("--factor", "seed", "--n", "99999999"), 2, "the synthetic set is generated up to 200,000"),
    (
        run("--factor", "seed", "--n", "5000000"),
        1,
        "the synthetic set is generated up to 200,000 "
        "proteins (an imported dataset: up to its size)",
    ),
    (run("--factor", "seed", "--n", HUGE), 2, "a 31-digit number is not allowed here"),
    (run("--factor", "seed", "--n", "0"), 2, "expected a positive integer, not '0'"),
    (run("--factor", "seed", "--n", "-3"), 2, "expected a positive integer"),
    (run("--factor", "seed", "--n", "nan"), 2, "expected a positive integer"),
    (run("--factor", "seed", "--n", "1e3"), 2, "expected a positive integer"),
    (run("--factor", "seed", "--n", "9" * 5000), 2, "expected a positive integer, not '9999"),
    # --jobs: auto or 1 to 4 per core
    (run("--factor", "seed", "--jobs", str(JOBS), *MISSING), *TAKEN),
    (run("--factor", "seed", "--jobs", str(JOBS + 1)), 2, f"the largest is {JOBS:,} (runs at once"),
    (run("--factor", "seed", "--jobs", HUGE), 2, f"the largest is {JOBS:,}"),
    (run("--factor", "seed", "--jobs", "0"), 2, "expected a positive integer or auto"),
    (run("--factor", "seed", "--jobs", "nan"), 2, "expected a positive integer or auto"),
    # --threads: 1 to the cores
    (run("--factor", "threads", "--threads", f"1-{CORES}", *MISSING), *TAKEN),
    (run("--factor", "threads", "--threads", str(CORES + 1)), 2, "would measure oversubscription"),
    (run("--factor", "threads", "--threads", "1-1000000000"), 2, "at most 1,024 in one list"),
    (run("--factor", "threads", "--threads", HUGE), 2, "would measure oversubscription"),
    (run("--factor", "threads", "--threads", "0"), 2, "the smallest is 1"),
    # --cluster local:N: 1 to 4 workers per core (the one --cluster parser's usage error)
    (
        run("--factor", "seed", "--cluster", f"local:{JOBS + 1}"),
        2,
        f"'local:{JOBS + 1}' asks for {JOBS + 1:,} workers; the largest is {JOBS:,} (worker processes",
    ),
    (["cluster", "check", "--cluster", f"local:{HUGE}"], 2, "the largest is"),
    (["cluster", "check", "--cluster", "local:nan"], 2, "takes a number of workers"),
    # the other commands' numbers
    (
        ["data", "import", "/nonexistent.tsv", "--name", "x", "--split-seed", "4294967295"],
        1,
        "cannot read /nonexistent.tsv",
    ),
    (
        ["data", "import", "x.tsv", "--name", "x", "--split-seed", "4294967296"],
        2,
        "the largest is 4,294,967,295",
    ),
    (
        ["data", "import", "x.tsv", "--name", "x", "--split-seed", "-1"],
        2,
        "expected a non-negative integer, not '-1'",
    ),
    (["data", "info", "synthetic", "--n", "10000000"], 1, "generated up to 200,000"),
    (["data", "info", "synthetic", "--n", "10000001"], 2, "the largest is 10,000,000"),
    (
        ["data", "fetch", "--per-organism", "100001"],
        2,
        "the largest is 100,000 (proteins per organism",
    ),
    (["data", "fetch", "--keep", "10000001"], 2, "the largest is 10,000,000"),
    (["data", "fetch", "--keep", "0"], 2, "expected a positive integer"),
    (["data", "fetch", "--seed", "-1"], 2, "expected a non-negative integer"),
    (["data", "fetch", "--seed", HUGE], 2, "the largest is 4,294,967,295"),
    (["data", "fetch", "--deadline", "86401"], 2, "the largest is 86,400 (seconds, a day"),
    (["data", "fetch", "--deadline", "inf"], 2, "expected a positive integer"),
    (["data", "fetch", "--max-retry-after", "3601"], 2, "the largest is 3,600 (seconds"),
    (["compare", "/nonexistent/lab.kit", "--jobs", str(JOBS)], 1, "no bundle at"),
    (["compare", "/nonexistent/lab.kit", "--jobs", str(JOBS + 1)], 2, f"the largest is {JOBS:,}"),
    (["doctor", "--n", "10000001"], 2, "the largest is 10,000,000"),
    (["tui", "--n", HUGE], 2, "a 31-digit number"),
    (["tui", "--seeds", "0-1000"], 2, "at most 1,000 in one list"),
    (["tui", "--threads", str(CORES + 1)], 2, "would measure oversubscription"),
    # what argparse quotes back stays on one line
    (["budget", "a\nb\x1b[2J"], 2, "unrecognized arguments: a\\nb\\x1b[2J"),
]


@pytest.mark.parametrize("argv, code, says", ROWS, ids=[" ".join(r[0])[:70] for r in ROWS])
def test_each_option_at_its_bound_and_past_it(argv, code, says, capsys):
    try:
        got = main(argv)
    except SystemExit as e:
        got = e.code
    err = capsys.readouterr().err
    assert got == code, err
    assert says in err and err.count("\n") == 1, err
    assert "Traceback" not in err and "internal error" not in err
    if code == 2:
        assert "--help" in err  # a usage error says where the fix is documented


@pytest.mark.parametrize(
    "argv, dest, value",
    [
        (
            [
                "data",
                "fetch",
                "--per-organism",
                "100000",
                "--keep",
                "10000000",
                "--seed",
                "4294967295",
                "--deadline",
                "86400",
                "--max-retry-after",
                "3600",
            ],
            "deadline",
            86400,
        ),
        (["doctor", "--n", "10000000"], "n", 10_000_000),
        (
            ["tui", "--n", "10000000", "--seeds", "0-999", "--threads", str(CORES)],
            "seeds",
            tuple(range(1000)),
        ),
        (["run", "--factor", "seed", "--jobs", "auto"], "jobs", "auto"),
    ],
)
def test_what_a_bound_holds_is_taken(argv, dest, value):
    """Commands that would start a fetch, the null experiment or the app: parsed only."""
    assert getattr(parser().parse_args(argv), dest) == value


def test_an_imported_datasets_bound_is_its_size(capsys):
    from kit.data.dataset import make_dataset, save_dataset

    save_dataset(
        make_dataset(
            "mine",
            "test",
            [f"P{i}" for i in range(150)],
            ["ACDEFGHIKLMNPQRSTVWY" * 4] * 150,
            [i % 2 for i in range(150)],
            ["org"] * 150,
        )
    )
    assert main(["data", "info", "mine", "--n", "151"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "kit: error: --n 151: dataset 'mine' holds 150 proteins, so --n is at most 150 "
        "(an imported dataset's bound is its size)\n"
    )


def _actions(p, path=()):
    import argparse

    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _actions(sub, (*path, name))
        else:
            yield path, a


def test_no_option_takes_an_unbounded_number():
    """A future `type=int` or `type=float` would take 10**30 or NaN: every typed option is one
    of kit's parsers, and every whole-number one has its row in BOUNDS."""
    from kit.cli import common

    lists = {
        "int_list",
        "counts",
        "threads",
        "thread_counts",
        "floats",
        "fraction",
        "jobs_arg",
    }  # kit.cli.common's
    names = {"factors", "names_list", "factor_list", "path", "cluster_arg"}  # not numbers
    seen = set()
    for path, a in _actions(parser()):
        if a.type is None:
            continue
        assert a.type not in (int, float), (path, a.option_strings)
        name = a.type.__name__
        assert name in lists | names or f"--{name}" in BOUNDS, (path, a.option_strings, name)
        seen.add(name)
    assert common.positive.__name__ == "n" and {"split-seed", "seed", "deadline"} <= seen


def test_plan_options_hold_the_same_bounds():
    """The TUI's fields and any caller of the library meet the same table as the flags."""
    from kit.core.errors import KitError

    for kw, says in (
        (dict(svd_iters=(1001,)), "--iters: 1,001 is not allowed here"),
        (dict(seeds=(0, 2**32)), "--seeds: 4,294,967,296 is not allowed here"),
        (dict(seeds=tuple(range(1001))), "--seeds: 1,001 seeds; at most 1,000"),
        (dict(eps=(float("inf"),)), "--eps: inf is not allowed here"),
        (dict(eps=(float("nan"),)), "noise sizes (eps) must be 0 or more, not nan"),
        (dict(seeds=(3, -1, -2)), "seeds must be 0 or more, not -1 (nor -2)"),
    ):
        with pytest.raises(KitError, match=f"^{re.escape(says)}"):
            PlanOptions(**kw)
    PlanOptions(svd_iters=(1000,), seeds=(0, 2**32 - 1), eps=(0.0, 1.0))


# -- cluster.toml: one line naming the file and the key ----------------------------------------


@pytest.mark.parametrize(
    "body, says",
    [
        ("[jobqueue]\ncores = -2\n", "[jobqueue] cores = -2: the smallest is 1"),
        ("[jobqueue]\ncores = 1025\n", "[jobqueue] cores = 1025: the largest is 1,024"),
        (f"[jobqueue]\ncores = {10**30}\n", "the largest is 1,024"),
        (
            '[jobqueue]\ncores = "8"\n',
            "[jobqueue] cores = '8': expected a whole number from 1 to 1,024",
        ),
        ("[jobqueue]\ncores = true\n", "expected a whole number"),
        ("[jobqueue]\ncores = 2.5\n", "expected a whole number"),
        ("[jobqueue]\njobs = 1001\n", "[jobqueue] jobs = 1001: the largest is 1,000"),
        ("[jobqueue]\nwait_s = nan\n", "[jobqueue] wait_s = nan: seconds are finite numbers"),
        ("[jobqueue]\nwait_s = inf\n", "seconds are finite numbers"),
        ("[jobqueue]\nwait_s = 0\n", "the smallest is 1"),
        ('[jobqueue]\nmemory = "-4GB"\n', "[jobqueue] memory = '-4GB': expected a memory size"),
        ('[jobqueue]\nmemory = "65TiB"\n', "from 1 MiB to 64 TiB"),
        ("[jobqueue]\nmemory = 4\n", "expected a memory size"),
        ("[jobqueue]\nwalltime = 60\n", "[jobqueue] walltime = 60: expected a time limit"),
        ("[jobqueue]\nqueue = 3\n", "[jobqueue] queue = 3: expected a string"),
        ("[jobqueue]\nextra = 3\n", "[jobqueue] extra = 3: expected a table"),
        ("[local]\nworkers = 0\n", "[local] workers = 0: the smallest is 1"),
        (f"[local]\nworkers = {JOBS + 1}\n", f"the largest is {JOBS:,} (worker processes"),
        ('[ssh]\nhosts = "node1"\n', "[ssh] hosts = 'node1': expected a list of at most 1,000"),
        ('[ssh]\nhosts = ["a", 3]\n', "expected a list"),
    ],
)
def test_a_bad_cluster_setting_is_one_line_naming_the_file_and_key(body, says, kit_home, capsys):
    kit_home.mkdir(parents=True, exist_ok=True)
    (kit_home / "cluster.toml").write_text(body)
    assert main(["cluster", "show"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"kit: error: {kit_home / 'cluster.toml'}: ") and says in err, err
    assert err.count("\n") == 1


def test_cluster_settings_at_their_bounds_are_taken(kit_home):
    kit_home.mkdir(parents=True, exist_ok=True)
    (kit_home / "cluster.toml").write_text(
        f"[local]\nworkers = {JOBS}\n[jobqueue]\ncores = 1024\njobs = 1000\nwait_s = 86400\n"
        'memory = "64TiB"\nwalltime = "7-00:00:00"\n[ssh]\nhosts = ["a", "b"]\n'
    )
    s = cluster_kinds.settings()
    assert s["jobqueue"]["cores"] == 1024 and s["local"]["workers"] == JOBS
    assert cluster_kinds.cluster_kind("local").expected == JOBS
    assert cluster_kinds.cluster_kind(f"local:{JOBS}").expected == JOBS


# -- a bounded fuzz: random arguments, each one line and exit 0, 1 or 2 ---------------------------

NASTY = [
    "",
    "0",
    "1",
    "-1",
    "2",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e30",
    "1e400",
    HUGE,
    "9" * 5000,
    "0-1000000000",
    f"0-{HUGE}",
    "1-",
    "-",
    ",",
    "1,,2",
    "1-3,8",
    "5-2",
    "--",
    "-5-3",
    "4294967296",
    "4294967295",
    "10000001",
    "0x10",
    "+5",
    " 5 ",
    "1_000",
    "\u0663",
    "\n",
    "auto",
    "x" * 300,
    "1.5",
    "0.0001",
    "\x7f",
    "é",
    "1," * 50,
    "a,b",
    "../../etc",
    "local:0",
    "local:-1",
    f"local:{HUGE}",
    "local:x",
    "k8s",
    "tcp:/x",
]
OPTIONS = {
    "run": [
        "--factor",
        "--n",
        "--seeds",
        "--iters",
        "--eps",
        "--jobs",
        "--threads",
        "--stack",
        "--cluster",
        "--hosts",
        "--device",
        "--torch-stack",
        "--fresh",
        "--json",
        "--bogus",
    ],
    "budget": ["--factor", "--n", "--dataset", "--json", "--csv", "--bogus"],
    "data import": ["--name", "--split-seed", "--replace", "--no-shuffle", "--filter", "--bogus"],
}
FACTORS = ["seed", "svd-iters", "perturb", "threads", "host", "nope", "seed,perturb"]


def _argv(rng: random.Random, cmd: str, tmp) -> list:
    argv = cmd.split()
    if cmd == "data import":
        argv.append(rng.choice([str(tmp / "few.tsv"), "/nonexistent.tsv", "/dev/null", str(tmp)]))
    if cmd == "run":
        argv += ["--factor", rng.choice(FACTORS)]
    for _ in range(rng.randint(0, 5)):
        opt = rng.choice(OPTIONS[cmd])
        argv.append(opt if rng.random() > 0.1 else opt[: rng.randint(2, len(opt))])
        if rng.random() < 0.85:
            argv.append(
                rng.choice(FACTORS)
                if opt == "--factor" and rng.random() < 0.5
                else rng.choice(NASTY)
                if rng.random() < 0.7
                else "".join(rng.choice("0123456789-,.e") for _ in range(rng.randint(1, 12)))
            )
    if cmd == "run":
        argv += MISSING  # last: whatever else was drawn, nothing runs
    return argv


def test_random_arguments_are_one_line_and_never_a_traceback(tmp_path, capsys):
    (tmp_path / "few.tsv").write_text(
        "id\tsequence\tlabel\n" + "".join(f"p{i}\t{'ACDEFGHIKL' * 8}\t1\n" for i in range(5))
    )
    rng = random.Random(24)
    codes = {}
    for i in range(600):
        cmd = ("run", "budget", "data import")[i % 3]
        argv = _argv(rng, cmd, tmp_path)
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
        out = capsys.readouterr()
        codes[code] = codes.get(code, 0) + 1
        assert code in (0, 1, 2), (argv, out.err)
        assert "Traceback" not in out.err and "internal error" not in out.err, (argv, out.err)
        if code:
            assert out.err.count("\n") == 1 and out.err.startswith("kit"), (argv, out.err)
    assert codes.get(2, 0) > 300 and codes.get(1, 0) > 60, codes  # it reached past the parser too


@pytest.mark.slow
async def test_the_plan_tab_holds_its_fields_to_the_same_bounds():
    """The TUI's Plan tab parses its fields with the CLI's parsers: the same bound, in the app."""
    from textual.widgets import Input

    from kit.envs.platforms import Platform
    from kit.runs.store import Store
    from kit.tui.app import KitApp

    linux = Platform("linux", "x86_64", cpu_flags=frozenset({"avx2"}), downloads=True)
    async with KitApp("synthetic", 120, platform=linux, store=Store()).run_test() as pilot:
        await pilot.press("2")
        for field, typed, says in (
            ("#iters", "1000000000", "the largest is 1,000"),
            ("#seeds", "0-5000", "at most 1,000 in one list"),
            ("#n", HUGE, "proteins: a 31-digit number is not allowed"),
        ):
            pilot.app.query_one(field, Input).value = typed
            # the tab reads what this machine can run in a worker once the screen is up: its
            # summary says "reading ..." until then (under load, past the first pause)
            end = time.monotonic() + 60
            while says not in str(pilot.app.query_one("#plan-summary").render()):
                assert time.monotonic() < end, str(pilot.app.query_one("#plan-summary").render())
                await pilot.pause(0.05)
            pilot.app.query_one(field, Input).value = ""
