#!/usr/bin/env bash
# `make test-min`: are the lower bounds in pyproject.toml true? Resolves the lowest versions they
# allow for the direct dependencies (uv's --resolution lowest-direct; transitive ones as resolved),
# installs them into a separate virtualenv (var/venv-min, the main .venv is untouched) and runs
# the tests given as arguments there (the Makefile passes the fast selection).
set -euo pipefail
cd "$(dirname "$0")/.."
UV=.venv/bin/uv
VENV=var/venv-min
mkdir -p var
"$UV" pip compile pyproject.toml --extra test --resolution lowest-direct \
  --python-version 3.11 --python-platform x86_64-unknown-linux-gnu --quiet -o var/requirements-min.txt
[ -x "$VENV/bin/python" ] || "$UV" venv --quiet --python "$(command -v python3)" "$VENV"
"$UV" pip install --quiet --python "$VENV/bin/python" -r var/requirements-min.txt
"$UV" pip install --quiet --python "$VENV/bin/python" --no-deps -e .
echo "lowest direct versions: var/requirements-min.txt"
bash scripts/ensure-redis-server.sh || { echo "redis-server unavailable" >&2; exit 1; }
mkdir -p tests/artifacts
rc=0
"$VENV/bin/python" -m pytest "$@" || rc=$?
if [ $rc -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi
exit $rc
