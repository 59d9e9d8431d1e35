#!/usr/bin/env bash
# `make lint`, the quality gate: ruff's linter, ruff's formatter in check mode, mypy (each
# configured in pyproject.toml), then the import contracts of .importlinter (lint-imports: the
# floors of app/, what engine/ and queueing/ may not import; always the whole project). All run;
# the exit status is non-zero when any finds something.
#
# LINT_ROOT: the project to check (default: this repository; tests/unit/test_lint_gate.py points
# it at a scratch project). With arguments, checks those paths only; without, ruff checks the
# whole tree and mypy the `files` listed in its configuration.
set -uo pipefail
BIN=${LINT_BIN:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin}
cd "${LINT_ROOT:-$(dirname "$0")/..}" || exit 2
status=0
run() {
  echo "+ $*"
  "$@" || status=1
}
run "$BIN/ruff" check "${@:-.}"
run "$BIN/ruff" format --check "${@:-.}"
run "$BIN/mypy" "$@"
if [ -f .importlinter ]; then run "$BIN/lint-imports" --no-cache; fi
if [ $status -ne 0 ]; then echo "lint: FAILED" >&2; else echo "lint: ok"; fi
exit $status
