#!/usr/bin/env bash
# `make run`: the ports checked (PORT, MAIL_PORT, FLOWER_PORT), Redis, sample import (when not yet
# imported), then web + workers + Flower + the development mail catcher (meridian mailcatcher, SMTP
# on 127.0.0.1:$MAIL_PORT, mails in var/mail/) from the Procfile under honcho, announced with the
# demo key (var/demo-key) once /v1/health/ready answers (meridian dev run, cli/dev_run.py).
set -euo pipefail
cd "$(dirname "$0")/.."
meridian dev ports
export REDIS_URL=$(bash scripts/ensure-redis.sh)
for f in data/samples/monaco.osm.pbf data/samples/helsinki.osm.pbf; do meridian import "$f"; done
# Flower (the queue monitor, 127.0.0.1 only) asks for these credentials: a new password per run,
# printed in the banner.
FLOWER_BASIC_AUTH=${FLOWER_BASIC_AUTH:-admin:$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')}
export FLOWER_BASIC_AUTH
exec meridian dev run -- honcho start -f Procfile
