"""What ``make run`` prints once everything answers: the URLs, the demo key and two curl lines
(:func:`banner`), and a three-line :func:`reminder` once the processes' output has settled."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cli.demo_key import DemoKey

GEOCODE_CORE = "/services/json?cmd=geocoding&addr=Mannerheimintie%205%2C%20Helsinki"
GEOCODE_V1 = "/v1/geocoding?query=6%20Quai%20Antoine%201er%2C%20Monaco"


@dataclass(frozen=True)
class RunInfo:
    port: int
    mail_port: int
    flower_port: int
    redis_url: str
    demo: DemoKey
    key_file: Path

    @property
    def base(self) -> str:
        return f"http://localhost:{self.port}"

    @property
    def flower(self) -> str:
        return f"http://127.0.0.1:{self.flower_port}"


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def banner(info: RunInfo) -> str:
    base, key, rule = info.base, info.demo.key, "=" * 100
    flower_auth = os.environ.get("FLOWER_BASIC_AUTH")
    flower_login = f"  (sign in as {flower_auth.split(',')[0]})" if flower_auth else ""
    if info.demo.secret is not None:
        key_lines = [
            f"  API key (plan {info.demo.record.plan.name}): {key}",
            f"    kept in {_shown(info.key_file)} and used again by the next runs",
            f"  API Secret (shown once, it signs your webhooks): {info.demo.secret}",
        ]
    else:
        key_lines = [
            f"  API key (plan {info.demo.record.plan.name}): {key}",
            f"    from {_shown(info.key_file)}; its API Secret was shown when it was created"
            " (`meridian dev demo-key --replace`: a new key and secret)",
        ]
    lines = [
        "",
        rule,
        f"Meridian is ready on {base}   (Ctrl-C stops every process)",
        f"  Portal        {base}/portal  (sign up; caught mails: {base}/portal/dev/mail)",
        f"  Swagger UI    {base}/api",
        f"  OpenAPI       {base}/api-json",
        f"  Health        {base}/v1/health/ready",
        f"  Flower        {info.flower}  (queue monitor){flower_login}",
        f"  Mail catcher  smtp://127.0.0.1:{info.mail_port}   Redis {info.redis_url}",
        "",
        *key_lines,
        "",
        f"  curl -s -H 'Authorization: Bearer {key}' '{base}{GEOCODE_CORE}'",
        f"  curl -s -H 'X-API-Key: {key}' '{base}{GEOCODE_V1}'",
        rule,
        "",
    ]
    return "\n".join(lines)


def reminder(info: RunInfo) -> str:
    base, key = info.base, info.demo.key
    return (
        f"--- Meridian is ready on {base} (portal {base}/portal, Swagger UI {base}/api, Flower {info.flower})\n"
        f"--- API key {key} (in {_shown(info.key_file)})\n"
        f"--- curl -s -H 'X-API-Key: {key}' '{base}{GEOCODE_V1}'\n"
    )
