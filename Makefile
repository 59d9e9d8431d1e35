# Meridian: `make run` serves the bundled samples, `make test` runs the test suite.
# Both set everything up on a fresh machine: virtualenv, packages, Redis, sample import.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)
export DATA_DIR ?= $(CURDIR)/var/data
export DATABASE_URL ?= sqlite:///$(CURDIR)/var/meridian.db
export PORT ?= 3000

SAMPLES := data/samples/monaco.osm.pbf data/samples/helsinki.osm.pbf

.PHONY: install run test import redis openapi bench lint clean

$(VENV)/.installed: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $@

install: $(VENV)/.installed

import: install
	@for f in $(SAMPLES); do $(BIN)/meridian import $$f || exit 1; done

run: install
	@bash scripts/run.sh

test: install
	@bash scripts/test.sh $(PYTEST_ARGS)

openapi: install
	$(BIN)/meridian openapi --out docs/api

bench: install
	@bash scripts/bench.sh

lint: install
	$(BIN)/python -m ruff check . || true

clean:
	rm -rf var .pytest_cache tests/artifacts
