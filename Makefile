# The checks CI runs first (.ci/run), then the two test tiers. Everything runs from .venv
# (./bootstrap.sh --no-stacks --no-audit makes it, with the dev extra that holds these tools).
PY := .venv/bin/python
BIN := .venv/bin
SPELLED := kit tests bench docs README.md bootstrap.sh .ci Makefile

.PHONY: check lint format-check types spelling test-fast test

check: lint format-check types spelling

lint:
	$(BIN)/ruff check .

format-check:
	$(BIN)/ruff format --check .

# kit/ with pyproject's settings (kit/core, the store and analysis strictly), then the worker
# against the oldest Python mypy can target. The worker runs inside every stack's interpreter,
# 3.9 included, but mypy 2 refuses `--python-version 3.9` ("Python 3.9 is not supported (must be
# 3.10 or higher)"), so it is checked as 3.10 here and ruff checks its syntax against 3.9
# (pyproject's per-file-target-version)
types:
	$(BIN)/mypy
	$(BIN)/mypy --python-version 3.10 --follow-imports=silent kit/worker

spelling:
	$(BIN)/codespell $(SPELLED)

# no workers, no stack builds: what to run after every change
test-fast:
	$(PY) -m pytest -m "not slow" -n 2 -q

# README's test command: everything but the soaks
test:
	$(PY) -m pytest -n 2
