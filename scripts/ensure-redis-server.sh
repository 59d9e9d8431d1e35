#!/usr/bin/env bash
# Make sure the redis-server binary is installed (Debian's redis-server package) without starting
# it: the test session starts a redis-server of its own on a free port (tests/fixtures_live.py).
set -euo pipefail
command -v redis-server >/dev/null 2>&1 && exit 0
echo "redis-server not found: installing Debian's redis-server package" >&2
if [ "$(id -u)" = 0 ]; then apt-get update -qq >&2 && apt-get install -y -qq redis-server >&2
else sudo apt-get update -qq >&2 && sudo apt-get install -y -qq redis-server >&2; fi
