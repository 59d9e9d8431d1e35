"""Signed, expiring, single-use tokens for the links in the portal's mails (itsdangerous), bound to
the state of the account they were sent for.

A token carries its purpose, the account id, a random id (``jti``), the account's
``token_generation`` and a digest of its e-mail address when it was issued, and for an e-mail
change the new address. It is valid for :data:`MAX_AGE_S` (24 h), once, and only while the
account is as it was: every redemption (:meth:`TokenSigner.consume`) and every verification,
password change and e-mail change (``accounts/users.py``) bumps ``token_generation``, so each of
them kills every link sent before it. Redeeming inserts the ``jti`` into ``used_tokens``, checks
the account's state, applies the link's change and bumps the generation in one transaction, so of
two links (or two clicks) racing, one wins.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from accounts.models import Account, UsedToken, utcnow
from accounts.store import AccountStore

MAX_AGE_S = 24 * 3600
VERIFY, RESET, EMAIL = "verify", "reset", "email"
PURPOSES = (VERIFY, RESET, EMAIL)


class TokenError(ValueError):
    """The link cannot be used; the message says why (expired, used, tampered, superseded)."""


class AccountState(Protocol):
    """What a token is bound to (``accounts.users.User`` has it)."""

    @property
    def id(self) -> int: ...
    @property
    def email(self) -> str | None: ...
    @property
    def token_generation(self) -> int: ...


@dataclass(frozen=True)
class Token:
    purpose: str
    account_id: int
    jti: str
    generation: int
    email_digest: str
    email: str | None = None  # the new address of an e-mail change


# What a redemption changes on the account row, inside the redeeming transaction.
Apply = Callable[[Session, Account, Token], None]


def email_digest(email: str | None) -> str:
    """A short digest of an address: the token names the address it was sent for without showing it."""
    return hashlib.sha256((email or "").encode()).hexdigest()[:16]


class TokenSigner:
    def __init__(self, secret_key: str, store: AccountStore, max_age_s: int = MAX_AGE_S) -> None:
        self._serializer = URLSafeTimedSerializer(secret_key, salt="meridian-portal-mail")
        self.store = store
        self.max_age_s = max_age_s

    def issue(self, purpose: str, account: AccountState, email: str | None = None) -> str:
        """A link token for ``account`` as it is now; ``email`` is the new address of a change."""
        if purpose not in PURPOSES:
            raise ValueError(f"unknown token purpose {purpose!r}")
        payload: dict[str, object] = {
            "p": purpose,
            "a": account.id,
            "j": secrets.token_urlsafe(16),
            "g": account.token_generation,
            "m": email_digest(account.email),
        }
        if email is not None:
            payload["e"] = email
        return self._serializer.dumps(payload)

    def read(self, token: str, purpose: str) -> Token:
        """The token's content if its signature, age, purpose and account state are right and it
        was not used yet (a form page shows this before the user fills it in)."""
        content = self._decode(token, purpose)
        with self.store.session() as s:
            if s.get(UsedToken, content.jti) is not None:
                raise TokenError("this link has already been used")
            self._check_state(s.get(Account, content.account_id), content)
        return content

    def consume(self, token: str, purpose: str, apply: Apply | None = None) -> Token:
        """Redeem the link: mark it used, check the account's state, ``apply`` its change and bump
        the account's ``token_generation``, all in one transaction (``apply`` may raise to undo
        it all). A second use, or any older link, then raises :class:`TokenError`."""
        content = self.read(token, purpose)
        with self.store.session() as s, s.begin():
            # the insert first: on SQLite it takes the write lock, so the reads below are current
            s.add(UsedToken(jti=content.jti, purpose=purpose, account_id=content.account_id, used_at=utcnow()))
            try:
                s.flush()
            except IntegrityError:
                raise TokenError("this link has already been used") from None
            row = s.scalar(select(Account).where(Account.id == content.account_id).with_for_update())
            row = self._check_state(row, content)
            if apply is not None:
                apply(s, row, content)
            row.token_generation += 1
        return content

    # ---------------------------------------------------------------- helpers
    def _decode(self, token: str, purpose: str) -> Token:
        if not token or len(token) > 1000:
            raise TokenError("this link is incomplete or damaged")
        try:
            data = self._serializer.loads(token, max_age=self.max_age_s)
        except SignatureExpired:
            raise TokenError("this link has expired (links are valid for 24 hours); ask for a new one") from None
        except BadSignature:
            raise TokenError("this link is invalid (it was changed or cut off); ask for a new one") from None
        if not isinstance(data, dict) or data.get("p") != purpose or not isinstance(data.get("a"), int):
            raise TokenError("this link is not meant for this page")
        generation, digest, new_email = data.get("g"), data.get("m"), data.get("e")
        if not isinstance(generation, int) or not isinstance(digest, str) or not isinstance(new_email, str | None):
            raise TokenError("this link is no longer valid; ask for a new one")
        return Token(purpose, data["a"], str(data.get("j")), generation, digest, new_email)

    @staticmethod
    def _check_state(row: Account | None, content: Token) -> Account:
        if row is None or row.token_generation != content.generation or email_digest(row.email) != content.email_digest:
            raise TokenError(
                "this link is no longer valid: the account changed after it was sent (a newer link was used, "
                "or the password or e-mail address changed); ask for a new one"
            )
        return row
