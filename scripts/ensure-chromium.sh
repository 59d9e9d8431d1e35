#!/usr/bin/env bash
# Debian's headless Chromium for the Swagger UI browser test (no browser download from elsewhere).
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
[ "$(id -u)" = 0 ] || { echo "chromium missing and not root: skipping install" >&2; exit 1; }
echo "installing Debian's chromium package" >&2
apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
