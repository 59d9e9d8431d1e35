"""The shipped HAProxy configuration (deploy/haproxy/haproxy.cfg) in front of a real gunicorn
(issue 26, findings 7 and 8), with only its addresses changed for the test:

- /metrics is refused through the proxy however the path is spelled (percent-encoded, repeated
  slashes, dot segments, upper case), while the node itself still serves it to the monitoring
  network;
- the portal's per-IP attempt limit counts each client behind the proxy on its own (clients on
  127.0.0.2 and 127.0.0.3; the node trusts the proxy's X-Forwarded-For entry,
  TRUSTED_PROXY_HOPS=1), and a client cannot pick its address by sending X-Forwarded-For itself,
  neither through the proxy nor straight to a node that trusts no proxy.
"""

from __future__ import annotations

import http.client
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from requests.adapters import HTTPAdapter

from config.settings import PROJECT_ROOT
from tests.deploy.cluster import haproxy_binary, wait_port
from tests.fixtures_live import free_port, redis_url_db, start_gunicorn, stop

pytestmark = pytest.mark.integration

SHIPPED = PROJECT_ROOT / "deploy" / "haproxy" / "haproxy.cfg"
REDIS_DB = 10  # the other suites use 11-15
PER_IP = 3  # failed sign-ins per client address and window, for the test
WRONG = 401  # the answer to a wrong password
METRICS_SPELLINGS = ["/metrics", "/%6detrics", "/%6D%65trics", "//metrics", "/./metrics", "/METRICS", "/metrics/"]
METRICS_SPELLINGS += ["/x/../metrics", "/%2e/metrics", "///metrics?x=1"]


def shipped_config(listen: int, node: int) -> str:
    """The shipped configuration listening on loopback, its two nodes replaced by the test's one
    (without health checks: the test's node has no Celery worker, so it is live but not ready)."""
    text = SHIPPED.read_text(encoding="utf-8").replace("bind :8080", f"bind 127.0.0.1:{listen}")
    text = re.sub(r"(?m)^\s*server web2 .*\n", "", text)
    text, count = re.subn(r"(?m)^(\s*server web1) \S+ check$", rf"\1 127.0.0.1:{node}", text)
    assert count == 1, "the shipped configuration's servers changed: update the test"
    return text


@pytest.fixture(scope="module")
def node(settings, store, tmp_path_factory) -> Iterator[int]:
    """A gunicorn node that trusts one proxy, with a tight per-IP sign-in limit."""
    port = free_port()
    env = {
        "TRUSTED_PROXY_HOPS": "1",
        "REDIS_URL": redis_url_db(settings.redis_url, REDIS_DB),
        "SERVICE_NAME": f"proxytest{uuid.uuid4().hex[:8]}",  # counters of this test's own
        "PORTAL_SECRET_KEY": "proxy-test-secret-" + "x" * 32,
        "PORTAL_LOGIN_LIMIT": f"100/900,{PER_IP}",
    }
    proc = start_gunicorn(settings, port, tmp_path_factory.mktemp("logs") / "gunicorn.log", 2, **env)
    try:
        yield port
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def proxy(node, tmp_path_factory) -> Iterator[int]:
    binary = haproxy_binary()
    if binary is None:
        pytest.skip("haproxy is not installed and scripts/ensure-haproxy.sh could not install it")
    workdir: Path = tmp_path_factory.mktemp("haproxy")
    port = free_port()
    config = workdir / "haproxy.cfg"
    config.write_text(shipped_config(port, node), encoding="utf-8")
    subprocess.run([binary, "-c", "-f", str(config)], check=True, capture_output=True)
    with open(workdir / "haproxy.log", "wb") as log:
        proc = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_port(port)
            yield port
        finally:
            proc.terminate()
            proc.wait(10)


def raw_get(port: int, path: str) -> int:
    """GET ``path`` exactly as written (no client-side normalisation)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def test_the_node_serves_metrics_to_the_monitoring_network(node):
    assert raw_get(node, "/metrics") == 200
    assert raw_get(node, "/%6detrics") == 200  # the node decodes the path: the proxy must too


@pytest.mark.parametrize("path", METRICS_SPELLINGS)
def test_metrics_are_refused_through_the_proxy(proxy, path):
    assert raw_get(proxy, path) in (403, 404), path
    assert raw_get(proxy, "/v1/health/live") == 200


class FromAddress(HTTPAdapter):
    """Connections from a given loopback source address (127.0.0.2, 127.0.0.3, ...)."""

    def __init__(self, source: str) -> None:
        self.source = source
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        kwargs["source_address"] = (self.source, 0)
        super().init_poolmanager(*args, **kwargs)


def client_from(source: str) -> requests.Session:
    session = requests.Session()
    session.mount("http://", FromAddress(source))
    return session


def failed_sign_in(session: requests.Session, base: str, headers: dict[str, str] | None = None) -> int:
    """One sign-in with a wrong password for a fresh address (the per-address limit stays out of
    the way): the answer's status."""
    page = session.get(f"{base}/portal/login", timeout=10)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token, page.text[:300]
    form = {"csrf_token": token.group(1), "email": f"{uuid.uuid4().hex}@example.com", "password": "wrong password 1"}
    return session.post(f"{base}/portal/login", data=form, headers=headers or {}, timeout=10).status_code


def test_clients_behind_the_proxy_are_limited_each_on_its_own(proxy):
    base = f"http://127.0.0.1:{proxy}"
    first, second = client_from("127.0.0.2"), client_from("127.0.0.3")
    assert [failed_sign_in(first, base) for _ in range(PER_IP)] == [WRONG] * PER_IP
    assert failed_sign_in(first, base) == 429
    assert failed_sign_in(second, base) == WRONG, "another client was limited for the first one's attempts"


def test_a_client_cannot_choose_its_address_through_the_proxy(proxy):
    base = f"http://127.0.0.1:{proxy}"
    client = client_from("127.0.0.4")
    statuses = [failed_sign_in(client, base, {"X-Forwarded-For": f"10.0.0.{i}"}) for i in range(PER_IP + 1)]
    assert statuses == [WRONG] * PER_IP + [429]


def test_a_node_that_trusts_no_proxy_ignores_x_forwarded_for(settings, store, tmp_path):
    port = free_port()
    env = {
        "REDIS_URL": redis_url_db(settings.redis_url, REDIS_DB),
        "SERVICE_NAME": f"proxytest{uuid.uuid4().hex[:8]}",
        "PORTAL_SECRET_KEY": "proxy-test-secret-" + "x" * 32,
        "PORTAL_LOGIN_LIMIT": f"100/900,{PER_IP}",
    }
    proc = start_gunicorn(settings, port, tmp_path / "gunicorn.log", workers=1, **env)
    try:
        base = f"http://127.0.0.1:{port}"
        client = client_from("127.0.0.5")
        statuses = [failed_sign_in(client, base, {"X-Forwarded-For": f"10.0.1.{i}"}) for i in range(PER_IP + 1)]
        assert statuses == [WRONG] * PER_IP + [429]
    finally:
        stop(proc)
