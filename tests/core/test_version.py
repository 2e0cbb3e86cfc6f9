"""kit.core.version: the one version kit writes into bundles and reports is the package's."""

import tomllib

from places import ROOT

import kit
from kit.core.version import __version__


def test_the_version_is_the_one_pyproject_gives_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert __version__ == project["version"] == kit.__version__
