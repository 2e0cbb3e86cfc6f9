"""A pipeline's REQUIRES: read as a literal like SEEDS, strictly as PEP 508 names and versions."""

import json

import pytest

from kit.core.errors import KitError
from kit.data.pipelines import add_pipeline, declared, pipeline_info
from kit.data.requires import check_requires, digest, names

BODY = "SEEDS = ()\ndef run(seeds):\n    return {}\n"


@pytest.mark.parametrize(
    "given, read",
    [
        (("pandas",), ["pandas"]),
        (["matplotlib>=3.8", "pandas"], ["matplotlib>=3.8", "pandas"]),
        (("Pandas >= 2.0, <3",), ["pandas<3,>=2.0"]),
        (("scikit_learn==1.4.*",), ["scikit-learn==1.4.*"]),
        (("dask[dataframe,array]~=2024.8",), ["dask[array,dataframe]~=2024.8"]),
        (("Bio.Python",), ["bio-python"]),
        ((), []),
        (None, []),
    ],
)
def test_a_name_with_extras_and_versions_is_read_and_normalised(given, read):
    assert check_requires("lab.py", given) == read


@pytest.mark.parametrize(
    "given, said",
    [
        ("numpy @ https://example.org/numpy.whl", "a URL"),
        ("numpy @ file:///wheels/numpy.whl", "a URL"),
        ("https://example.org/numpy-2.0-py3-none-any.whl", "a URL"),
        ("git+https://github.com/x/y", "a URL"),
        ("./vendored/mylib", "a path"),
        ("/opt/wheels/mylib-1.0-py3-none-any.whl", "a path"),
        ("mylib-1.0.tar.gz", "a path"),
        ("mylib @ ../mylib", "an @ direct reference"),
        ("numpy; python_version < '3.12'", "an environment marker"),
        ("numpy>=1 ;sys_platform=='linux'", "an environment marker"),
        ("-e .", "a pip option"),
        ("--index-url=https://example.org/simple", "a pip option"),
        ("-r requirements.txt", "a pip option"),
        ("numpy>>1", "not a PEP 508 requirement"),
        ("two names", "not a PEP 508 requirement"),
        ("numpy==", "not a PEP 508 requirement"),
        ("", "empty"),
        ("numpy\n", "control character"),
        ("x" * 300, "over 200 characters"),
    ],
)
def test_every_form_that_is_not_a_name_and_versions_is_refused_in_one_line(given, said):
    with pytest.raises(KitError) as e:
        check_requires("lab.py", (given,))
    line = str(e.value)
    assert line.startswith("lab.py: REQUIRES") and said in line and "\n" not in line


@pytest.mark.parametrize("value", ["pandas", {"pandas": "2"}, ("pandas", 2), [["pandas"]]])
def test_requires_that_is_not_a_tuple_of_strings_is_one_line(value):
    with pytest.raises(KitError, match="REQUIRES must be a tuple of strings"):
        check_requires("lab.py", value)


def test_too_many_packages_are_refused():
    with pytest.raises(KitError, match="at most 64"):
        check_requires("lab.py", [f"p{i}" for i in range(65)])


def test_the_file_s_requires_are_read_as_a_literal_without_running_it():
    got = declared(
        "lab.py", b"import pandas\nREQUIRES = ('pandas>=2', 'tabulate')\n" + BODY.encode()
    )
    assert got["requires"] == ["pandas>=2", "tabulate"] and names(got["requires"]) == [
        "pandas",
        "tabulate",
    ]
    assert declared("lab.py", BODY.encode())["requires"] == []
    with pytest.raises(KitError, match=r"lab.py:1: REQUIRES must be written out as a literal"):
        declared("lab.py", b"REQUIRES = tuple(open('reqs.txt'))\n" + BODY.encode())
    with pytest.raises(KitError, match="is a pip option"):
        declared("lab.py", b"REQUIRES = ('--extra-index-url=http://evil',)\n" + BODY.encode())


def test_the_digest_is_of_the_set_whatever_the_order():
    assert digest(["b", "a"]) == digest(["a", "b"]) != digest(["a"])
    assert len(digest(["a"])) == 10


def test_a_pipeline_s_record_keeps_its_requires_and_an_older_record_has_none(kit_home, tmp_path):
    f = tmp_path / "lab.py"
    f.write_text("REQUIRES = ['Tabulate']\n" + BODY)
    info = add_pipeline(f)
    assert info["requires"] == ["tabulate"] and pipeline_info(info["sha256"])["requires"] == [
        "tabulate"
    ]
    record = kit_home / "pipelines" / "by-hash" / f"{info['sha256']}.json"
    old = {k: v for k, v in json.loads(record.read_text()).items() if k != "requires"}
    record.write_text(json.dumps(old))
    assert pipeline_info(info["sha256"])["requires"] == []
    record.write_text(json.dumps({**old, "requires": ["x @ https://evil"]}))
    with pytest.raises(KitError, match="is damaged"):
        pipeline_info(info["sha256"])
