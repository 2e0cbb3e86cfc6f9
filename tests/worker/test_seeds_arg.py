"""kit.worker.seeds_arg: the seeds a lab's run receives, a dict that remembers what was read."""

import pytest

from kit.worker.seeds_arg import Seeds, UnknownSeed


def test_a_seed_read_by_name_or_get_is_remembered_and_an_absent_one_is_not():
    s = Seeds({"split": 1, "init": 2})
    assert s["split"] == 1 and s.get("nope", 7) == 7 and s.read == {"split"}
    assert s.get("init") == 2 and s.read == {"split", "init"}


def test_a_seed_seeds_does_not_name_is_its_own_key_error():
    with pytest.raises(UnknownSeed) as e:
        Seeds({"split": 1})["init"]
    assert isinstance(e.value, KeyError)


@pytest.mark.parametrize("how", ["iter", "keys", "values", "items", "copy"])
def test_reading_them_all_at_once_counts_as_reading_each(how):
    s = Seeds({"split": 1, "init": 2})
    list(s) if how == "iter" else getattr(s, how)()
    assert s.read == {"split", "init"}


def test_a_copy_is_a_plain_dict():
    copied = Seeds({"split": 1}).copy()
    assert type(copied) is dict and copied == {"split": 1}
