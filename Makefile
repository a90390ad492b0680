# One entry point for developers and CI: each target installs what it needs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Running needs the server's dependencies only; the benchmarks add the bench (bench/, its own
# distribution: benchmarks, local peers, `tocsin chaos`), and the checks add it and the dev
# tools (mypy, playwright, schemathesis…). Each set has its stamp: `make run` installs
# neither.
RUN_STAMP   := $(VENV)/.installed-run
BENCH_STAMP := $(VENV)/.installed-bench
DEV_STAMP   := $(VENV)/.installed-dev

.PHONY: run test lint typecheck pytest bench lock clean

$(RUN_STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e .
	touch $@

$(BENCH_STAMP): $(RUN_STAMP) bench/pyproject.toml
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ./bench
	touch $@

$(DEV_STAMP): $(BENCH_STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@

run: $(RUN_STAMP)
	$(BIN)/tocsin serve

lint: $(DEV_STAMP)
	$(BIN)/ruff check src bench/src tests
	$(BIN)/ruff format --check src bench/src tests

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

# Most tests wait on real clocks and processes, so they run PYTEST_JOBS at a time, a file per
# process, the files of a minute or more (marked `long`) handed out first, in their own order
# (tests/support/order.py); the few that stop the shared PostgreSQL server (marked `exclusive`)
# or load the whole machine (marked `heavy`) run after, alone.
# Exit status 5 is "no test selected" (PYTEST_ARGS naming files of one kind only).
PYTEST_JOBS ?= 6

pytest: $(DEV_STAMP)
	$(BIN)/pytest -n $(PYTEST_JOBS) --dist loadfile --no-loadscope-reorder -m "not exclusive and not heavy" $(PYTEST_ARGS) || [ $$? -eq 5 ]
	$(BIN)/pytest -p no:xdist -m "exclusive or heavy" $(PYTEST_ARGS) || [ $$? -eq 5 ]

test: lint typecheck pytest

bench: $(BENCH_STAMP)
	$(BIN)/tocsin bench all

# Re-resolve the locked versions from pyproject.toml (run after changing dependencies).
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet '.[dev]' ./bench
	.lock-venv/bin/pip freeze --exclude tocsin --exclude tocsin-bench > constraints.txt
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
