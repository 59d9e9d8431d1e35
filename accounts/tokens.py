"""Signed, expiring, single-use tokens for the links in the portal's mails (itsdangerous).

A token carries its purpose, the account id, a random id (``jti``) and, for an e-mail change,
the new address. It is valid for :data:`MAX_AGE_S` (24 h) and only once: using it inserts its
``jti`` into ``used_tokens`` (primary key), so a second use is refused even when two clicks race.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from sqlalchemy.exc import IntegrityError

from accounts.models import UsedToken, utcnow
from accounts.store import AccountStore

MAX_AGE_S = 24 * 3600
VERIFY, RESET, EMAIL = "verify", "reset", "email"
PURPOSES = (VERIFY, RESET, EMAIL)


class TokenError(ValueError):
    """The link cannot be used; the message says why (expired, used, tampered)."""


@dataclass(frozen=True)
class Token:
    purpose: str
    account_id: int
    jti: str
    email: str | None = None


class TokenSigner:
    def __init__(self, secret_key: str, store: AccountStore, max_age_s: int = MAX_AGE_S) -> None:
        self._serializer = URLSafeTimedSerializer(secret_key, salt="meridian-portal-mail")
        self.store = store
        self.max_age_s = max_age_s

    def issue(self, purpose: str, account_id: int, email: str | None = None) -> str:
        if purpose not in PURPOSES:
            raise ValueError(f"unknown token purpose {purpose!r}")
        payload = {"p": purpose, "a": account_id, "j": secrets.token_urlsafe(16)}
        if email is not None:
            payload["e"] = email
        return self._serializer.dumps(payload)

    def read(self, token: str, purpose: str) -> Token:
        """The token's content if its signature, age and purpose are right (not yet marked used)."""
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
        return Token(purpose, data["a"], str(data.get("j")), data.get("e"))

    def consume(self, token: str, purpose: str) -> Token:
        """Read and mark used, atomically; a second use raises :class:`TokenError`."""
        content = self.read(token, purpose)
        try:
            with self.store.session() as s, s.begin():
                s.add(UsedToken(jti=content.jti, purpose=purpose, account_id=content.account_id, used_at=utcnow()))
        except IntegrityError:
            raise TokenError("this link has already been used") from None
        return content
