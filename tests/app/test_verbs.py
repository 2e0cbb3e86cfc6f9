"""kit.app.verbs: each verb on a small store of both subject kinds (kit's own pipeline on a tiny
dataset, a lab's pipeline file), a verb a kind cannot answer refused in one line by the verb,
`kit budget --csv --pipeline` read back, and no subject-kind test left in kit/cli."""

import io
import re
from dataclasses import FrozenInstanceError

import pandas as pd
import pytest
from places import KIT, PIPELINES

from kit.app import verbs
from kit.app.selection import select
from kit.cli import main
from kit.core.errors import KitError, NotFound, Refused
from kit.core.subject import DATASET, PIPELINE
from kit.data.dataset import save_dataset
from kit.runs.planning.options import PlanOptions
from kit.runs.store import Store

LAB, TWO = PIPELINES / "lab.py", PIPELINES / "two_models.py"
CLI = KIT / "cli"


def test_no_command_asks_which_kind_its_subject_is():
    """The CLI maps words onto a verb: a branch on the subject's kind lives in kit.app.verbs."""
    said = []
    for path in sorted(CLI.glob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"args\.pipeline\b|\bis_pipeline\b|\.kind ==|\.kind !=", line):
                said.append(f"{path.name}:{n}: {line.strip()}")
    assert not said, "\n".join(said)
    assert not (CLI / "lab_read.py").exists()


def test_select_makes_words_one_subject(capsys):
    store = Store()
    with pytest.raises(NotFound, match="the store is empty"):
        select(store)
    with pytest.raises(NotFound, match="no pipeline file nowhere.py"):
        select(store, pipeline="nowhere.py")
    with pytest.raises(Refused, match="choose two different things"):
        select(store, dataset="synthetic", pipeline=str(LAB))
    with pytest.raises(Refused, match="--data goes with --pipeline"):
        select(store, only_with_pipeline="--data")
    s = select(store, pipeline=str(LAB))
    assert s.kind == PIPELINE and s.name == "lab.py" and s.seeds == ("split", "init")
    assert s.summary["file"] == str(LAB) and s.kind_of("emb") == "embedding"
    with pytest.raises((FrozenInstanceError, AttributeError, TypeError)):
        s.summary["name"] = "other"  # what one reader is shown, no other reader changes


def _kit_store(tiny):
    """kit's own pipeline on the tiny set: a repeat pair, made through the run verb."""
    save_dataset(tiny)
    store = Store()
    told = []
    target = verbs.to_run(store, ("repeat",), dataset="tiny")
    rec = verbs.run(store, target, PlanOptions(threads=(1,)), chosen=told.append)
    assert rec.failure is None and rec.asked == ("repeat",)
    assert told == [rec.subject] and rec.subject.kind == DATASET
    return store, rec


def _lab_store(path=LAB, factors=("repeat", "seed")):
    store = Store()
    target = verbs.to_run(store, factors, pipeline=str(path))
    rec = verbs.run(store, target, PlanOptions(threads=(1,), seeds=(0, 1)))
    assert rec.failure is None and rec.subject.kind == PIPELINE
    return store, rec


@pytest.mark.slow
def test_every_verb_on_kits_own_pipeline(tiny, tmp_path):
    store, ran = _kit_store(tiny)
    s = select(store)
    assert s == ran.subject and "most recent run" in s.why
    b = verbs.budget(store, s)
    assert [r.factor for r in b.data["rows"]] == ["repeat"] and b.verdicts is None
    assert len(verbs.budget(store, s, "repeat").data) == 1  # its one pair
    with pytest.raises(Refused, match="unknown factor 'repeet'"):
        verbs.budget(store, s, "repeet")
    with pytest.raises(NotFound, match="no pairs of factor 'seed'"):
        verbs.budget(store, s, "seed")
    assert isinstance(verbs.verdicts(store, s).data, dict)
    assert verbs.amplify(store, s).subject == s
    assert "ranking" in verbs.advise(store, s).data
    with pytest.raises(NotFound, match="no homology clustering"):
        verbs.homology(store, s)
    with pytest.raises(Refused, match="--data goes with --pipeline"):
        verbs.homology(store, s, data="x")
    r = verbs.runs(store, s)
    assert len(r.runs) == 2 and not r.filtered
    assert len(verbs.runs(store, None, stack="np1-sk152").runs) == 0  # a stack, none of its runs
    with pytest.raises(verbs.BadOption, match="unknown stack 'nowhere'; `kit stacks` lists them"):
        verbs.runs(store, None, stack="nowhere")  # no stack at all: said as --factor's
    with pytest.raises(verbs.BadOption, match="unknown factor 'nope'"):
        verbs.runs(store, s, factors=("nope",))
    assert verbs.tolerances(store, s).data["tolerances"] is not None
    assert set(verbs.export_runs(store, s, ("repeat",)).ids) == {x.id for x in r.runs}
    with pytest.raises(KitError, match="no pairs of factor 'seed'"):
        verbs.explain(store, s, "seed")
    # the CLI over the same verbs: a budget's CSV, one row per budget row
    assert main(["budget", "--csv"]) == 0


