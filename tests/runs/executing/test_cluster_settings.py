"""kit.runs.executing.cluster_settings and job_templates: [jobqueue]'s named settings merged with
kit's own keywords, per-node-class templates, and the refusals (no cluster started, nothing
submitted: the job scripts are dask-jobqueue's own, built with a placeholder scheduler)."""

import pytest

from kit.core.errors import KitError
from kit.runs.executing import cluster_kinds, cluster_settings, job_templates


@pytest.fixture
def toml(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_HOME", str(tmp_path))

    def write(text):
        (tmp_path / "cluster.toml").write_text(text)
        return cluster_settings.settings()["jobqueue"]

    return write


def test_named_settings_follow_kits_own_lines_in_the_script(toml, tmp_path):
    conf = toml(
        '[jobqueue]\nprologue = ["module load python/3.12"]\nconstraint = "skylake"\n'
        'directives = ["--exclusive"]\nworker_args = ["--lifetime", "55m"]\n'
        f'log_directory = "{tmp_path / "joblogs"}"\n'
        'extra = { job_script_prologue = ["ulimit -n 4096"], job_cpu = 3, '
        'worker_extra_args = ["--no-dashboard"] }\n'
    )
    script = cluster_kinds.JobQueueKind(conf, "slurm").job_scripts()[""]
    lines = script.splitlines()
    home = lines.index(f"export KIT_HOME={tmp_path}")
    # kit's exports first, then the prologue setting, then extra's: each once
    assert home < lines.index("module load python/3.12") < lines.index("ulimit -n 4096")
    assert script.count("module load python/3.12") == 1
    assert "#SBATCH --constraint=skylake" in lines and "#SBATCH --exclusive" in lines
    assert "#SBATCH --cpus-per-task=3" in lines  # extra's job_cpu reached dask-jobqueue
    assert f"#SBATCH -o {tmp_path / 'joblogs'}/" in script
    assert lines[-1].endswith(
        "--resources cores=2 --preload kit.runs.executing.node_classes "
        "--lifetime 55m --no-dashboard"
    )
    assert "KIT_NODE_CLASS" not in script  # one template: the node names its own class


def test_each_node_class_gets_its_own_template_and_exports_its_name(toml):
    conf = toml(
        '[jobqueue]\nqueue = "main"\njobs = 1\nprologue = ["echo common"]\n'
        '[jobqueue.skylake]\nconstraint = "skylake"\ncores = 4\njobs = 2\n'
        '[jobqueue.epyc]\nqueue = "amd"\nprologue = ["module load aocc"]\n'
    )
    kind = cluster_kinds.JobQueueKind(conf, "slurm")
    assert kind.templates == {"skylake": 2, "epyc": 1} and kind.expected == 3
    scripts = kind.job_scripts()
    sky, amd = scripts["skylake"].splitlines(), scripts["epyc"].splitlines()
    assert "export KIT_NODE_CLASS=skylake" in sky and "export KIT_NODE_CLASS=epyc" in amd
    assert "#SBATCH --constraint=skylake" in sky and "#SBATCH -p main" in sky
    assert "#SBATCH -p amd" in amd and not any("constraint" in ln for ln in amd)
    assert "echo common" in sky and "module load aocc" in amd and "echo common" not in amd
    assert sky[-1].endswith("--resources cores=4 --preload kit.runs.executing.node_classes")
    assert "--name skylake-0" in sky[-1]
    kit_show(conf)  # the view shows every class table
    assert "3 slurm job(s) (2 skylake, 1 epyc)" in kind.describe()


def kit_show(conf):
    from kit.views.cluster import settings_text

    text = settings_text("cluster.toml", True, {"jobqueue": conf})
    assert "jobqueue.skylake" in text and "jobqueue.epyc" in text
    return text


@pytest.mark.parametrize(
    "extra, says",
    [
        ("{ job_script_prolog = [] }", "no such keyword; did you mean job_script_prologue?"),
        ("{ cores = 8 }", "use the cores setting"),
        ("{ queue = 'x' }", "use the queue setting"),
        ("{ log_directory = '/x' }", "use the log_directory setting"),
        ("{ env_extra = ['x'] }", "use the prologue setting"),
        ("{ processes = 4 }", "kit runs one Dask worker per job"),
        ("{ worker_extra_args = 'x' }", "expected a list of strings"),
    ],
)
def test_extra_that_clashes_or_is_unknown_is_one_line(toml, extra, says):
    conf = toml(f"[jobqueue]\nextra = {extra}\n")
    with pytest.raises(KitError, match=says.replace("?", r"\?")):
        cluster_kinds.JobQueueKind(conf, "slurm")


def test_class_tables_are_checked_like_the_section(toml):
    for text, says in (
        ('[jobqueue.sky]\npython = "x"\n', r"\[jobqueue.sky\] has no setting 'python'"),
        ("[jobqueue.sky]\ncores = 0\n", "cores = 0"),
        ('[jobqueue."9 bad"]\n', "a node class is named by a letter or digit"),
        ('[jobqueue."-x"]\n', "a node class is named by a letter or digit"),
        ('[jobqueue.sky]\nprologue = "x"\n', "a list of at most"),
    ):
        with pytest.raises(KitError, match=says):
            toml(text)
    conf = toml('[jobqueue.sky]\nconstraint = "x"\n')
    with pytest.raises(KitError, match=r"\[jobqueue.sky\] constraint is a Slurm setting"):
        cluster_kinds.JobQueueKind(conf, "pbs")
    for given in (
        'worker_args = ["--resources", "gpu=1"]',
        'extra = { worker_extra_args = ["--resources=gpu=1"] }',
    ):  # either way in
        with pytest.raises(KitError, match="--resources is kit's"):
            cluster_kinds.JobQueueKind(toml(f"[jobqueue]\n{given}\n"), "slurm")


def test_scheduler_options_merge_with_the_interface(toml):
    conf = toml('[jobqueue]\ninterface = "lo"\nextra = { scheduler_options = { port = 0 } }\n')
    assert job_templates.cluster_kwargs(conf, "slurm")["scheduler_options"] == {
        "dashboard_address": ":0",
        "interface": "lo",
        "port": 0,
    }  # no fixed 8787 to clash on
    conf = toml('[jobqueue]\nextra = { scheduler_options = { dashboard_address = ":8790" } }\n')
    assert job_templates.cluster_kwargs(conf, "slurm")["scheduler_options"] == {
        "dashboard_address": ":8790"
    }  # a lab that wants its dashboard names the port
    conf = toml(
        '[jobqueue]\ninterface = "lo"\nextra = { scheduler_options = { interface = "x" } }\n'
    )
    with pytest.raises(KitError, match="use the interface setting"):
        job_templates.cluster_kwargs(conf, "slurm")


def test_every_system_builds_its_script(toml):
    for system in job_templates.SYSTEMS:
        disk = 'extra = { disk = "1GB" }\n' if system == "htcondor" else ""  # HTCondor needs it
        conf = toml(f'[jobqueue]\nprologue = ["echo hi"]\n{disk}[jobqueue.a]\n')
        script = job_templates.job_scripts(conf, system)["a"]
        assert "echo hi" in script and "KIT_NODE_CLASS=a" in script, system


def test_ssh_settings_are_checked(toml, tmp_path):
    for text, says in (
        ("[ssh]\nport = 70000\n", "a TCP port"),
        ("[ssh]\nenv = { 1X = 'a' }\n", "variable names"),
    ):
        (tmp_path / "cluster.toml").write_text(text)
        with pytest.raises(KitError, match=says):
            cluster_settings.settings()
