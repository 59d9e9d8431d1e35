"""The gateway's client toward a remote core (``SERVICE_BASE_URL`` / ``SERVICE_SUGGEST_URL``).

- Authenticates with ``SERVICE_API_KEY`` (Bearer); the client's own key was already checked by
  the gateway for authorization and quota.
- Keep-alive connection pool (one ``requests.Session`` per process).
- Retries idempotent GETs only, on connection errors, timeouts and 502/503/504: exponential
  backoff with full jitter (``sleep = uniform(0, min(cap, base * 2**attempt))``), at most
  ``backend_retries`` retries, and never past ``backend_total_timeout_s`` in all; each attempt
  has ``backend_timeout_s``. No retry on 4xx.
- Outcome mapping: unreachable or still failing -> 503 with ``Retry-After``; the core's
  400/404 become the same status with the core's message. The core's 401/403/429 are about
  ``SERVICE_API_KEY`` (wrong, expired, revoked, missing a service, or over its own quota), never
  about the client's key, which the gateway already accepted and counted: 503 with ``Retry-After``
  ("backend misconfigured", or "backend over its quota" with the core's ``Retry-After``) and an
  error log line for the operator.
- ``check()`` is the readiness probe: one authenticated request per URL (``SERVICE_BASE_URL``
  without ``cmd``, ``SERVICE_SUGGEST_URL`` without ``q``), which a core answers 400 once it has
  accepted the key and 401/403 when it refuses it (the core checks the key before the command).
"""

from __future__ import annotations

import logging
import random
import time
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from app.core_format import from_core
from app.registry import Function
from app.results import BinaryResult
from config.settings import Settings
from engine.errors import ErrorKind, MeridianError

log = logging.getLogger("meridian.backend")

RETRY_STATUSES = frozenset({502, 503, 504})
PASS_THROUGH = {
    400: ErrorKind.INVALID_PARAMETER,
    404: ErrorKind.NOT_FOUND,
}
KEY_REFUSED = frozenset({401, 403})  # the core refuses SERVICE_API_KEY
KEY_OVER_QUOTA = 429  # SERVICE_API_KEY is over its plan at the core: the operator's problem
MISCONFIGURED_RETRY_AFTER_S = 60
BACKOFF_BASE_S = 0.1
BACKOFF_CAP_S = 2.0


class BackendUnavailable(MeridianError):
    kind = ErrorKind.UNAVAILABLE