@pytest.mark.slow
def test_every_verb_on_a_lab_pipeline(capsys, tmp_path):
    store, ran = _lab_store()
    s = select(store, pipeline=ran.subject.short)  # by its hash prefix, as `kit runs` shows
    assert s == ran.subject and "file" not in s.summary
    b = verbs.budget(store, s)
    assert set(b.data["factors"]) == {"repeat", "seed"} and b.verdicts is not None
    with pytest.raises(NotFound, match="no pairs of factor 'seed:split'"):
        verbs.budget(store, s, "seed:split")
    assert [p["label"] for p in verbs.budget(store, s, "seed").data["pairs"]] == ["seed 0 vs 1"]
    assert verbs.verdicts(store, s).data["models"] == ["p_lr"]
    assert verbs.advise(store, s).data["steps"][0]["step"] == "loose"
    with pytest.raises(Refused, match='declares no "proteins" output'):
        verbs.homology(store, s)
    assert len(verbs.runs(store, s).runs) == len(verbs.runs(store, s, factors=("repeat",)).runs) + 1
    with pytest.raises(NotFound, match="no pairs of factor 'seed:init'"):
        verbs.runs(store, s, factors=("seed:init",))
    assert "tolerances" in verbs.tolerances(store, s).data
    assert verbs.export_runs(store, s).ids
    # what the verb cannot do for a pipeline, the verb says in one line, naming what it needs
    for verb in (lambda: verbs.amplify(store, s), lambda: verbs.explain(store, s, "seed")):
        with pytest.raises(Refused) as e:
            verb()
        assert "\n" not in str(e.value) and "declares outputs, not stages" in str(e.value)
    with pytest.raises(Refused, match="a pipeline file's pairs have none"):  # no cluster started
        verbs.explain(store, s, "repeat", cluster="local:2")
    for argv in (("explain", "seed", "--pipeline", s.short), ("amplify", "--pipeline", str(LAB))):
        assert main(list(argv)) == 1
        err = capsys.readouterr().err
        assert err.startswith("kit: error: ") and err.count("\n") == 1, err
        assert "declares outputs, not stages" in err

    # `kit budget --csv --pipeline`: one row per factor and output, read back as JSON has them
    assert main(["budget", "--pipeline", str(LAB), "--csv"]) == 0
    got = capsys.readouterr()
    assert got.err.startswith(f"pipeline lab.py ({s.short})")
    df = pd.read_csv(io.StringIO(got.out), index_col=[0, 1])
    want = b.data["factors"]
    assert set(df.index) == {(f, o) for f, r in want.items() for o in r["outputs"]}
    for (f, o), row in df.iterrows():
        assert row["pairs"] == want[f]["pairs"]
        assert row["changed"] == want[f]["outputs"][o]["changed"]
    assert main(["budget", "--pipeline", str(LAB), "--csv", "--factor", "seed"]) == 0
    pairs = pd.read_csv(io.StringIO(capsys.readouterr().out), index_col=[0, 1])
    assert {p for p, _ in pairs.index} == {"seed 0 vs 1"}


@pytest.mark.slow
def test_doctor_of_a_pipeline_file_is_a_verb_too():
    rec = verbs.doctor(str(LAB))
    assert rec.subject.kind == PIPELINE and rec.subject.name == "lab.py"
    assert not rec.ok and "jitter" in rec.data["loose"]  # its unseeded stage, found alone
