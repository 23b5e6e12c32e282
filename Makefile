# Paper Desk: `make run` serves the demo paper, `make test` runs the suite.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 5000
export FLASK_APP := app

.PHONY: install run test test-sqlite test-postgres openapi bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml requirements.lock
	$(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

install: $(VENV)/.installed ## create .venv and install pinned dependencies

run: install ## migrate, seed the demo paper once, serve on 127.0.0.1:$(PORT)
	$(BIN)/flask init-db
	$(BIN)/flask seed-demo --if-empty
	$(BIN)/flask run-info --port $(PORT)
	$(BIN)/flask run --host 127.0.0.1 --port $(PORT)

test: install ## the suite on SQLite, and on PostgreSQL too when TEST_DATABASE_URL is set
	$(BIN)/pytest -q

openapi: install ## write the OpenAPI document to openapi.json
	$(BIN)/flask openapi --output openapi.json

clean:
	rm -rf $(VENV) instance .pytest_cache
