#!/usr/bin/env bash
# Print a Redis URL that answers: $REDIS_URL (default redis://127.0.0.1:6379/0) when it does,
# else a redis-server started here on 127.0.0.1:${MERIDIAN_REDIS_PORT:-6390} (Debian's
# redis-server package is installed when missing). Messages go to stderr, the URL to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
url=${REDIS_URL:-redis://127.0.0.1:6379/0}

ping() { "$PY" - "$1" <<'PYEOF' >/dev/null 2>&1
import sys, redis
redis.Redis.from_url(sys.argv[1], socket_connect_timeout=1, socket_timeout=1).ping()
PYEOF
}

if ping "$url"; then echo "$url"; exit 0; fi
port=${MERIDIAN_REDIS_PORT:-6390}
own="redis://127.0.0.1:$port/0"
if ping "$own"; then echo "$own"; exit 0; fi
bash scripts/ensure-redis-server.sh
mkdir -p var/redis
echo "no Redis at $url: starting redis-server on 127.0.0.1:$port" >&2
redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
  --dir "$PWD/var/redis" --pidfile "$PWD/var/redis/redis.pid" --logfile "$PWD/var/redis/redis.log" >&2
for _ in $(seq 1 50); do ping "$own" && { echo "$own"; exit 0; }; sleep 0.1; done
echo "redis-server did not answer on port $port (see var/redis/redis.log)" >&2
exit 1
