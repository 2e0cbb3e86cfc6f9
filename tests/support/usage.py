"""The usage-error check, for every test of a command line: exit 2 and what it said."""

import pytest

from kit.cli import main


def usage_error(argv, capsys) -> str:
    """What ``kit ARGV`` says on stderr, once it has exited 2 (a usage error)."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    return capsys.readouterr().err
