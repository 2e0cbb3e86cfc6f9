"""kit.worker.names: every name a user types (a command, a factor, a seed, a kind, a stack, a
dataset, a cluster, a setting) that is none of the known ones is said with the closest, the
same way everywhere (#43). The table below holds each place a typed name is checked."""

import pytest
from places import PIPELINES

from kit.cli import main
from kit.core.errors import KitError
from kit.worker.names import closest, did_you_mean, unknown

LAB = str(PIPELINES / "lab.py")


def test_the_closest_names_are_the_near_ones_and_only_those():
    assert closest("seeed", ["seed", "seed:svd", "torch-seed"]) == ["seed"]  # not seed:svd too
    assert closest("Threads", ["torch-threads", "threads"]) == ["threads"]  # a slip of case
    assert closest("np1-sk15", ["np2-sk152", "np1-sk152", "np1-sk191"]) == ["np1-sk152"]
    assert closest("thread", ["threads", "thready"]) == ["threads", "thready"]  # both as near
    assert closest("bogus", ["repeat", "seed"]) == []
    # seed:NAME by its NAME: a shared "seed:" makes no two alike, and seed:nope is no slip of seed
    assert closest("seed:splt", ["seed", "seed:init", "seed:split"]) == ["seed:split"]
    assert closest("seed:nope", ["seed", "seed:init", "seed:svd"]) == []
    assert closest("x" * 100_000, ["x"]) == []  # a huge name is read only in part, quickly


