# The two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
WORKERS ?= 4  # pytest-xdist workers: most of a test's time is spent waiting (PostgreSQL, processes)
STAMP  := $(VENV)/.installed-stamp

.PHONY: install run test test-fast test-citus lint format bench clean

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

run: install        ## embedded PostgreSQL + Redis, migrate, org `demo`, API + worker + scheduler (PORT=8080: another port; PLAN=PRO: the demo org's plan)
	$(BIN)/faq dev --bind 127.0.0.1:$(or $(PORT),8000) $(if $(PLAN),--plan $(PLAN),)

test: install       ## the whole suite, real (embedded) PostgreSQL and Redis per worker: in parallel, then the `serial` tests alone
	@# Debian's chromium for the browser tests (tests/api/test_docs_page.py, the help center); root in CI
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)
	@# Both parts always run; either failing fails the target (5: the selection left one empty).
	@status=0; start=$$(date +%s); \
	$(BIN)/pytest -n $(WORKERS) -m 'not serial' $(PYTEST_ARGS) || status=$$?; \
	middle=$$(date +%s); \
	$(BIN)/pytest -m serial $(PYTEST_ARGS) || [ $$? -eq 5 ] || status=1; \
	[ $$status -eq 5 ] && status=0; \
	echo "make test: parallel part $$((middle - start)) s, serial part $$(($$(date +%s) - middle)) s"; \
	exit $$status

test-fast: install  ## the inner loop: every test not marked `slow` or `serial`, in parallel (under 3 minutes)
	$(BIN)/pytest -n $(WORKERS) -m 'not slow and not serial' $(PYTEST_ARGS)

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
