"""Settings of the client portal and its mail, from the environment, validated once at start-up
(the same way as ``config/settings.py``: :class:`ConfigError` names the variable).

| variable | meaning | default |
|---|---|---|
| ``PORTAL_ENABLED`` | serve the portal at ``/portal`` (``false``: API only) | ``true`` |
| ``PORTAL_BASE_URL`` | public URL of the portal, used in the links of the mails | ``http://localhost:$PORT`` |
| ``PORTAL_SECRET_KEY`` | signs session cookies, CSRF and mail tokens; required in production | development: a random key kept in ``var/portal-secret`` |
| ``PORTAL_DEFAULT_PLAN`` | plan of a new account | ``free`` |
| ``SMTP_URL`` | ``smtp://user:pass@host:587?starttls=true`` or ``smtps://user:pass@host:465`` | development: ``smtp://127.0.0.1:$MAIL_PORT`` (the mail catcher) |
| ``MAIL_PORT`` | port of ``meridian mailcatcher`` (development), where the development ``SMTP_URL`` points | ``1025`` |
| ``MAIL_FROM`` | sender address of the portal's mails | ``Meridian <no-reply@localhost>`` |
| ``MAIL_DIR`` | where ``meridian mailcatcher`` stores caught mails (development) | ``var/mail`` |
| ``PORTAL_LOGIN_LIMIT`` / ``PORTAL_SIGNUP_LIMIT`` / ``PORTAL_RESET_LIMIT`` | attempts per address per window ``N/SECONDS`` (password checks: per client IP and address), per IP 5 N or ``N/SECONDS,PER_IP`` | ``10/900``, ``3/3600``, ``3/3600`` |
| ``PORTAL_OPERATOR_NAME`` | who runs this deployment, named on the terms page | generic wording |
| ``PORTAL_OPERATOR_EMAIL`` | the operator's address: upgrade requests are mailed to it, the terms page names it | none (requests in the admin view only) |
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from config.settings import PROJECT_ROOT, ConfigError, _bool, _int

SECRET_FILE = PROJECT_ROOT / "var" / "portal-secret"
MAIL_PORT_DEFAULT = 1025


def mail_port(env: dict[str, str] | None = None) -> int:
    """``MAIL_PORT``: where ``meridian mailcatcher`` (started by ``make run``) listens."""
    return _int(dict(os.environ if env is None else env), "MAIL_PORT", MAIL_PORT_DEFAULT, 1, 65535)


@dataclass(frozen=True)
class SmtpTarget:
    """Where mail goes: host, port, TLS mode (``starttls`` upgrade or implicit ``ssl``), login."""

    host: str
    port: int
    ssl: bool = False
    starttls: bool = False
    username: str | None = None
    password: str | None = None
    timeout_s: float = 10.0

    def __repr__(self) -> str:  # never print the password
        mode = "ssl" if self.ssl else "starttls" if self.starttls else "plain"
        return f"SmtpTarget({self.host}:{self.port}, {mode}, user={self.username!r})"


@dataclass(frozen=True)
class RateLimit:
    """At most ``per_address`` attempts for one address and ``per_ip`` for one IP per window."""

    per_address: int
    per_ip: int
    window_s: int


def parse_smtp_url(raw: str, name: str = "SMTP_URL") -> SmtpTarget:
    parts = urlsplit(raw)
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        raise ConfigError(f"{name} must look like smtp://user:pass@host:587?starttls=true or smtps://host:465")
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    unknown = set(query) - {"starttls", "timeout"}
    if unknown:
        raise ConfigError(f"{name}: unknown option(s) {', '.join(sorted(unknown))} (known: starttls, timeout)")
    starttls = _bool(query, "starttls", False)
    try:
        port = parts.port or (465 if parts.scheme == "smtps" else 25)
        timeout = float(query.get("timeout", "10"))
    except ValueError as exc:
        raise ConfigError(f"{name}: bad port or timeout ({exc})") from None
    if timeout <= 0:
        raise ConfigError(f"{name}: timeout must be > 0")
    if parts.scheme == "smtps" and starttls:
        raise ConfigError(f"{name}: smtps:// is already TLS; starttls=true is for smtp://")
    return SmtpTarget(
        host=parts.hostname,
        port=port,
        ssl=parts.scheme == "smtps",
        starttls=starttls,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        timeout_s=timeout,
    )


def _rate_limit(env: dict[str, str], name: str, default: str) -> RateLimit:
    """``N/SECONDS`` (N attempts per address; 5 N per IP) or ``N/SECONDS,M`` (M per IP)."""
    raw = (env.get(name) or default).strip()
    per_address, _, per_ip = raw.partition(",")
    count, sep, window = per_address.partition("/")
    per_ip = per_ip.strip() or (str(5 * int(count)) if count.isdigit() else "")
    if not (sep and count.isdigit() and window.isdigit() and per_ip.isdigit()) or 0 in (
        int(count),
        int(window),
        int(per_ip),
    ):
        raise ConfigError(f"{name} must be N/SECONDS or N/SECONDS,PER_IP (positive integers), got {raw!r}")
    return RateLimit(per_address=int(count), per_ip=int(per_ip), window_s=int(window))


def _secret_key(env: dict[str, str], production: bool) -> str:
    raw = (env.get("PORTAL_SECRET_KEY") or "").strip()
    if raw:
        if len(raw) < 32:
            raise ConfigError("PORTAL_SECRET_KEY must be at least 32 characters (e.g. `openssl rand -hex 32`)")
        return raw
    if production:
        raise ConfigError(
            "PORTAL_SECRET_KEY is required in production (e.g. `openssl rand -hex 32`), or PORTAL_ENABLED=false"
        )
    # Development: one random key shared by every process of this checkout, kept out of git.
    path = Path(env.get("PORTAL_SECRET_FILE") or SECRET_FILE)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass  # another process made it first
    else:
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))
    for _ in range(50):  # a process that lost the race may read before the winner has written
        key = path.read_text().strip()
        if key:
            return key
        time.sleep(0.02)
    raise ConfigError(f"{path} is empty: delete it or set PORTAL_SECRET_KEY")


def _operator_email(env: dict[str, str]) -> str:
    raw = (env.get("PORTAL_OPERATOR_EMAIL") or "").strip()
    if raw and ("@" not in raw or any(c in raw for c in " ,;<>\r\n")):
        raise ConfigError(f"PORTAL_OPERATOR_EMAIL must be one e-mail address, got {raw!r}")
    return raw


def _production(env: dict[str, str]) -> bool:
    return (env.get("NODE_ENV") or env.get("MERIDIAN_ENV") or "").strip().lower() == "production"


def portal_enabled(env: dict[str, str] | None = None) -> bool:
    return _bool(dict(os.environ if env is None else env), "PORTAL_ENABLED", True)


def mail_settings(env: dict[str, str] | None = None) -> tuple[SmtpTarget, str]:
    """The SMTP server and sender: all a mail worker needs (SMTP_URL, MAIL_FROM)."""
    env = dict(os.environ if env is None else env)
    production = _production(env)
    smtp_raw = (env.get("SMTP_URL") or "").strip()
    if not smtp_raw:
        if production:
            raise ConfigError(
                "SMTP_URL is required in production (smtp://user:pass@host:587?starttls=true), or PORTAL_ENABLED=false"
            )
        smtp_raw = f"smtp://127.0.0.1:{mail_port(env)}"  # the development mail catcher
    mail_from = (env.get("MAIL_FROM") or "Meridian <no-reply@localhost>").strip()
    if "@" not in mail_from or "\n" in mail_from or "\r" in mail_from:
        raise ConfigError(f"MAIL_FROM must be an e-mail address (optionally 'Name <addr>'), got {mail_from!r}")
    return parse_smtp_url(smtp_raw), mail_from


@dataclass(frozen=True)
class PortalSettings:
    base_url: str
    secret_key: str
    default_plan: str
    smtp: SmtpTarget
    mail_from: str
    mail_dir: Path
    development: bool
    secure_cookies: bool
    login_limit: RateLimit
    signup_limit: RateLimit
    reset_limit: RateLimit
    operator_name: str = ""  # empty: the pages say "the operator of this deployment"
    operator_email: str = ""  # empty: upgrade requests reach the admin view only

    def __repr__(self) -> str:  # never print the secret key
        return f"PortalSettings(base_url={self.base_url!r}, smtp={self.smtp!r}, development={self.development})"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> PortalSettings:
        env = dict(os.environ if env is None else env)
        production = _production(env)
        port = (env.get("PORT") or "3000").strip()
        base_url = (env.get("PORTAL_BASE_URL") or f"http://localhost:{port}").strip().rstrip("/")
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise ConfigError(f"PORTAL_BASE_URL must be an http(s) URL without query, got {base_url!r}")
        smtp, mail_from = mail_settings(env)
        default_plan = (env.get("PORTAL_DEFAULT_PLAN") or "free").strip()
        mail_dir = Path(env.get("MAIL_DIR") or PROJECT_ROOT / "var" / "mail").expanduser()
        return cls(
            base_url=base_url,
            secret_key=_secret_key(env, production),
            default_plan=default_plan,
            smtp=smtp,
            mail_from=mail_from,
            mail_dir=mail_dir,
            development=not production,
            secure_cookies=parts.scheme == "https",
            login_limit=_rate_limit(env, "PORTAL_LOGIN_LIMIT", "10/900"),
            signup_limit=_rate_limit(env, "PORTAL_SIGNUP_LIMIT", "3/3600"),
            reset_limit=_rate_limit(env, "PORTAL_RESET_LIMIT", "3/3600"),
            operator_name=(env.get("PORTAL_OPERATOR_NAME") or "").strip()[:200],
            operator_email=_operator_email(env),
        )
