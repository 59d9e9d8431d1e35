#!/usr/bin/env bash
# Debian's HAProxy for the multi-node deployment test (tests/deploy/test_multinode.py): the load
# balancer in front of two web nodes. Installed when missing; the test skips with the reason if
# that fails. The package's own service is not started (the test runs its own haproxy).
set -euo pipefail
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] && exit 0
[ "$(id -u)" = 0 ] || { echo "haproxy missing and not root: skipping install" >&2; exit 1; }
echo "installing Debian's haproxy package" >&2
apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >&2
