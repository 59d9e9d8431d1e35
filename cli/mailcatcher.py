"""A development mail server (aiosmtpd): every message it receives is written to ``MAIL_DIR``
(default ``var/mail/``) as one ``.eml`` file, which the portal lists in development. Nothing is
relayed. ``make run`` starts it on 127.0.0.1:1025, where the development ``SMTP_URL`` points."""

from __future__ import annotations

import secrets
import time
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiosmtpd.controller import Controller

MAX_MESSAGE_BYTES = 1024 * 1024


class StoringHandler:
    """aiosmtpd handler: keep each message as ``<unix ms>-<random>.eml`` in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 (aiosmtpd's hook name)
        data = envelope.original_content or envelope.content
        if isinstance(data, str):
            data = data.encode()
        name = f"{int(time.time() * 1000)}-{secrets.token_hex(4)}.eml"
        tmp = self.directory / f".{name}.tmp"
        tmp.write_bytes(data)
        tmp.rename(self.directory / name)  # readers never see half a message
        return "250 Message accepted for delivery"


def start(directory: Path, host: str = "127.0.0.1", port: int = 1025) -> Controller:
    # imported here: web processes import this module for read_messages only (the development
    # mail page), and need not load the SMTP server at start-up
    from aiosmtpd.controller import Controller

    controller = Controller(StoringHandler(directory), hostname=host, port=port, data_size_limit=MAX_MESSAGE_BYTES)
    controller.start()
    return controller


def read_messages(directory: Path) -> list[tuple[str, EmailMessage]]:
    """(file name, message) of every caught mail, newest first."""
    if not directory.is_dir():
        return []
    out = []
    for path in sorted(directory.glob("*.eml"), reverse=True):
        out.append((path.name, message_from_bytes(path.read_bytes(), policy=policy.default)))
    return out
