"""A lab's pipeline file under kit's contract: loaded by path, checked, called, hashed; every
mistake a user makes is one line, and an exception inside the pipeline names its own line."""

from pathlib import Path

import numpy as np
import pytest
from places import PIPELINES

from kit.worker import contract
from kit.worker.contract import ContractError, PipelineFailed

LAB = PIPELINES / "lab.py"
SEEDS = {"split": 0, "init": 0}


def changed(a: dict, b: dict) -> list:
    sa, sb = contract.stages(a), contract.stages(b)
    return [k for k in sa if sa[k] != sb[k]]


@pytest.fixture(scope="module")
def lab():
    return contract.load(LAB)


@pytest.fixture(scope="module")
def first(lab):
    return contract.call(lab, SEEDS)


def test_the_example_keeps_the_contract(lab, first):
    assert lab.seeds == ("split", "init") and lab.takes_dtype
    assert lab.sha256 == contract.file_sha256(LAB) and len(lab.sha256) == 64
    assert list(first) == ["emb", "clusters", "y_test", "p_lr", "jitter"]  # run's order
    assert lab.kind("emb") == "embedding" and lab.kind("jitter") == "array"
    st = contract.stages(first)
    assert list(st) == list(first)
    assert st["emb"]["shape"] == [300, 5] and st["emb"]["dtype"] == "<f8"


def test_repeat_differs_in_exactly_the_unseeded_output(lab, first):
    assert changed(first, contract.call(lab, SEEDS)) == ["jitter"]


def test_each_named_seed_changes_what_it_reaches_and_nothing_else(lab, first):
    # jitter is loose: it differs whatever the seeds, so it says nothing about reach
    split = set(changed(first, contract.call(lab, dict(SEEDS, split=1)))) - {"jitter"}
    init = set(changed(first, contract.call(lab, dict(SEEDS, init=1)))) - {"jitter"}
    assert split == {"y_test", "p_lr"}
    assert init == {"emb", "clusters", "p_lr"}


def test_dtype_reaches_run_when_it_takes_one(lab):
    assert contract.call(lab, SEEDS, "float32")["emb"].dtype == np.float32


def _one_line(tmp_path, source, seeds=None, dtype="float64", exc=ContractError):
    f = tmp_path / "mine.py"
    f.write_text(source)
    with pytest.raises(exc) as e:
        contract.call(contract.load(f), seeds if seeds is not None else {"a": 1}, dtype)
    line = str(e.value)
    assert "\n" not in line and line
    return e.value


GOOD_RUN = "def run(seeds):\n    return {'x': np.arange(3.0) + seeds['a']}\n"
HEAD = "import numpy as np\nSEEDS = ('a',)\n"


