# Paper Desk: `make run` serves the demo paper, `make test` runs the suite, `make test-fast` the quick part.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 5000
export FLASK_APP := app

.PHONY: install install-runtime run alerts test test-fast test-sqlite test-postgres lint schemathesis clients faults ci openapi bench bench-day bench-alerts clean

# A marker written last, so a venv left half-made by an interrupted run is made again.
$(VENV)/.created:
	rm -rf $(VENV)
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	touch $@

# Two pinned locks: requirements.lock is what the app, `flask worker` and gunicorn import (all
# `make run` needs: about 48 packages), requirements-test.lock the test suite's and the tools'
# (pytest, Playwright, schemathesis, ruff...: most of the weight). pip prints each package as it
# goes, so a first install shows its progress rather than a silent minute.
$(VENV)/.runtime: $(VENV)/.created pyproject.toml requirements.lock
	@echo "Installing the runtime dependencies (requirements.lock) into $(VENV)"
	$(BIN)/pip install --progress-bar on -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

$(VENV)/.installed: $(VENV)/.runtime requirements-test.lock
	@echo "Installing the test and tool dependencies (requirements-test.lock) into $(VENV)"
	$(BIN)/pip install --progress-bar on -r requirements.lock -r requirements-test.lock
	touch $@

install-runtime: $(VENV)/.runtime ## create .venv with the runtime dependencies only (what `make run` needs)

install: $(VENV)/.installed ## create .venv with the runtime, test and tool dependencies (pinned)

# Links in mail (built outside a request by send-alerts) lead to what `make run` serves.
run alerts: export PUBLIC_BASE_URL ?= http://127.0.0.1:$(PORT)
# The local demo delivers webhooks to receivers on this machine (README "Content webhooks");
# production leaves it off (loopback and private targets refused).
run: export WEBHOOK_ALLOW_PRIVATE ?= 1

# The confirm-mail drainer runs in the background beside the server and stops when it does
# (any exit of the recipe's shell: Ctrl-C included), so a subscribe's mail arrives in a second.
# The server is gunicorn with the production config (gunicorn.conf.py), not werkzeug's `flask
# run`, whose `Server` header names the werkzeug and Python versions (gunicorn's says `gunicorn`;
# tests/test_make_run.py starts this very command and checks). Two workers of four threads:
# requests overlap as they would in production, on a laptop's memory.
run: install-runtime ## migrate, seed the demo paper once, serve on 127.0.0.1:$(PORT) (gunicorn) with the outbox drainer beside it (PUBLIC_BASE_URL=http://127.0.0.1:$(PORT))
	$(BIN)/flask init-db
	$(BIN)/flask seed-demo --if-empty
	$(BIN)/flask run-info --port $(PORT)
	$(BIN)/flask worker & drainer=$$!; \
	trap 'kill -TERM $$drainer 2>/dev/null; wait $$drainer; $(BIN)/flask run-info --forget' EXIT INT TERM; \
	$(BIN)/gunicorn --config gunicorn.conf.py --bind 127.0.0.1:$(PORT) --workers 2 --threads 4

alerts: install-runtime ## send-alerts once, with the links of what `make run` serves
	$(BIN)/flask send-alerts

test: install ## the suite on SQLite, and on PostgreSQL too when TEST_DATABASE_URL is set
	$(BIN)/pytest -q $(PYTEST_ARGS)

test-fast: install ## the quick loop: SQLite only, without the browser and slow tests (markers in pyproject.toml)
	env -u TEST_DATABASE_URL $(BIN)/pytest -q -m "not browser and not slow" $(PYTEST_ARGS)

test-sqlite: install ## the suite on SQLite only
	env -u TEST_DATABASE_URL $(BIN)/pytest -q $(PYTEST_ARGS)

test-postgres: install ## the PostgreSQL half of the suite (needs TEST_DATABASE_URL)
	@test -n "$$TEST_DATABASE_URL" || { echo "set TEST_DATABASE_URL=postgresql://..."; exit 2; }
	$(BIN)/pytest -q -k postgresql $(PYTEST_ARGS)

lint: install ## ruff check over the whole repo (settings in pyproject.toml)
	$(BIN)/ruff check .

schemathesis: install ## fuzz the running app against its OpenAPI document (SQLite; PostgreSQL too with TEST_DATABASE_URL)
	$(BIN)/python scripts/ci_schemathesis.py $(SCHEMATHESIS_ARGS)

clients: install ## lint the live OpenAPI document (redocly, spectral), generate Python and TypeScript clients into build/clients and call every route through the Python one (needs node and npm)
	$(BIN)/python scripts/clients/build.py $(CLIENTS_ARGS)

faults: install ## the fault and abuse suite against real gunicorn servers (PostgreSQL via FAULTS_DATABASE_URL, a database it wipes, or a new one on TEST_DATABASE_URL's server); table in build/faults/table.md
	$(BIN)/python scripts/faults.py $(FAULTS_ARGS)

ci: ## what CI runs: install, test on both backends, schemathesis on both backends, the generated clients, the fault suite
	bash .ci/run

openapi: install-runtime ## write the OpenAPI document to openapi.json
	$(BIN)/flask openapi --output openapi.json

bench: install ## load benchmarks at 100 000 pieces on SQLite and PostgreSQL (BENCH_DATABASE_URL), cold and warm, then bench-day and bench-alerts; writes docs/PERFORMANCE.md
	@command -v wrk >/dev/null 2>&1 || apt-get install -y -q wrk || sudo apt-get install -y -q wrk
	$(BIN)/python -m bench.http_bench $(HTTP_BENCH_ARGS)
	$(MAKE) bench-day
	$(MAKE) bench-alerts

bench-day: install ## a newsroom's day: the read mix under wrk while a desk agent files every 2 s, 100 000 pieces (DAY_ARGS='--pieces 1000' for a quick run), SQLite and PostgreSQL, against bare Flask; writes docs/PERFORMANCE.md
	@command -v wrk >/dev/null 2>&1 || apt-get install -y -q wrk || sudo apt-get install -y -q wrk
	$(BIN)/python -m bench.day $(DAY_ARGS)

bench-alerts: install ## 1, 2 and 4 alert senders sharing 100 000 readers' alerts over a local SMTP sink (PostgreSQL too with BENCH_DATABASE_URL); appends to docs/PERFORMANCE.md
	$(BIN)/python bench/alerts.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) instance .pytest_cache build tests/fedify/node_modules
