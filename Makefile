# The two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: install run test test-citus lint format bench clean

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

run: install        ## embedded PostgreSQL + Redis, migrate, org `demo`, API + worker + scheduler (PORT=8080: another port)
	$(BIN)/faq dev --bind 127.0.0.1:$(or $(PORT),8000)

test: install       ## the whole suite against real (embedded) PostgreSQL and Redis
	@# Debian's chromium for the /docs browser test (tests/api/test_docs_page.py); root in CI
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)
	$(BIN)/pytest $(PYTEST_ARGS)

test-citus: install ## the integration tests on a real Citus cluster (root; builds it once from ../shared/citus)
	bash .ci/citus $(PYTEST_ARGS)

lint: install       ## ruff, mypy and the import contracts (layers, no cycles)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: install      ## benchmarks: figures, references and ratios (QUICK=1 for a short run)
	$(BIN)/python -m bench $(if $(QUICK),--quick,)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