@pytest.mark.parametrize(
    "source,words",
    [
        ("import numpy as np\n" + GOOD_RUN, "no SEEDS"),
        ("SEEDS = 'a'\n" + GOOD_RUN, "not a tuple of names"),
        ("SEEDS = ('a', 'a')\n" + GOOD_RUN, "'a' twice"),
        ("SEEDS = ('a b',)\n" + GOOD_RUN, "not a plain name"),
        (HEAD, "no run function"),
        (HEAD + "run = 3\n", "run is a int, not a function"),
        (HEAD + "def run(seeds, dtype, extra):\n    pass\n", "run(seeds) or run(seeds, dtype)"),
        (HEAD + "KINDS = {'x': 'embedings'}\n" + GOOD_RUN, "did you mean embedding?"),
        (HEAD + "KINDS = {'x': 'colour'}\n" + GOOD_RUN, "not a kind"),
        (HEAD + "KINDS = {'y': 'array'}\n" + GOOD_RUN, "KINDS names 'y', which run did not return"),
        (HEAD + "def run(seeds):\n    seeds['a']\n    return [1]\n", "returned a list"),
        (
            HEAD + "def run(seeds):\n    seeds['a']\n    return {'x': [1, 2]}\n",
            "'x' is a list, not a numpy array",
        ),
        (
            HEAD + "def run(seeds):\n    seeds['a']\n    return {'x': np.array([None])}\n",
            "'x' has object dtype",
        ),
        (
            HEAD + "def run(seeds):\n    seeds['a']\n    return {'../x': np.zeros(1)}\n",
            "not a plain name",
        ),
        (
            HEAD + "KINDS = {'x': 'probabilities'}\ndef run(seeds):\n    seeds['a']\n"
            "    return {'x': np.array([0.5, 2.0])}\n",
            "output 'x' (probabilities): probabilities must lie in [0, 1]: max 2 at row 1 (1 of its 2 "
            "values; a score or logit needs a sigmoid or softmax first)",
        ),
        # the values are named, where they are: a table's row and column, NaN too (#43)
        (
            HEAD + "KINDS = {'x': 'probabilities'}\ndef run(seeds):\n    seeds['a']\n"
            "    return {'x': np.array([[0.5, 0.5], [-0.25, 1.25], [np.nan, 0.5]])}\n",
            "must lie in [0, 1]: min -0.25 at row 1, column 0, max 1.25 at row 1, column 1, NaN at "
            "row 2, column 0 (3 of its 6 values;",
        ),
        # a value just outside [0, 1] is written with the digits that show it outside: "max 1"
        # read as inside (#43), in float32 too (its own shortest form, not 1.00000011920929)
        (
            HEAD + "KINDS = {'x': 'probabilities'}\ndef run(seeds):\n    seeds['a']\n"
            "    p = np.full(20, 0.5)\n    p[17] = 1.0000001\n    return {'x': p}\n",
            "must lie in [0, 1]: max 1.0000001 at row 17 (1 of its 20 values;",
        ),
        (
            HEAD + "KINDS = {'x': 'probabilities'}\ndef run(seeds):\n    seeds['a']\n"
            "    return {'x': np.array([[-1e-9, 1.0000001]], dtype=np.float32)}\n",
            "must lie in [0, 1]: min -1e-09 at row 0, column 0, max 1.0000001 at row 0, column 1",
        ),
        (
            HEAD + "KINDS = {'x': 'embedding'}\n" + GOOD_RUN,
            "output 'x' is an embedding output but is 1-d float64: it must be a 2-d float array",
        ),
        (HEAD + "SEEDS = ('a', 'b')\n" + GOOD_RUN, "never reads seeds['b']"),
        (
            HEAD + "def run(seeds):\n    return {'x': np.zeros(1) + seeds['c']}\n",
            "read seeds['c'], which SEEDS does not name",
        ),
        # a name holding a control character would end a line of a generated file (#37): refused,
        # quoted; `$` let "x\n" through as a plain output name
        (
            HEAD + "def run(seeds):\n    seeds['a']\n    return {'x\\n': np.zeros(1)}\n",
            "output name 'x\\n' holds the control character '\\n'",
        ),
        (
            HEAD + "KINDS = {'x\\x1b[2J': 'array'}\n" + GOOD_RUN,
            "output name 'x\\x1b[2J' in KINDS holds the control character '\\x1b'",
        ),
        (
            "SEEDS = ('a\\u202eb',)\n" + GOOD_RUN,
            "seed name 'a\\u202eb' in SEEDS holds the control character '\\u202e'",
        ),
    ],
)
def test_every_user_error_is_one_line(tmp_path, source, words):
    seeds = {"a": 1, "b": 2} if "('a', 'b')" in source else None
    assert words in str(_one_line(tmp_path, source, seeds))


def test_precision_needs_a_dtype_argument(tmp_path):
    assert "takes no dtype" in str(_one_line(tmp_path, HEAD + GOOD_RUN, dtype="float32"))


