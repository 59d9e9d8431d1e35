"""The HTTP headers of a quota decision (``RateLimit-*`` and ``X-RateLimit-*``): the tightest
window's limit, remaining and reset, and the policy of every window. Both faces send them on
every admitted answer and with a 429; plain strings, no Flask."""

from __future__ import annotations

from accounts.quota import QuotaDecision


def rate_limit_headers(decision: QuotaDecision | None) -> dict[str, str]:
    window = decision.tightest if decision is not None else None
    if decision is None or window is None:
        return {}
    values = {"Limit": str(window.limit), "Remaining": str(window.remaining), "Reset": str(window.reset_s)}
    headers = {f"RateLimit-{k}": v for k, v in values.items()}
    headers.update({f"X-RateLimit-{k}": v for k, v in values.items()})
    headers["RateLimit-Policy"] = ", ".join(f"{w.limit};w={_window_seconds(w.name)}" for w in decision.windows)
    return headers


def _window_seconds(name: str) -> int:
    return {"minute": 60, "day": 86_400, "month": 2_592_000}[name]