class RemoteCore:
    def __init__(self, settings: Settings, service_name: str) -> None:
        self.settings = settings
        self.service_name = service_name
        self.session = requests.Session()
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=32, max_retries=0)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self.session.headers["Authorization"] = f"Bearer {settings.service_api_key}"

    def url_for(self, remote: str) -> str:
        if remote == "suggest" and self.settings.service_suggest_url:
            return self.settings.service_suggest_url
        return self.settings.service_base_url or ""

    def get(self, url: str, params: list[tuple[str, str]], request_id: str | None = None) -> requests.Response:
        deadline = time.monotonic() + self.settings.backend_total_timeout_s
        headers = {"X-Request-Id": request_id} if request_id else {}
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            timeout = max(0.05, min(self.settings.backend_timeout_s, remaining))
            reason: str
            try:
                resp = self.session.get(url, params=params, headers=headers, timeout=timeout)
                if resp.status_code not in RETRY_STATUSES:
                    return resp
                reason = f"HTTP {resp.status_code}"
            except (requests.ConnectionError, requests.Timeout) as exc:
                reason = type(exc).__name__
            attempt += 1
            sleep = random.uniform(0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1)))
            if attempt > self.settings.backend_retries or time.monotonic() + sleep >= deadline:
                log.warning("backend %s failed after %d attempt(s): %s", url, attempt, reason)
                raise BackendUnavailable(f"backend unavailable ({reason} after {attempt} attempt(s))", retry_after=5)
            log.info("backend %s: %s, retry %d in %.0f ms", url, reason, attempt, sleep * 1000)
            time.sleep(sleep)

    def call(self, function: Function, args: list[tuple[str, str]], request_id: str | None = None) -> Any:
        params = [(function.gateway_to_core.get(k, k), v) for k, v in args]
        if function.remote != "suggest" or not self.settings.service_suggest_url:
            params.append(("cmd", function.cmd))
        resp = self.get(self.url_for(function.remote), params, request_id)
        content_type = resp.headers.get("Content-Type", "")
        if resp.status_code == 200 and not content_type.startswith("application/json"):
            return BinaryResult(content_type, resp.content)
        try:
            body = resp.json()
        except ValueError:
            raise BackendUnavailable(f"backend answered HTTP {resp.status_code} without JSON") from None
        envelope = body.get(self.service_name) if isinstance(body, dict) else None
        if not isinstance(envelope, dict):
            envelope = next(iter(body.values()), {}) if isinstance(body, dict) and len(body) == 1 else {}
        if resp.status_code == 200 and "response" in envelope:
            return from_core(envelope["response"])
        error = envelope.get("error") or {}
        if resp.status_code in KEY_REFUSED:
            log.error(
                "backend %s refused SERVICE_API_KEY (HTTP %d: %s): fix the gateway's SERVICE_API_KEY",
                self.url_for(function.remote),
                resp.status_code,
                str(error.get("message") or "")[:200],
            )
            raise BackendUnavailable(
                "backend misconfigured: the gateway's credentials were refused by the backend",
                retry_after=MISCONFIGURED_RETRY_AFTER_S,
            )
        retry_after = resp.headers.get("Retry-After")
        retry_after_s = int(retry_after) if retry_after and retry_after.isdigit() else None
        if resp.status_code == KEY_OVER_QUOTA:
            log.error(
                "backend %s: SERVICE_API_KEY is over its quota (HTTP 429: %s): raise the service key's plan",
                self.url_for(function.remote),
                str(error.get("message") or "")[:200],
            )
            raise BackendUnavailable(
                "backend over its quota: the gateway's own allowance at the backend is used up",
                retry_after=retry_after_s or MISCONFIGURED_RETRY_AFTER_S,
            )
        kind = PASS_THROUGH.get(resp.status_code)
        if kind is None:
            raise BackendUnavailable(f"backend answered HTTP {resp.status_code}")
        raise MeridianError(
            error.get("message") or f"backend answered HTTP {resp.status_code}",
            kind=kind,
            parameter=error.get("parameter"),
            retry_after=retry_after_s,
        )

    def probe(self, url: str) -> dict[str, Any]:
        """One readiness check of ``url`` with the service key: ``{"ok", "url"[, "detail"]}``."""
        result: dict[str, Any] = {"ok": False, "url": url}
        try:
            resp = self.session.get(url, timeout=min(2.0, self.settings.backend_timeout_s))
        except requests.RequestException as exc:
            result["detail"] = f"backend unreachable ({type(exc).__name__})"
            return result
        status = resp.status_code
        if status in KEY_REFUSED:
            result["detail"] = f"backend refuses SERVICE_API_KEY (HTTP {status})"
        elif status == 429:
            result["detail"] = "backend answers 429: SERVICE_API_KEY is over its quota"
        elif status >= 500:
            result["detail"] = f"backend answered HTTP {status}"
        else:
            result["ok"] = True
        return result

    def check(self) -> dict[str, Any]:
        """The backend and the suggest backend, each probed with the key."""
        urls = [self.settings.service_base_url]
        if self.settings.service_suggest_url:
            urls.append(self.settings.service_suggest_url)
        probes = [self.probe(url) for url in urls if url]
        failing = [p for p in probes if not p["ok"]]
        result: dict[str, Any] = {"ok": not failing, "url": self.settings.service_base_url, "probes": probes}
        if failing:
            result["detail"] = "; ".join(f"{p['url']}: {p['detail']}" for p in failing)
        return result
