"""The gateway in HTTP mode in front of a real core (gunicorn on another port).

Retries are proven with a real local proxy that answers 503 to the first N calls and then
forwards to the core; a core that is down gives 503 within the documented bound.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from tests.fixtures_live import free_port

pytestmark = pytest.mark.integration


class FlakyProxy:
    """Answers ``status`` to the first ``failures`` requests, then forwards to ``target``."""

    def __init__(self, target: str, failures: int, status: int = 503) -> None:
        self.target, self.failures, self.status = target, failures, status
        self.calls: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                proxy.calls.append(self.path)
                if len(proxy.calls) <= proxy.failures:
                    body = b'{"error": "flaky"}'
                    self.send_response(proxy.status)
                    self.send_header("Content-Type", "application/json")
                else:
                    upstream = requests.get(
                        proxy.target + self.path,
                        headers={"Authorization": self.headers.get("Authorization", "")},
                        timeout=10,
                    )
                    body = upstream.content
                    self.send_response(upstream.status_code)
                    self.send_header("Content-Type", upstream.headers.get("Content-Type", "application/json"))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def remote_gateway(settings, base_url: str, service_key: str, **overrides):
    from app import create_app

    remote = settings.with_overrides(
        service_base_url=f"{base_url}/services/v2/json",
        service_suggest_url=f"{base_url}/suggest/json",
        service_api_key=service_key,
        **overrides,
    )
    return create_app(remote).test_client()


@pytest.fixture(scope="module")
def service_key(store):
    return store.create_key("gateway-service", "pro", label="gateway -> core").key


def test_remote_mode_matches_in_process(client, live_server, settings, service_key, api_key):
    gateway = remote_gateway(settings, live_server, service_key)
    path = "/v1/geocoding?query=Aleksanterinkatu%2052&limit=3"
    remote = gateway.get(path, headers={"X-API-Key": api_key})
    local = client.get(path, headers={"X-API-Key": api_key})
    assert remote.status_code == local.status_code == 200
    assert remote.get_json() == local.get_json()


def test_remote_404_and_400_pass_through(live_server, settings, service_key, api_key):
    gateway = remote_gateway(settings, live_server, service_key)
    resp = gateway.get("/v1/geocoding?query=Xqzvbnmwq%20Pzxqjkv", headers={"X-API-Key": api_key})
    assert resp.status_code == 404 and resp.get_json()["statusCode"] == 404


def test_backend_refusing_the_service_key_is_503_not_the_clients_fault(live_server, settings, api_key, caplog):
    gateway = remote_gateway(settings, live_server, "mrd_AAAAAAAAAA_" + "c" * 32)
    with caplog.at_level("ERROR", logger="meridian.backend"):
        resp = gateway.get("/v1/geocoding?query=Aleksanterinkatu%2052", headers={"X-API-Key": api_key})
    body = resp.get_json()
    assert resp.status_code == 503 and body["statusCode"] == 503, body
    assert "backend misconfigured" in body["message"] and resp.headers["Retry-After"]
    assert any("refused SERVICE_API_KEY" in r.getMessage() for r in caplog.records)
    assert gateway.get("/v1/health/ready").status_code == 503


def test_ready_checks_both_backends_with_the_key(live_server, settings, service_key, store, celery_worker):
    gateway = remote_gateway(settings, live_server, service_key)
    resp = gateway.get("/v1/health/ready")
    body = resp.get_json()
    assert resp.status_code == 200, body
    probes = body["checks"]["backend"]["probes"]
    assert [p["url"] for p in probes] == [f"{live_server}/services/v2/json", f"{live_server}/suggest/json"]
    assert all(p["ok"] for p in probes)

    bad = remote_gateway(settings, live_server, "mrd_AAAAAAAAAA_" + "d" * 32)
    resp = bad.get("/v1/health/ready")
    assert resp.status_code == 503 and "refuses SERVICE_API_KEY (HTTP 401)" in resp.get_json()["message"]

    # a key whose scopes lack suggest: the core URL accepts it, the suggest URL answers 403
    geocoding_only = store.create_key("gateway-no-suggest", "pro", label="no suggest", scopes=["geocoding"]).key
    resp = remote_gateway(settings, live_server, geocoding_only).get("/v1/health/ready")
    body = resp.get_json()
    assert resp.status_code == 503, body
    assert f"{live_server}/suggest/json: backend refuses SERVICE_API_KEY (HTTP 403)" in body["message"]


def test_retries_until_core_answers(live_server, settings, service_key, api_key):
    with FlakyProxy(live_server, failures=2, status=503) as proxy:
        gateway = remote_gateway(settings, proxy.url, service_key, backend_retries=3)
        resp = gateway.get("/v1/geocoding?query=Aleksanterinkatu%2052", headers={"X-API-Key": api_key})
        assert resp.status_code == 200, resp.get_json()
        assert len(proxy.calls) == 3  # two 503s, then success


def test_gives_up_after_bounded_attempts(live_server, settings, service_key, api_key):
    with FlakyProxy(live_server, failures=100, status=502) as proxy:
        gateway = remote_gateway(settings, proxy.url, service_key, backend_retries=2)
        resp = gateway.get("/v1/geocoding?query=Aleksanterinkatu%2052", headers={"X-API-Key": api_key})
        assert resp.status_code == 503 and resp.headers["Retry-After"]
        assert len(proxy.calls) == 3  # first attempt + 2 retries


def test_no_retry_on_4xx(live_server, settings, service_key, api_key):
    with FlakyProxy(live_server, failures=0) as proxy:
        gateway = remote_gateway(settings, proxy.url, service_key)
        resp = gateway.get("/v1/geocoding?query=Xqzvbnmwq%20Pzxqjkv", headers={"X-API-Key": api_key})
        assert resp.status_code == 404
        assert len(proxy.calls) == 1


def test_invalid_parameters_never_reach_backend(live_server, settings, service_key, api_key):
    with FlakyProxy(live_server, failures=0) as proxy:
        gateway = remote_gateway(settings, proxy.url, service_key)
        resp = gateway.get("/v1/geocoding?query=x&near=100,0", headers={"X-API-Key": api_key})
        assert resp.status_code == 400
        assert proxy.calls == []


def test_core_down_503_within_bound(settings, service_key, api_key):
    dead = f"http://127.0.0.1:{free_port()}"
    gateway = remote_gateway(settings, dead, service_key, backend_retries=3, backend_total_timeout_s=3.0)
    t0 = time.monotonic()
    resp = gateway.get("/v1/geocoding?query=Aleksanterinkatu%2052", headers={"X-API-Key": api_key})
    elapsed = time.monotonic() - t0
    assert resp.status_code == 503
    assert resp.get_json()["statusCode"] == 503 and "backend unavailable" in resp.get_json()["message"]
    assert elapsed < 3.0 + 0.5


@pytest.mark.parametrize(
    "path, parameter",
    [
        ("/v1/geocoding?query=Aleksanterinkatu%2052&country=XX", "country"),
        ("/v1/suggest?q=Alek&country=ZZZ", "country"),
        ("/v1/poi?category=unicorns", "category"),
        ("/v1/proximity/nearest?lat=60.17&lng=24.94&categories=fuel,unicorns", "categories"),
    ],
)
def test_unknown_codes_refused_before_the_backend(live_server, settings, service_key, api_key, path, parameter):
    with FlakyProxy(live_server, failures=0) as proxy:
        gateway = remote_gateway(settings, proxy.url, service_key)
        resp = gateway.get(path, headers={"X-API-Key": api_key})
        body = resp.get_json()
        assert resp.status_code == 400 and body["parameter"] == parameter, body
        assert "unknown" in body["message"]
        assert proxy.calls == []  # the backend never saw it


def test_ready_refuses_a_wrong_key_when_only_the_core_url_is_set(live_server, settings):
    """Without SERVICE_SUGGEST_URL the only probe is the core URL: a wrong key must fail it."""
    from app import create_app

    gateway = create_app(
        settings.with_overrides(
            service_base_url=f"{live_server}/services/v2/json",
            service_suggest_url=None,
            service_api_key="mrd_AAAAAAAAAA_" + "e" * 32,
        )
    ).test_client()
    resp = gateway.get("/v1/health/ready")
    assert resp.status_code == 503, resp.get_json()
    assert "refuses SERVICE_API_KEY (HTTP 401)" in resp.get_json()["message"]


def test_core_checks_the_key_before_the_command(live_server):
    resp = requests.get(
        f"{live_server}/services/v2/json", headers={"Authorization": "Bearer mrd_AAAAAAAAAA_" + "f" * 32}, timeout=10
    )
    assert resp.status_code == 401, resp.text


def test_service_key_over_its_quota_is_503_for_the_client_not_429(live_server, settings, store, api_key, caplog):
    """The core's 429 is about SERVICE_API_KEY: the client's own quota is untouched, so the client
    gets 503 + Retry-After (the operator's problem, logged), never "plan quota exceeded"."""
    store.set_plan("gateway-tiny", per_minute=1, services=["*"])
    tiny = store.create_key("gateway-tiny-service", "gateway-tiny", label="one call a minute").key
    gateway = remote_gateway(settings, live_server, tiny)
    path = "/v1/geocoding?query=Aleksanterinkatu%2052"
    assert gateway.get(path, headers={"X-API-Key": api_key}).status_code == 200
    with caplog.at_level("ERROR", logger="meridian.backend"):
        resp = gateway.get(path, headers={"X-API-Key": api_key})
    body = resp.get_json()
    assert resp.status_code == 503 and body["statusCode"] == 503, body
    assert "backend over its quota" in body["message"] and int(resp.headers["Retry-After"]) > 0
    assert any("over its quota" in r.getMessage() for r in caplog.records)
