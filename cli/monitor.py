"""``meridian monitor``: Flower, the Celery queue monitor, never open to whoever reaches its port.

Flower lists every task with its arguments and lets its users revoke tasks and shut workers down,
so it runs behind HTTP basic auth (``FLOWER_BASIC_AUTH=user:password[,user:password...]``, which
Flower reads from the environment itself: the password stays out of the process list) and binds
127.0.0.1 unless told otherwise (a container publishes it on the host's loopback instead). Without
credentials it does not start.
"""

from __future__ import annotations

import sys

from config.settings import ConfigError

MIN_PASSWORD = 12


def check_basic_auth(value: str | None) -> None:
    """Raise :class:`ConfigError` unless ``value`` is ``user:password[,user:password...]`` with
    passwords of at least :data:`MIN_PASSWORD` characters."""
    pairs = [item.strip() for item in (value or "").split(",") if item.strip()]
    if not pairs:
        raise ConfigError(
            "FLOWER_BASIC_AUTH is required for Flower (user:password; e.g. admin:$(openssl rand -hex 16))"
        )
    for pair in pairs:
        user, sep, password = pair.partition(":")
        if not (sep and user and len(password) >= MIN_PASSWORD):
            raise ConfigError(f"FLOWER_BASIC_AUTH must be user:password with a password of {MIN_PASSWORD}+ characters")


def flower_argv(port: int, address: str, basic_auth: str | None) -> list[str]:
    """The command that runs Flower, after checking its credentials."""
    check_basic_auth(basic_auth)
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers.main",
        "flower",
        f"--port={port}",
        f"--address={address}",
    ]