def test_only_a_parameter_named_dtype_receives_the_precision(tmp_path):
    f = tmp_path / "rows.py"
    f.write_text(
        HEAD + "def run(seeds, n_rows=5):\n    return {'x': np.zeros(n_rows) + seeds['a']}\n"
    )
    c = contract.load(f)
    assert not c.takes_dtype and contract.call(c, {"a": 1})["x"].shape == (5,)  # not "float64"
    assert "takes no dtype" in str(_one_line(tmp_path, f.read_text(), dtype="float32"))
    assert "run(seeds) or run(seeds, dtype)" in str(
        _one_line(tmp_path, HEAD + "def run(seeds, n_rows):\n    pass\n")
    )
    ignored = HEAD + "def run(seeds, dtype):\n    return {'x': np.zeros(2) + seeds['a']}\n"
    line = str(_one_line(tmp_path, ignored, dtype="float32"))
    assert "returned no float32 output (x float64)" in line


def test_iterating_the_seeds_counts_as_reading_them(tmp_path):
    f = tmp_path / "mine.py"
    f.write_text(
        "import numpy as np\nSEEDS = ('a', 'b')\ndef run(seeds):\n"
        "    s = dict(seeds)\n    return {'x': np.array([s['a']])}\n"
    )
    assert contract.call(contract.load(f), {"a": 1, "b": 2})["x"].tolist() == [1]


def test_missing_and_non_python_files(tmp_path):
    with pytest.raises(ContractError, match="no pipeline file"):
        contract.load(tmp_path / "nope.py")
    (tmp_path / "p.txt").write_text("")
    with pytest.raises(ContractError, match="a Python file"):
        contract.load(tmp_path / "p.txt")


def test_an_exception_inside_the_pipeline_names_its_line_and_keeps_the_traceback(tmp_path):
    src = (
        HEAD + "def helper(v):\n    return np.log(v) / undefined_name\n"
        "def run(seeds):\n    return {'x': helper(np.ones(2) * seeds['a'])}\n"
    )
    e = _one_line(tmp_path, src, exc=PipelineFailed)
    assert e.line.startswith("the pipeline raised NameError: name 'undefined_name'")
    assert "mine.py:4 in helper `return np.log(v) / undefined_name`" in e.line
    assert "(in run, at mine.py:4 in helper" in e.line  # a helper's frame: run still said once
    assert "Traceback (most recent call last)" in e.traceback and "in run" in e.traceback


def test_an_exception_in_a_library_names_the_pipeline_line_that_called_it(tmp_path):
    src = HEAD + "def run(seeds):\n    return {'x': np.zeros(2).reshape(seeds['a'] + 4)}\n"
    e = _one_line(tmp_path, src, exc=PipelineFailed)
    assert "ValueError" in e.line and "mine.py:4 in run" in e.line
    assert e.line.count("in run") == 1  # not "(in run, at mine.py:4 in run ...)"


def test_an_error_while_importing_the_file_is_a_pipeline_failure(tmp_path):
    f = tmp_path / "mine.py"
    f.write_text("import numpy as np\nSEEDS = ('a',\n")
    with pytest.raises(PipelineFailed, match=r"SyntaxError.*importing it, at mine.py:2"):
        contract.load(f)
    f.write_text("import no_such_module_kit\n")
    with pytest.raises(PipelineFailed, match=r"ModuleNotFoundError.*mine.py:1 in <module>"):
        contract.load(f)


def test_an_edited_file_is_a_new_pipeline(tmp_path):
    f = tmp_path / "mine.py"
    f.write_text(HEAD + GOOD_RUN)
    a = contract.load(f).sha256
    f.write_text(HEAD + GOOD_RUN + "# a comment\n")
    assert contract.load(f).sha256 != a


PROTEIN_RUN = (
    "def run(seeds):\n    seeds['a']\n    return {'ids': np.array(['P1', 'P2']), "
    "'more': np.array(['P3', 'P4']), 'train': np.array([b'T1', b'P2']), "
    "'y': np.array([0, 1])}\n"
)


