"""A development mail server (aiosmtpd): every message it receives goes to the development
mailbox (``common/mailbox.py``: ``MAIL_DIR``, one ``.eml`` file per message), which the portal
lists in development. Nothing is relayed. ``make run`` starts it on 127.0.0.1:``MAIL_PORT`` (1025),
where the development ``SMTP_URL`` points."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

from common.mailbox import write_message

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
        write_message(self.directory, data)
        return "250 Message accepted for delivery"


def start(directory: Path, host: str = "127.0.0.1", port: int = 1025) -> Controller:
    controller = Controller(StoringHandler(directory), hostname=host, port=port, data_size_limit=MAX_MESSAGE_BYTES)
    controller.start()
    return controller
