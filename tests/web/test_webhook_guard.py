"""Webhooks against hostile fence owners (issue 21): internal destinations are refused with 400
at creation, and the delivery (``tasks/webhook_http.py``) checks again, connects to the address
it checked (DNS rebinding), follows no redirect and reads a bounded answer. Deliveries go to a
real local HTTP receiver on loopback, allowed explicitly as an operator would."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engine.netguard import check_url, parse_networks
from tasks import webhook_http
from tests.fixtures_live import free_port

LOOPBACK = parse_networks("127.0.0.0/8")
PUBLIC = "93.184.216.34"


def circle(url: str) -> dict:
    return {"type": "circle", "center": {"lat": 43.73, "lng": 7.42}, "radius": 10, "webhook_url": url}


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:6379/",  # Redis on loopback
        "http://localhost:5555/",  # a name resolving to loopback (Flower)
        "http://[::1]:3000/metrics",
        "http://169.254.169.254/latest/meta-data/iam/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://[fec0::1]/h",  # deprecated site-local fec0::/10 (still routed inside some networks)
        "http://10.0.0.5/h",
        "http://192.168.0.1/h",
        "http://[::ffff:127.0.0.1]:6379/",
        "http://0.0.0.0:3000/",
        "http://224.0.0.1/h",
        "http://unresolvable-host.invalid/h",
    ],
)
def test_create_refuses_internal_destinations(client, store, url):
    key = store.create_key(f"ssrf-{uuid.uuid4().hex[:8]}", "pro").key
    resp = client.post("/v1/geofences", json=circle(url), headers={"X-API-Key": key})
    assert resp.status_code == 400, resp.get_data(as_text=True)
    body = resp.get_json()
    assert body["parameter"] == "webhook_url" and body["statusCode"] == 400
    assert body["message"].startswith("webhook_url: ")


class Receiver:
    """A local HTTP server recording requests, answering ``status`` with ``headers`` and a body of
    ``body_bytes`` of which only the first 128 KiB come before a stall of ``stall_s``."""

    def __init__(self, status: int = 200, headers: dict | None = None, body_bytes: int = 0, stall_s: float = 0) -> None:
        self.seen: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.seen.append({"path": self.path, "host": self.headers.get("Host"), "body": body})
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(body_bytes))
                self.end_headers()
                chunk = b"x" * 65536
                try:
                    if body_bytes:  # twice the read limit, then the rest only after a stall
                        self.wfile.write(chunk * 2)
                        self.wfile.flush()
                        time.sleep(stall_s)
                        for _ in range(body_bytes // len(chunk) - 2):
                            self.wfile.write(chunk)
                except OSError:  # the client stopped reading: expected for the big answer
                    pass

            def log_message(self, *args):
                pass

        self.port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def test_delivery_refused_without_the_operator_allowing_loopback(receiver):
    outcome = webhook_http.post(f"http://127.0.0.1:{receiver.port}/h", b"{}", {})
    assert outcome.blocked and not outcome.ok and outcome.status is None
    assert receiver.seen == []


def test_delivery_connects_to_the_checked_address_with_the_name_as_host(receiver):
    # the name resolves only through the injected resolver: a second, system resolution would fail
    url = f"http://hooks.example.test:{receiver.port}/in?x=1"
    outcome = webhook_http.post(url, b'{"a":1}', {"X-T": "1"}, LOOPBACK, resolver=lambda h, p: ["127.0.0.1"])
    assert outcome.ok and outcome.status == 200, outcome
    assert receiver.seen == [{"path": "/in?x=1", "host": f"hooks.example.test:{receiver.port}", "body": b'{"a":1}'}]


def test_dns_rebinding_is_refused_at_delivery(receiver):
    answers = iter([[PUBLIC], ["127.0.0.1"]])  # public when the fence is created, loopback later

    def rebinding(host: str, port: int) -> list[str]:
        return next(answers)

    url = f"http://rebind.example.test:{receiver.port}/h"
    assert check_url(url, resolver=rebinding).address == PUBLIC  # the creation check passes
    outcome = webhook_http.post(url, b"{}", {}, resolver=rebinding)
    assert outcome.blocked and "non-public" in (outcome.error or "")
    assert receiver.seen == []


def test_redirect_to_metadata_is_not_followed():
    r = Receiver(status=302, headers={"Location": "http://169.254.169.254/latest/meta-data/"})
    try:
        outcome = webhook_http.post(f"http://127.0.0.1:{r.port}/h", b"{}", {}, LOOPBACK)
    finally:
        r.close()
    assert (outcome.status, outcome.error, outcome.blocked) == (302, "HTTP 302", False)
    assert len(r.seen) == 1


def test_huge_answer_is_not_read_whole():
    # reading the whole answer would wait out the stall or the 10 s read timeout
    r = Receiver(status=200, body_bytes=64 * 1024 * 1024, stall_s=30)
    try:
        t0 = time.monotonic()
        outcome = webhook_http.post(f"http://127.0.0.1:{r.port}/h", b"{}", {}, LOOPBACK)
        elapsed = time.monotonic() - t0
    finally:
        r.close()
    assert outcome.ok
    assert elapsed < webhook_http.READ_TIMEOUT_S / 2
