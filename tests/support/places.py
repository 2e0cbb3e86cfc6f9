"""Where things are in the checkout, for tests at any depth of tests/ and the helpers here."""

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
TESTS = SUPPORT.parent
ROOT = TESTS.parent  # the checkout
KIT = ROOT / "kit"
PIPELINES = SUPPORT / "pipelines"  # the lab pipeline files the tests run
FIXTURES = SUPPORT / "fixtures"  # stores made by an older kit
SAVED = SUPPORT / "saved_outputs"  # every reader's output, compared by the output tests
