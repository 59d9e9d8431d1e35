#!/usr/bin/env bash
# `make run`: Redis, sample import (when not yet imported), a fresh key, then web + worker + the
# development mail catcher (meridian mailcatcher, SMTP on 127.0.0.1:1025, mails in var/mail/) from
# the Procfile under honcho.
set -euo pipefail
cd "$(dirname "$0")/.."
export REDIS_URL=$(bash scripts/ensure-redis.sh)
for f in data/samples/monaco.osm.pbf data/samples/helsinki.osm.pbf; do meridian import "$f"; done
# Flower (the queue monitor, 127.0.0.1 only) asks for these credentials: a new password per run.
FLOWER_BASIC_AUTH=${FLOWER_BASIC_AUTH:-admin:$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')}
export FLOWER_BASIC_AUTH
KEY=$(meridian keys create --account demo --plan standard --label "make run" 2>/dev/null)
cat <<MSG

Meridian on http://localhost:$PORT  (Redis: $REDIS_URL)
  Portal       http://localhost:$PORT/portal  (sign up; mails are caught, see http://localhost:$PORT/portal/dev/mail)
  Swagger UI   http://localhost:$PORT/api
  OpenAPI      http://localhost:$PORT/api-json
  Health       http://localhost:$PORT/v1/health/ready
  Queue monitor (Flower) http://127.0.0.1:5555  (user:password $FLOWER_BASIC_AUTH)

  API key (plan standard): $KEY

  curl -s -H 'Authorization: Bearer $KEY' 'http://localhost:$PORT/services/json?cmd=geocoding&addr=Mannerheimintie%205%2C%20Helsinki'
  curl -s -H 'X-API-Key: $KEY' 'http://localhost:$PORT/v1/geocoding?query=6%20Quai%20Antoine%201er%2C%20Monaco'

MSG
exec honcho start -f Procfile
