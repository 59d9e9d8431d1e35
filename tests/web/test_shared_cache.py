"""A shared cache in front of the API (issue 26, low: ``Cache-Control: public`` without ``Vary`` on
key-authenticated answers). A real one — HAProxy's HTTP cache, as a CDN or a company proxy would
sit — must not store an answer given to a key and hand it to a request without one (past the key
check and the quota): key-authenticated answers are ``private``, with ``Vary`` on the key headers."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import requests

from tests.deploy.cluster import haproxy_binary
from tests.fixtures_live import free_port

pytestmark = pytest.mark.integration

CONFIG = """
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s

cache shared
    total-max-size 16
    max-age 300

frontend api
    bind 127.0.0.1:{port}
    http-request cache-use shared
    http-response cache-store shared
    default_backend web

backend web
    server web {backend}
"""


@pytest.fixture()
def shared_cache(live_server: str, tmp_path: Path):
    binary = haproxy_binary()
    if binary is None:
        pytest.skip("haproxy is not installed (scripts/ensure-haproxy.sh)")
    port = free_port()
    config = tmp_path / "haproxy.cfg"
    config.write_text(CONFIG.format(port=port, backend=live_server.removeprefix("http://")), encoding="utf-8")
    subprocess.run([binary, "-c", "-f", str(config)], check=True, capture_output=True)
    proc = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                requests.get(f"{base}/v1/health/live", timeout=2)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, "haproxy did not start"
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_shared_cache_does_not_serve_a_keyed_answer_without_the_key(shared_cache, api_key):
    path = f"/v1/reverse-geocoding?lat=60.1675&lng=24.9427&radius={100 + time.time_ns() % 1000}"
    keyed = requests.get(f"{shared_cache}{path}", headers={"X-API-Key": api_key}, timeout=10)
    assert keyed.status_code == 200
    anonymous = requests.get(f"{shared_cache}{path}", timeout=10)
    assert anonymous.status_code == 401, "the shared cache answered without a key"
    assert keyed.headers["Cache-Control"].startswith("private, max-age=")
    assert {v.strip() for v in keyed.headers["Vary"].split(",")} >= {"X-API-Key", "Authorization"}
    again = requests.get(
        f"{shared_cache}{path}", headers={"X-API-Key": api_key, "If-None-Match": keyed.headers["ETag"]}
    )
    assert again.status_code == 304  # the client's own cache still revalidates
