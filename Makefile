# Meridian: `make run` serves the bundled samples, `make test` runs the test suite.
# Both set everything up on a fresh machine: virtualenv, packages (pinned by requirements.lock),
# Redis, sample import. `make lint` is the quality gate (.ci/run runs it before the tests).

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)
export DATA_DIR ?= $(CURDIR)/var/data
export DATABASE_URL ?= sqlite:///$(CURDIR)/var/meridian.db
export PORT ?= 3000

SAMPLES := data/samples/monaco.osm.pbf data/samples/helsinki.osm.pbf
# The lock is resolved for the interpreter and platform the project runs on (CI included).
LOCK_TARGET := --python-version 3.11 --python-platform x86_64-unknown-linux-gnu
LOCK_EXTRAS := --extra test --extra dev
FAST_TESTS := -m "not needs_data and not integration"

.PHONY: install run test test-fast test-min import openapi bench lint lock lock-upgrade clean

# Exactly the versions in requirements.lock, then the project itself without resolving again.
$(VENV)/.installed: pyproject.toml requirements.lock
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.lock
	$(BIN)/python -m pip install -q --no-deps -e .
	@touch $@

install: $(VENV)/.installed

import: install
	@for f in $(SAMPLES); do $(BIN)/meridian import $$f || exit 1; done

run: install
	@bash scripts/run.sh

test: install
	@bash scripts/test.sh $(PYTEST_ARGS)

# Tests that need neither the imported samples nor live gunicorn/Celery/PostgreSQL: seconds.
test-fast: install
	@bash scripts/test.sh $(FAST_TESTS) $(PYTEST_ARGS)

# The fast tests in a separate virtualenv holding the lowest versions pyproject.toml allows.
test-min: install
	@bash scripts/test-min.sh $(FAST_TESTS) $(PYTEST_ARGS)

openapi: install
	$(BIN)/meridian openapi --out docs/api

bench: install
	@bash scripts/bench.sh

# ruff check, ruff format --check and mypy (scripts/lint.sh); fails when any of them finds something.
lint: install
	@bash scripts/lint.sh

# requirements.lock from pyproject.toml: the pins already in the lock are kept where they still
# satisfy pyproject.toml (add a dependency, run `make lock`); `make lock-upgrade` takes the newest.
lock: install
	$(BIN)/uv pip compile pyproject.toml $(LOCK_EXTRAS) $(LOCK_TARGET) $(LOCK_ARGS) \
		--custom-compile-command "make lock" --quiet -o requirements.lock

lock-upgrade:
	@$(MAKE) lock LOCK_ARGS=--upgrade

clean:
	rm -rf var .pytest_cache .mypy_cache tests/artifacts
