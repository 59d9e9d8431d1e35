"""Settings from the environment, validated once at start-up.

The spec's gateway variables (PORT, SERVICE_API_KEY, SERVICE_BASE_URL, SERVICE_SUGGEST_URL,
LOG_FORMAT, DEBUG, NODE_ENV) plus Meridian's own (REDIS_URL, DATABASE_URL, DATA_DIR,
SERVICE_NAME, ...). ``Settings.from_env()`` raises :class:`ConfigError` with a message naming the
variable when a value is missing or invalid, so a process fails fast instead of serving wrongly.
"""

from __future__ import annotations

import ipaddress
import json
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from engine.limits import Limits
from engine.netguard import IPNetwork, parse_networks

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class ConfigError(ValueError):
    """A setting is missing or invalid; the message names the variable."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _bool(env: dict, name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name} must be a boolean (true/false, 1/0), got {raw!r}")


def _int(env: dict, name: str, default: int, lo: int | None = None, hi: int | None = None) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ConfigError(f"{name} must be between {lo} and {hi}, got {value}")
    return value


def _float(env: dict, name: str, default: float, lo: float = 0.0) -> float:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if value < lo:
        raise ConfigError(f"{name} must be >= {lo}, got {value}")
    return value


def _url(env: dict, name: str, schemes: tuple[str, ...]) -> str | None:
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    parsed = urlparse(raw)
    if parsed.scheme not in schemes or not (parsed.netloc or parsed.path):
        raise ConfigError(f"{name} must be a URL with scheme {'/'.join(schemes)}, got {raw!r}")
    return raw


def _json_object(env: dict, name: str) -> dict:
    raw = (env.get(name) or "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a JSON object, got {raw!r}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be a JSON object, got {raw!r}")
    return value


def _networks(env: dict, name: str) -> tuple[IPNetwork, ...]:
    try:
        return parse_networks(env.get(name))
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def _bind_host(env: dict) -> str:
    raw = (env.get("BIND_HOST") or "127.0.0.1").strip()
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        raise ConfigError(f"BIND_HOST must be an IP address (0.0.0.0 for every interface), got {raw!r}") from None


def _web_tier_values(env: dict) -> dict:
    """The settings of the web tier facing clients: where it listens, how long a request head may
    take, which proxies' X-Forwarded-For it trusts."""
    return dict(
        bind_host=_bind_host(env),
        header_read_timeout_s=_float(env, "HEADER_READ_TIMEOUT", 10.0, 0.1),
        trusted_proxy_hops=_int(env, "TRUSTED_PROXY_HOPS", 0, 0, 5),
    )


def _reliability_values(env: dict) -> dict:
    """The settings of the reliability block (webhook guard, back-pressure)."""
    return dict(
        webhook_allowed_networks=_networks(env, "WEBHOOK_ALLOWED_NETWORKS"),
        body_read_timeout_s=_float(env, "BODY_READ_TIMEOUT", 10.0, 0.1),
        body_json_max_depth=_int(env, "BODY_JSON_MAX_DEPTH", 64, 2, 1000),
        queue_max_depth=_int(env, "QUEUE_MAX_DEPTH", 200, 0, 1_000_000),
        queue_max_depths=tuple(
            (name[len("QUEUE_MAX_DEPTH_") :].lower(), _int(env, name, 0, 0, 1_000_000))
            for name in sorted(env)
            if name.startswith("QUEUE_MAX_DEPTH_")
        ),
        geofence_cache_vertices=_int(env, "GEOFENCE_CACHE_VERTICES", 2_000_000, 0),
    )


