#!/usr/bin/env bash
# `make test`: the redis-server binary (the test session starts its own on a free port), headless Chromium for the browser test (Debian's
# package, installed when missing; the test skips with the reason if that fails), then pytest.
# The sample datasets are built once per test session by tests/conftest.py; the test session
# starts its own Celery worker and gunicorn processes.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-redis-server.sh || { echo "redis-server unavailable" >&2; exit 1; }
bash scripts/ensure-chromium.sh || echo "warning: chromium unavailable; browser tests will skip" >&2
bash scripts/ensure-haproxy.sh || echo "warning: haproxy unavailable; the multi-node test will skip" >&2
mkdir -p tests/artifacts
.venv/bin/python -m pytest "$@"
rc=$?
if [ $rc -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi
exit $rc
