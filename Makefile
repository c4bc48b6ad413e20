# Two commands on a fresh machine: `make run` and `make test`. The virtualenv is made here.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000
# pytest-xdist workers: on 2 cores, 3 with work stealing measured fastest (README: Tests); the
# process tests spend much of their time waiting on their child processes.
TEST_WORKERS ?= 3
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist worksteal

.PHONY: install run postgres postgres-stop test test-fast fuzz bench bench-instructions lint format clean screenshots

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet pip==26.3
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $@

install: $(BIN)/.installed

run: install
	@mkdir -p var
	$(BIN)/baton migrate
	$(BIN)/baton seed --demo
	@echo
	@echo "Baton serves on http://$(HOST):$(PORT)  (API docs: http://$(HOST):$(PORT)/docs)"
	@echo "Open it and sign in with a demo sign-in printed above:"
	@echo "  1. as sam (support-agents): Start a run > refund, amount 120; then Sign out;"
	@echo "  2. as lee (support-leads): the request is in the inbox; open it and Approve."
	@echo "  (Four-eyes: whoever starts a run cannot approve its requests, hence two people.)"
	@echo "For the API, get a token for a demo person, e.g. lee of support-leads:"
	@echo "    $(BIN)/baton tokens create lee"
	@echo "Then: curl -H 'Authorization: Bearer <token>' http://$(HOST):$(PORT)/api/workflows"
	@echo
	$(BIN)/baton serve --host $(HOST) --port $(PORT)

# A local PostgreSQL (Debian's postgresql package) in var/postgres on 127.0.0.1:5433, for
# `BATON_DATABASE_URL=postgresql://postgres@127.0.0.1:5433/baton make run` (README: Run at scale).
postgres: install
	$(BIN)/python -m baton.devpg start --data var/postgres --port 5433

postgres-stop: install
	$(BIN)/python -m baton.devpg stop --data var/postgres

test: install
	-@uptime
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(PYTEST)
	-@uptime

# The inner loop: unit, contract and in-process HTTP tests on SQLite; no lint, no mypy, no
# PostgreSQL, no `baton serve` processes, no browser, no benchmark (README: Tests).
test-fast: install
	$(PYTEST) -m "not process" --backend sqlite --ignore tests/browser --ignore tests/benchmarks

# A long schemathesis run over /openapi.json of a real `baton serve` (SQLite and PostgreSQL):
# every phase (stateful too: sequences following the links inferred from `Location`), 50
# examples per operation, each answer checked against the published schema (status, body, content type, headers: tests/e2e/test_fuzz_api.py); `make test` runs a short one.
FUZZ_EXAMPLES ?= 50
FUZZ_SEED ?= 20261203
fuzz: install
	BATON_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) BATON_FUZZ_SEED=$(FUZZ_SEED) BATON_FUZZ_PHASES=examples,coverage,fuzzing,stateful \
		$(BIN)/python -m pytest -q -s -p no:cacheprovider tests/e2e/test_fuzz_api.py

# Every page at 1366x768 and 390x844 as the demo people see it, requests in every state, as PNGs
# in var/screenshots/ (git-ignored): the whole UI in one go (README: Web pages).
screenshots: install
	$(BIN)/python -m tests.screenshots

bench: install
	$(BIN)/baton bench --json

# A cycle's instructions beside LangGraph and bare MAF, counted by valgrind (needs it; minutes).
bench-instructions: install
	$(BIN)/baton bench-instructions --json

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) var *.egg-info
