"""The ports ``make run`` listens on, checked before it starts anything: a busy port becomes one
line naming the port, what wanted it and the variable that moves it, instead of a traceback from
one process and the whole Procfile stopping with it."""

from __future__ import annotations

import errno
import os
import socket
from dataclasses import dataclass

from config.portal import MAIL_PORT_DEFAULT
from config.settings import ConfigError, Settings, _int

FLOWER_PORT_DEFAULT = 5555
# The wildcard address: a port taken on any IPv4 address of the machine, loopback included,
# would stop a server that binds it (gunicorn on PORT, the mail catcher, Flower).
CHECK_HOST = "0.0.0.0"


@dataclass(frozen=True)
class DevPort:
    variable: str  # the environment variable that sets it
    default: int
    what: str  # the process that listens on it


WEB_PORT = DevPort("PORT", Settings.port, "web")  # Settings.port: the dataclass field's default
MAIL_PORT = DevPort("MAIL_PORT", MAIL_PORT_DEFAULT, "mail catcher")
FLOWER_PORT = DevPort("FLOWER_PORT", FLOWER_PORT_DEFAULT, "Flower")
DEV_PORTS = (WEB_PORT, MAIL_PORT, FLOWER_PORT)


def configured(env: dict[str, str] | None = None) -> dict[DevPort, int]:
    """Each port's value from the environment; :class:`ConfigError` names a bad variable."""
    env = dict(os.environ if env is None else env)
    return {p: _int(env, p.variable, p.default, 1, 65535) for p in DEV_PORTS}


def is_free(port: int, host: str = CHECK_HOST) -> bool:
    """Whether a server could listen on ``port`` now (with ``SO_REUSEADDR``, as gunicorn, asyncio
    and tornado set it, so the TIME_WAIT connections of a server just stopped do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def _suggestion(port: int, taken: set[int]) -> int | None:
    """The next free port above ``port`` that no other setting uses."""
    for candidate in range(port + 1, min(port + 200, 65536)):
        if candidate not in taken and is_free(candidate):
            return candidate
    return None


def problem(env: dict[str, str] | None = None) -> str | None:
    """One line saying which ports are busy (or set twice) and which variables change them; None
    when ``make run`` can listen on all of them."""
    try:
        ports = configured(env)
    except ConfigError as exc:
        return f"configuration error: {exc}"
    by_value: dict[int, list[DevPort]] = {}
    for p, value in ports.items():
        by_value.setdefault(value, []).append(p)
    for value, users in by_value.items():
        if len(users) > 1:
            names = " and ".join(p.variable for p in users)
            return f"{names} are both {value}: give each a port of its own"
    busy = [(p, value) for p, value in ports.items() if not is_free(value)]
    if not busy:
        return None
    taken = set(ports.values())
    example = []
    for p, value in busy:
        free = _suggestion(value, taken)
        if free is not None:
            taken.add(free)
            example.append(f"{p.variable}={free}")
    listed = ", ".join(f"{value} ({p.what})" for p, value in busy)
    variables = ", ".join(p.variable for p, _ in busy)
    noun, verb = ("port", "is") if len(busy) == 1 else ("ports", "are")
    line = f"{noun} {listed} {verb} busy: stop what listens there or set {variables}"
    return line + (f", e.g. {' '.join(example)} make run" if example else "")
