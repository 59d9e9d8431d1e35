#!/usr/bin/env bash
# `make bench`: the benchmarks side by side with the peers (OSRM, Valhalla, Nominatim from
# ../shared/peers, installed and built with its setup.sh/build.sh), one region at a time, each
# program switching the peers to the region it measures. Results: bench/results/*.json.
# Without the peers kit, the in-process and Meridian-only parts still run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export PEERS_KIT="${PEERS_KIT:-$(cd .. && pwd)/shared/peers}"
export PEERS_DIR="${PEERS_DIR:-/var/tmp/meridian-peers}"
REGIONS="${REGIONS:-monaco,helsinki}"
PEERS=()
[ -x "$PEERS_KIT/serve.sh" ] && PEERS=(--start-peers)

export REDIS_URL="$(bash scripts/ensure-redis.sh)"
$PY -m bench.routing --regions "$REGIONS" --serve "${PEERS[@]}"
$PY -m bench.matching --regions "$REGIONS" "${PEERS[@]}"
$PY -m bench.isochrone --regions "$REGIONS" "${PEERS[@]}"
$PY -m bench.heavy --regions "$REGIONS" "${PEERS[@]}"
$PY -m bench.matrix --regions "$REGIONS" "${PEERS[@]}"
if [ ${#PEERS[@]} -gt 0 ]; then  # next to VROOM over OSRM: needs the kit
  $PY -m bench.optimization "${PEERS[@]}"
fi
$PY -m bench.geofence_http
$PY -m bench.overhead
if command -v wrk >/dev/null; then  # Debian's wrk: the servers' own latency and throughput
  $PY -m bench.throughput --regions "$REGIONS" "${PEERS[@]}" --connections 1 --seconds 6 --rounds 3 \
    --out bench/results/latency-wrk.json
  $PY -m bench.throughput --regions "$REGIONS" "${PEERS[@]}"
else
  echo "wrk not installed: bench.throughput skipped (apt-get install wrk)" >&2
fi
$PY -m bench.report
