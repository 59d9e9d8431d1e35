"""The development mailbox: a directory (``MAIL_DIR``, default ``var/mail/``) holding every caught
mail as one ``<unix ms>-<random>.eml`` file. Written by ``meridian mailcatcher``
(``cli/mailcatcher.py``), read by the portal's development mail page (``app/portal/views_dev.py``)
and by the tests; here, below both, so that the web does not import the command line."""

from __future__ import annotations

import secrets
import time
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path


def write_message(directory: Path, data: bytes) -> Path:
    """Keep one message; readers never see half of it (written aside, then renamed)."""
    name = f"{int(time.time() * 1000)}-{secrets.token_hex(4)}.eml"
    tmp = directory / f".{name}.tmp"
    tmp.write_bytes(data)
    return tmp.rename(directory / name)


def read_messages(directory: Path) -> list[tuple[str, EmailMessage]]:
    """(file name, message) of every caught mail, newest first."""
    if not directory.is_dir():
        return []
    out = []
    for path in sorted(directory.glob("*.eml"), reverse=True):
        out.append((path.name, message_from_bytes(path.read_bytes(), policy=policy.default)))
    return out