@dataclass(frozen=True)
class Settings:
    port: int = 3000
    service_name: str = "meridian"
    service_api_key: str | None = None
    service_base_url: str | None = None
    service_suggest_url: str | None = None
    log_format: str = "text"
    debug: bool = False
    environment: str = "development"  # NODE_ENV: production requires the portal's secrets, hides traces
    redis_url: str = "redis://127.0.0.1:6379/0"
    database_url: str = field(default_factory=lambda: f"sqlite:///{PROJECT_ROOT / 'var' / 'meridian.db'}")
    data_dir: Path = field(default_factory=lambda: PROJECT_ROOT / "var" / "data")
    backend_timeout_s: float = 5.0  # per attempt toward a remote core
    backend_retries: int = 3  # attempts after the first
    backend_total_timeout_s: float = 12.0  # all attempts together
    task_wait_timeout_s: float = 20.0  # a synchronous client waits this long on a queued task
    cache_ttl_s: int = 3600  # cached heavy results
    http_max_age_s: int = 300  # Cache-Control max-age on cacheable GET answers
    auth_cache_ttl_s: float = 5.0  # revocation takes effect within this bound
    # Redis unreachable: serve uncounted (and log) rather than refuse with 503, for plans that do
    # not say (plans.quota_fail_open NULL) and are not self-service; self-service plans (free and
    # PORTAL_DEFAULT_PLAN, which anyone can sign up for) fail closed (accounts/access.py)
    quota_fail_open: bool = True
    quota_fail_closed_plans: tuple[str, ...] = ("free",)
    web_workers: int = 2
    worker_concurrency: int = 2
    webhook_max_retries: int = 6  # geofence webhooks: retries after the first attempt
    webhook_backoff_s: float = 2.0  # the first retry's delay; doubled at each retry
    dataset_store: str | None = None  # DATASET_STORE: follow this store (directory, file://, s3://)
    dataset_poll_interval_s: float = 30.0  # DATASET_POLL_INTERVAL
    dataset_store_options: dict = field(default_factory=dict, hash=False)  # DATASET_STORE_OPTIONS: JSON, fsspec
    limits: Limits = field(default_factory=Limits)  # the engine's; the defaults for now
    # -- reliability and hostile clients (issue 21) --
    # networks a webhook may reach besides public addresses (engine/netguard.py), e.g. 10.20.0.0/16
    webhook_allowed_networks: tuple[IPNetwork, ...] = ()
    body_read_timeout_s: float = 10.0  # a request body must arrive within this (app/bodies.py), else 408
    body_json_max_depth: int = 64  # deeper JSON bodies -> 400 body
    queue_max_depth: int = 200  # tasks waiting per heavy queue before 503 (app/backpressure.py); 0 = unbounded
    queue_max_depths: tuple[tuple[str, int], ...] = ()  # per-queue overrides (QUEUE_MAX_DEPTH_<QUEUE>)
    # -- the web tier facing clients (issue 26) --
    bind_host: str = "127.0.0.1"  # BIND_HOST: the address `meridian serve` listens on; 0.0.0.0 in containers
    header_read_timeout_s: float = 10.0  # a request's head must arrive within this (config/request_gate.py), else 408
    trusted_proxy_hops: int = 0  # TRUSTED_PROXY_HOPS: proxies in front whose X-Forwarded-For is believed
    # boundary vertices of all accounts' fence indexes one process keeps (least recently used
    # dropped beyond; engine/geofence/registry.py); 0 = no bound. ~40 bytes each.
    geofence_cache_vertices: int = 2_000_000

    @classmethod
    def from_env(cls, env: dict | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        log_format = (env.get("LOG_FORMAT") or "text").strip().lower()
        if log_format not in ("json", "text"):
            raise ConfigError(f"LOG_FORMAT must be 'json' or 'text', got {log_format!r}")
        environment = (env.get("NODE_ENV") or env.get("MERIDIAN_ENV") or "development").strip().lower()
        if environment not in ("development", "production", "test"):
            raise ConfigError(f"NODE_ENV must be 'development' or 'production', got {environment!r}")
        base_url = _url(env, "SERVICE_BASE_URL", ("http", "https"))
        suggest_url = _url(env, "SERVICE_SUGGEST_URL", ("http", "https"))
        api_key = (env.get("SERVICE_API_KEY") or "").strip() or None
        if (base_url or suggest_url) and not api_key:
            raise ConfigError(
                "SERVICE_API_KEY is required when SERVICE_BASE_URL or SERVICE_SUGGEST_URL is set "
                "(the gateway authenticates toward the remote core with it)"
            )
        redis_url = _url(env, "REDIS_URL", ("redis", "rediss", "unix")) or cls.redis_url
        database_url = (env.get("DATABASE_URL") or "").strip() or None
        if database_url and "://" not in database_url:
            raise ConfigError(f"DATABASE_URL must be an SQLAlchemy URL, got {database_url!r}")
        data_dir = Path(env["DATA_DIR"]).expanduser() if env.get("DATA_DIR") else None
        service_name = (env.get("SERVICE_NAME") or "meridian").strip()
        if not service_name.replace("_", "").replace("-", "").isalnum():
            raise ConfigError(f"SERVICE_NAME must be letters, digits, '-' or '_', got {service_name!r}")
        values: dict[str, Any] = dict(
            port=_int(env, "PORT", 3000, 1, 65535),
            service_name=service_name,
            service_api_key=api_key,
            service_base_url=base_url,
            service_suggest_url=suggest_url,
            log_format=log_format,
            debug=_bool(env, "DEBUG", False),
            environment=environment,
            redis_url=redis_url,
            backend_timeout_s=_float(env, "BACKEND_TIMEOUT", 5.0, 0.05),
            backend_retries=_int(env, "BACKEND_RETRIES", 3, 0, 10),
            backend_total_timeout_s=_float(env, "BACKEND_TOTAL_TIMEOUT", 12.0, 0.1),
            task_wait_timeout_s=_float(env, "TASK_WAIT_TIMEOUT", 20.0, 0.1),
            cache_ttl_s=_int(env, "CACHE_TTL", 3600, 0),
            http_max_age_s=_int(env, "HTTP_MAX_AGE", 300, 0),
            auth_cache_ttl_s=_float(env, "AUTH_CACHE_TTL", 5.0, 0.0),
            quota_fail_open=_bool(env, "QUOTA_FAIL_OPEN", True),
            quota_fail_closed_plans=tuple(dict.fromkeys(("free", (env.get("PORTAL_DEFAULT_PLAN") or "free").strip()))),
            web_workers=_int(env, "WEB_CONCURRENCY", 2, 1, 64),
            worker_concurrency=_int(env, "WORKER_CONCURRENCY", 2, 1, 64),
            webhook_max_retries=_int(env, "MERIDIAN_WEBHOOK_MAX_RETRIES", 6, 0, 20),
            webhook_backoff_s=_float(env, "MERIDIAN_WEBHOOK_BACKOFF_S", 2.0, 0.0),
            limits=Limits(matrix_job_chunk_cells=_int(env, "MATRIX_JOB_CHUNK_CELLS", 1_000_000, 1)),
            dataset_store=(env.get("DATASET_STORE") or "").strip() or None,
            dataset_poll_interval_s=_float(env, "DATASET_POLL_INTERVAL", 30.0, 0.5),
            dataset_store_options=_json_object(env, "DATASET_STORE_OPTIONS"),
        )
        values.update(_reliability_values(env))
        values.update(_web_tier_values(env))
        if database_url:
            values["database_url"] = database_url
        if data_dir:
            values["data_dir"] = data_dir
        return cls(**values)

    def with_overrides(self, **changes) -> Settings:
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise ConfigError(f"unknown settings: {sorted(unknown)}")
        return replace(self, **changes)

    def queue_max_depth_for(self, queue: str) -> int:
        return dict(self.queue_max_depths).get(queue, self.queue_max_depth)

    @property
    def remote_backend(self) -> bool:
        return bool(self.service_base_url)

    @property
    def error_traces(self) -> bool:
        """Stack traces in 500 bodies: with DEBUG, never in production (they go to the log)."""
        return self.debug and self.environment != "production"
