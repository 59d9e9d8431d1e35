"""The benchmarks' HTTP client: one sequential keep-alive HTTP/1.1 connection per server
(``http.client``), timed from sending the request to the last byte of the body, the same for
Meridian and for its peers, so that their latencies compare."""

from __future__ import annotations

import http.client
import time


class Http:
    """One keep-alive connection; returns (seconds, status, body bytes)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.conn = http.client.HTTPConnection(host, port, timeout=30)

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict | None = None, retry: bool = True
    ):
        """``retry``: once more on a new connection after a connection error or timeout."""
        hdrs = {"Connection": "keep-alive"}
        if body is not None:
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        for attempt in range(2):
            try:
                t0 = time.perf_counter()
                self.conn.request(method, path, body=body, headers=hdrs)
                resp = self.conn.getresponse()
                data = resp.read()
                return time.perf_counter() - t0, resp.status, data
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
                if attempt or not retry:
                    raise
        raise RuntimeError("unreachable")