@pytest.mark.parametrize(
    "kinds, words",
    [
        (
            {"ids": "proteins", "more": "proteins"},
            "KINDS names 2 proteins outputs ('ids', 'more'): declare one, holding the test rows' ids "
            "(the train rows' are 'train proteins')",
        ),
        (
            {"ids": "train proteins", "more": "train proteins"},
            "KINDS names 2 train proteins outputs ('ids', 'more'): declare one, holding the train rows' "
            "ids (the test rows' are 'proteins')",
        ),
    ],
)
def test_one_output_of_each_protein_kind(tmp_path, kinds, words):
    from kit.core.errors import KitError
    from kit.data.pipelines import declared

    source = HEAD + f"KINDS = {kinds!r}\n" + PROTEIN_RUN
    f = tmp_path / "mine.py"
    f.write_text(source)
    with pytest.raises(ContractError) as e:  # at import, before run is called
        contract.load(f)
    assert str(e.value) == "mine.py: " + words
    with pytest.raises(KitError, match="^mine.py: KINDS names 2"):  # kit run, before a worker
        declared("mine.py", source.encode())


def test_a_test_protein_that_is_a_train_protein_is_one_line(tmp_path):
    kinds = {"ids": "proteins", "train": "train proteins", "y": "truth"}
    e = _one_line(tmp_path, HEAD + f"KINDS = {kinds!r}\n" + PROTEIN_RUN)
    # b'P2' (bytes) and 'P2' (str) are one protein
    assert str(e) == (
        "mine.py: id 'P2' is in both 'ids' (proteins) and 'train' (train "
        "proteins): a test protein cannot also be a train protein"
    )
    ok = {"ids": np.array(["P1"]), "train": np.array(["T1"]), "y": np.array([0])}
    assert contract.check_outputs("mine.py", ok, kinds)
    with pytest.raises(ContractError, match=r"'P1' \(and 1 more\) is in both"):
        contract.check_outputs(
            "mine.py",
            {
                **ok,
                "ids": np.array(["P1", "T1"]),
                "y": np.array([0, 1]),
                "train": np.array(["T1", "P1"]),
            },
            kinds,
        )


def test_seeds_and_kinds_are_capped_in_one_line():
    # a bundle's file may name millions: the check must stay quick and its message short
    many = tuple(f"s{i}" for i in range(contract.MAX_NAMES + 1))
    with pytest.raises(ContractError, match="^mine.py: SEEDS names 1001 seeds: at most 1000$"):
        contract.check_seeds("mine.py", many)
    with pytest.raises(ContractError, match="^mine.py: KINDS names 1001 outputs: at most 1000$"):
        contract.check_kinds("mine.py", dict.fromkeys(many, "array"))
    assert contract.check_seeds("mine.py", many[:-1]) == many[:-1]
    with pytest.raises(ContractError, match="'s3' twice"):
        contract.check_seeds("mine.py", many[:5] + ("s3", "s3"))


@pytest.mark.parametrize(
    "check, value",
    [
        ("check_seeds", ("a" * 10**6 + " b",)),
        ("check_seeds", ("x" * 10**6,) * 2),
        ("check_kinds", {"x" * 10**6: "array", "y": "k" * 10**6}),
        ("check_kinds", {"x": "k" * 10**6}),
        ("check_kinds", {"p" * 10**6: "proteins", "q" * 10**6: "proteins"}),
    ],
)
def test_a_user_name_of_megabytes_is_cut_in_the_message(check, value):
    with pytest.raises(ContractError) as e:
        getattr(contract, check)("mine.py", value)
    assert len(str(e.value)) < 300 and "..." in str(e.value)


def test_an_output_or_id_of_megabytes_is_cut_in_the_message():
    long = "x" * 10**6
    for got, kinds in [
        ({"x": np.zeros(1)}, {long: "array"}),
        ({long: np.zeros(1)}, {}),
        (
            {"i": np.array(["y" * 200]), "t": np.array(["y" * 200])},
            {"i": "proteins", "t": "train proteins"},
        ),
    ]:
        with pytest.raises(ContractError) as e:
            contract.check_outputs("mine.py", got, kinds)
        assert len(str(e.value)) < 300 and "..." in str(e.value)


