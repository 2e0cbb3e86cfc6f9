"""kit.runs.executing.cluster_kinds: the --cluster names and the one settings file (no cluster started)."""

import pytest

from kit.core.errors import KitError
from kit.runs.executing import cluster_kinds, cluster_settings


def test_each_name_chooses_its_kind_and_anything_else_is_one_line():
    assert cluster_kinds.cluster_kind("local:3").expected == 3
    assert cluster_kinds.cluster_kind("local").expected == 2  # the settings' default
    assert cluster_kinds.cluster_kind("tcp://head:8786").address == "tcp://head:8786"
    assert cluster_kinds.cluster_kind("slurm").system == "slurm"
    for bad, says in (("local:x", "number of workers"), ("local:0", "at least one"),
                      ("kubernetes", "unknown cluster"), ("ssh", "needs hosts")):
        with pytest.raises(KitError, match=says):
            cluster_kinds.cluster_kind(bad)


def test_settings_merge_the_file_over_defaults_and_refuse_typos(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_HOME", str(tmp_path))
    assert cluster_kinds.settings()["jobqueue"]["cores"] == 2
    assert cluster_kinds.init_settings() == str(tmp_path / "cluster.toml")
    assert cluster_kinds.settings() == {k: dict(v) for k, v in cluster_settings.DEFAULTS.items()}  # template
    (tmp_path / "cluster.toml").write_text('[jobqueue]\ncores = 8\nqueue = "gpu"\n')
    s = cluster_kinds.settings()
    assert s["jobqueue"]["cores"] == 8 and s["jobqueue"]["walltime"] == "01:00:00"
    (tmp_path / "cluster.toml").write_text('[jobqueue]\ncore = 8\n')
    with pytest.raises(KitError, match="no setting 'core'"):
        cluster_kinds.settings()
    (tmp_path / "cluster.toml").write_text('[slurmm]\n')
    with pytest.raises(KitError, match=r"no section 'slurmm'; sections are local, "):
        cluster_kinds.settings()
    (tmp_path / "cluster.toml").write_text('[jobqueue\n')
    with pytest.raises(KitError, match="kit cluster init"):
        cluster_kinds.settings()


def test_init_never_overwrites_a_users_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_HOME", str(tmp_path))
    (tmp_path / "cluster.toml").write_text("[local]\nworkers = 5\n")
    cluster_kinds.init_settings()
    assert cluster_kinds.settings()["local"]["workers"] == 5