def test_the_line_names_the_closest_or_lists_every_name():
    assert (
        unknown("unknown factor", "sed", ["seed", "threads"])
        == "unknown factor 'sed': did you mean seed?"
    )
    assert (
        unknown("unknown factor", "bogus", ["seed", "threads"])
        == "unknown factor 'bogus'; choose from seed, threads"
    )
    assert (
        unknown("no stack", "x", [], "; `kit stacks` lists them")
        == "no stack 'x'; `kit stacks` lists them"
    )
    assert (
        unknown("run read seeds[", "splt", ["split"], after="], which SEEDS does not name")
        == "run read seeds['splt'], which SEEDS does not name: did you mean split?"
    )
    # a name that is not a plain word is quoted, as the typed one is
    assert did_you_mean("train protein", ["train proteins"]) == "did you mean 'train proteins'?"
    assert "\n" not in unknown("unknown factor", "a\nb" * 50, ["a b"])


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A real store: kit's own seed pair on 100 synthetic proteins, and a lab file's seed:split
    pair (tests/support/pipelines/lab.py)."""
    root = tmp_path_factory.mktemp("names")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_HOME", str(root / "home"))
        mp.setenv("COLUMNS", "1000")
        for argv in (
            ["run", "--factor", "seed", "--seeds", "0-1", "--n", "100"],
            ["run", "--pipeline", LAB, "--factor", "seed:split", "--seeds", "0-1"],
        ):
            assert main(argv + ["--threads", "1", "--jobs", "2", "--yes"]) == 0
    return root / "home"


# every command-line place a name is typed: a misspelling, and the name it must suggest
TYPED = [
    (["verdict"], "verdicts"),  # a command
    (["stacks", "buidl"], "build"),  # an action
    (["runs", "--kind", "pipline"], "pipeline"),  # a choice
    (["tolerances", "--format", "jsn"], "json"),
    (["run", "--factor", "seeed"], "seed"),  # kit's own factors
    (["run", "--factor", "repeat,thread"], "threads"),
    (["budget", "--factor", "sed"], "seed"),
    (["explain", "precison"], "precision"),
    (["runs", "--factor", "seeed"], "seed"),
    (["export", "--factor", "seeed", "--out", "x.kit"], "seed"),
    (["tolerances", "--pin", "thread"], "threads"),
    (["verdicts", "--set", "sedes"], "seeds"),  # a run set
    (["run", "--pipeline", LAB, "--factor", "seed:splt"], "seed:split"),  # a file's seeds
    (["run", "--pipeline", LAB, "--factor", "repat"], "repeat"),
    (["budget", "--pipeline", LAB, "--factor", "seed:splt"], "seed:split"),
    (["verdicts", "--pipeline", LAB, "--set", "seed:splt"], "seed:split"),
    (["runs", "--pipeline", LAB, "--factor", "seed:splt"], "seed:split"),
    (["export", "--pipeline", LAB, "--factor", "seed:splt", "--out", "x.kit"], "seed:split"),
    (["explain", "seed:splt", "--pipeline", LAB], "seed:split"),
    (["run", "--factor", "seed", "--stack", "hots"], "host"),  # stacks
    (["runs", "--stack", "hots"], "host"),
    (["stacks", "build", "np1-sk15"], "np1-sk152"),
    (["stacks", "doctor", "np1-sk15"], "np1-sk152"),
    (["budget", "--dataset", "synthetc"], "synthetic"),  # datasets
    (["data", "info", "synthetc"], "synthetic"),
    (["data", "split", "synthetc", "--homology", "--name", "x"], "synthetic"),
    (["homology", "--against", "synthetc"], "synthetic"),
    (["cluster", "check", "--cluster", "slurmm"], "slurm"),  # a cluster
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv, meant",
    TYPED,
    ids=lambda x: x if isinstance(x, str) else " ".join(a if a != LAB else "lab.py" for a in x),
)
def test_every_typed_name_is_said_with_the_closest(
    home, monkeypatch, tmp_path, capsys, argv, meant
):
    monkeypatch.setenv("KIT_HOME", str(home))
    monkeypatch.chdir(tmp_path)  # export's x.kit, were it written
    try:
        code = main(argv)
    except SystemExit as e:  # a usage error
        code = e.code
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]  # `kit run` says which dataset first
    assert code in (1, 2) and last.startswith("kit") and "Traceback" not in err, err
    assert f"did you mean {meant}?" in last, err
    assert not (tmp_path / "x.kit").exists()


def test_the_notebook_names_the_closest_dataset(tmp_path, kit_home, tiny):
    from stored import budget_store

    import kit
    from kit.data.dataset import save_dataset

    save_dataset(tiny)
    budget_store(tmp_path, tiny, home=kit_home)
    with pytest.raises(KitError, match="no stored dataset 'tny': did you mean tiny?"):
        kit.open().budget("tny")


def test_a_pipeline_file_s_names_are_said_with_the_closest(tmp_path):
    from kit.worker import contract
    from kit.worker.contract import ContractError

    def said(source):
        f = tmp_path / "mine.py"
        f.write_text("import numpy as np\nSEEDS = ('split',)\n" + source)
        with pytest.raises(ContractError) as e:
            contract.call(contract.load(f), {"split": 1})
        return str(e.value)

    run = "def run(seeds):\n    return {'p_lr': np.zeros(2) + seeds[%r]}\n"
    assert said("KINDS = {'p_lr': 'embedings'}\n" + run % "split").endswith(
        "is 'embedings': did you mean embedding?"
    )
    assert said(run % "splt").endswith(
        "run read seeds['splt'], which SEEDS does not name: did you mean split?"
    )
    assert said("KINDS = {'p_l': 'array'}\n" + run % "split").endswith(
        "KINDS names 'p_l', which run did not return: did you mean p_lr?"
    )


def test_cluster_settings_name_the_closest(tmp_path, monkeypatch):
    from kit.runs.executing.cluster_settings import settings

    monkeypatch.setenv("KIT_HOME", str(tmp_path))
    for text, meant in (("[jobqeue]\n", "jobqueue"), ("[local]\nworkerz = 2\n", "workers")):
        (tmp_path / "cluster.toml").write_text(text)
        with pytest.raises(KitError, match=f"did you mean {meant}\\?$"):
            settings()


def test_hosts_names_the_closest_node_class():
    from kit.runs.executing.node_classes import ClassTable

    t = ClassTable(
        {"tcp://1": {"host": "a", "name": "w-1", "class": "skylake", "slots": 4}}, "tcp://head:8786"
    )
    with pytest.raises(
        KitError,
        match="--hosts 'skylak': no worker of tcp://head:8786 is of "
        "that node class: did you mean skylake\\?",
    ):
        t.resolve(["skylak"])
