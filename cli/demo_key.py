"""The API key ``make run`` prints: one key of the account ``demo``, kept from run to run.

Keys are stored hashed, so the key itself is kept in a file of the checkout (``var/demo-key``,
mode 0600, beside ``var/portal-secret`` and the SQLite file it belongs to; ``make clean`` removes
them together). A run reuses that key while it is live; else (first run, a new database,
the key revoked or expired) it creates one, and only then is its API Secret known, to be shown
once. The API Secret itself is never written down: it is what signs webhooks, and the server
keeps only its hash, as for every other key. Other live keys of the account that an earlier run
made (label ``make run``) are revoked, so one demo key is live at a time."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from config.settings import PROJECT_ROOT

if TYPE_CHECKING:  # the caller brings the store: every ``meridian`` command loads this module
    from accounts.store import AccountStore, KeyRecord

DEMO_KEY_FILE = PROJECT_ROOT / "var" / "demo-key"
DEMO_ACCOUNT = "demo"
DEMO_PLAN = "standard"
DEMO_LABEL = "make run"


@dataclass(frozen=True)
class DemoKey:
    key: str
    record: KeyRecord
    secret: str | None  # only when the key was created by this call
    revoked: int  # earlier demo keys revoked by this call


def _live(store: AccountStore, key: str) -> KeyRecord | None:
    record = store.find(key)
    if record is None or not record.matches(key) or record.account_name != DEMO_ACCOUNT:
        return None
    if record.state() != "active" or record.account_disabled:
        return None
    return record


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` readable by the owner only, replacing the file in one step."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text + "\n")
    os.replace(tmp, path)


def ensure_demo_key(store: AccountStore, path: Path = DEMO_KEY_FILE, *, replace: bool = False) -> DemoKey:
    """The live demo key kept in ``path``, or a new one (written there) when there is none or
    ``replace`` asks for a new key and secret."""
    kept = path.read_text().strip() if path.exists() else ""
    record = _live(store, kept) if kept and not replace else None
    key, secret = kept, None
    if record is None:
        issued = store.create_key(DEMO_ACCOUNT, DEMO_PLAN, label=DEMO_LABEL)
        key, secret, record = issued.key, issued.secret, issued.record
        _write_private(path, key)
    revoked = 0
    for other in store.list_keys(DEMO_ACCOUNT):
        if other.id != record.id and other.label == DEMO_LABEL and other.state() == "active":
            revoked += store.revoke(other.prefix)
    return DemoKey(key=key, record=record, secret=secret, revoked=revoked)
