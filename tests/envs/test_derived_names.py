"""kit.envs.derived_names: a derived stack's name made from its base and requirements, and read
back only when it names a catalogue stack in the one form kit writes."""

from kit.envs.catalogue import definitions
from kit.envs.derived_names import base_of, derived_name


def test_a_name_is_read_back_as_its_base_whatever_the_requirements_order():
    base = sorted(definitions())[0]
    name = derived_name(base, ["tabulate==0.9.0", "rich>=13"])
    assert name == derived_name(base, ["rich>=13", "tabulate==0.9.0"])
    assert name.startswith(f"req-{base}-") and base_of(name) == base
    assert derived_name(base, ["rich>=13"]) != name


def test_a_name_of_no_catalogue_stack_or_not_of_the_form_is_none():
    base = sorted(definitions())[0]
    name = derived_name(base, ["rich>=13"])
    for other in (
        "req-not-a-stack-0123456789",
        name + "0",
        name.upper(),
        f"req-../{base}-0123456789",
        base,
        None,
        7,
    ):
        assert base_of(other) is None, other
