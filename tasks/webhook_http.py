"""The one HTTP call of a webhook delivery, to a destination checked by ``engine.netguard``.

- The URL's host is resolved and every address checked on each attempt (DNS rebinding); the
  connection goes to the checked address, with the URL's name kept as ``Host`` header, TLS SNI
  and certificate name, so the name is never resolved a second time.
- No redirect is followed: a 3xx is an answer like any other non-2xx (retried, then failed).
- At most ``RESPONSE_READ_LIMIT`` bytes of the answer are read; the status is what counts.
- No proxy from the environment, no retries here (the task retries with backoff).
- A URL's query string may carry the receiver's secret (``?token=...``): logs and recorded errors
  get :func:`loggable` (scheme, host, port and path) only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import certifi
import urllib3

from engine.netguard import BlockedDestination, IPNetwork, Resolver, check_url, system_resolver

RESPONSE_READ_LIMIT = 64 * 1024
CONNECT_TIMEOUT_S = 3.05
READ_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Outcome:
    status: int | None  # None: no HTTP answer
    error: str | None  # None: 2xx
    blocked: bool = False  # the guard refused the destination: retrying will not help

    @property
    def ok(self) -> bool:
        return self.error is None


def loggable(url: str) -> str:
    """``url`` without its query string, fragment and credentials: what logs may show."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<invalid URL>"
    host = f"[{host}]" if ":" in host else host
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))


def _pool(scheme: str, address: str, port: int, host: str) -> urllib3.HTTPConnectionPool:
    timeout = urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S)
    if scheme == "https":
        return urllib3.HTTPSConnectionPool(
            address,
            port,
            timeout=timeout,
            maxsize=1,
            retries=False,
            cert_reqs="CERT_REQUIRED",
            ca_certs=certifi.where(),
            assert_hostname=host,
            server_hostname=host,
        )
    return urllib3.HTTPConnectionPool(address, port, timeout=timeout, maxsize=1, retries=False)


def post(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    allowed: Sequence[IPNetwork] = (),
    resolver: Resolver = system_resolver,
) -> Outcome:
    """POST ``body`` to ``url`` if its destination passes the guard; never raises for the
    receiver's faults (they are the ``Outcome``)."""
    try:
        dest = check_url(url, allowed, resolver)
    except BlockedDestination as exc:
        return Outcome(None, f"blocked: {exc}", blocked=True)
    pool = _pool(dest.scheme, dest.address, dest.port, dest.host)
    try:
        resp = pool.urlopen(
            "POST",
            dest.target,
            body=body,
            headers={**headers, "Host": dest.host_header},
            redirect=False,
            retries=False,
            preload_content=False,
        )
        try:
            resp.read(RESPONSE_READ_LIMIT)
        finally:
            resp.release_conn()
        status = resp.status
    except urllib3.exceptions.HTTPError as exc:
        reason = f"{type(exc).__name__}: {exc}"
        path, _, query = dest.target.partition("?")
        if query:  # never the query string, should urllib3's message name the target
            reason = reason.replace(dest.target, path)
        return Outcome(None, reason[:500])
    finally:
        pool.close()
    return Outcome(status, None if 200 <= status < 300 else f"HTTP {status}")