def test_the_contract_modules_keep_to_100_columns():
    from kit.worker import protein_ids

    for m in (contract, protein_ids):
        path = Path(m.__file__)
        wide = [i for i, line in enumerate(path.read_text().splitlines(), 1) if len(line) > 100]
        assert not wide, (path.name, wide)


def test_an_import_beside_the_file_says_kit_runs_its_copy(tmp_path):
    f = tmp_path / "0123abcd.py"  # kit's stored copy is named by its hash
    f.write_text("import numpy as np\nSEEDS = ('a',)\nopen('data.tsv')\n")
    with pytest.raises(PipelineFailed) as e:
        contract.load(f, "mine.py")
    assert str(e.value) == (
        "the pipeline raised FileNotFoundError: [Errno 2] No such file or directory: 'data.tsv' "
        "(importing it, at mine.py:3 in <module> `open('data.tsv')`); it runs from kit's copy "
        "kept by its hash, so keep it one self-contained file and read data by absolute path"
    )


def test_an_id_longer_than_a_bundle_carries_is_refused_at_run():
    from kit.worker.kinds import MAX_ID_CHARS

    kinds = {"ids": "proteins"}
    ok = {"ids": np.array(["P" * MAX_ID_CHARS, "Q"])}
    assert contract.check_outputs("mine.py", ok, kinds)
    for ids in (np.array(["P" * (MAX_ID_CHARS + 1), "Q"]), np.array([b"P" * 300, b"Q"])):
        with pytest.raises(ContractError) as e:
            contract.check_outputs("mine.py", {"ids": ids}, kinds)
        assert str(e.value) == (
            f"mine.py: output 'ids' (proteins) holds ids of {len(ids[0])} "
            f"characters: a protein id (an accession) is at most 256"
        )


@pytest.mark.parametrize(
    "body, says",
    [
        # every line of the message, as one line: the first alone ("shape mismatch:") said nothing
        (
            'raise ValueError("shape mismatch:\\n  expected (10, 3)\\n  got (10, 4)")',
            "the pipeline raised ValueError: shape mismatch: expected (10, 3) got (10, 4) (at "
            "mine.py:6 in run",
        ),
        # an exception whose __str__ raises: its own type and place, never the __str__'s error
        (
            "raise Odd()",
            "the pipeline raised Odd: (its message could not be read: str() of it raised) (at "
            "mine.py:6 in run",
        ),
        (
            'raise KeyboardInterrupt("user pressed")',
            "the pipeline raised KeyboardInterrupt itself (an interrupt from inside the pipeline, not "
            "a Ctrl-C of kit): user pressed (at mine.py:6 in run",
        ),
    ],
)
def test_a_pipeline_s_exception_is_said_whole_in_one_line(tmp_path, body, says):
    f = tmp_path / "mine.py"
    f.write_text(
        "SEEDS = ('a',)\nclass Odd(Exception):\n    def __str__(self):\n"
        "        raise RuntimeError('str fails')\ndef run(seeds):\n"
        f"    seeds['a']; {body}\n"
    )
    c = contract.load(f, "mine.py")
    with pytest.raises(PipelineFailed) as e:
        contract.call(c, {"a": 0})
    assert str(e.value).startswith(says), str(e.value)


def test_every_kind_is_said_with_its_article():
    # "is a embedding output" (#43): each kind a sentence names reads as English
    from kit.worker.kinds import OUTPUT_KINDS, a_kind

    said = {k: a_kind(k) for k in OUTPUT_KINDS}
    assert said["embedding"] == "an embedding" and said["array"] == "an array"
    assert said["probabilities"] == "a probabilities"
    assert said["train proteins"] == "a train proteins"
    assert all(v.startswith("an " if k[0] in "aeiou" else "a ") for k, v in said.items())
