"""Password hashing (argon2id, argon2-cffi's defaults) and the password rule.

Unknown addresses still cost one hash verification (:func:`verify_dummy`), so sign-in takes the
same time whether the address exists or not.
"""

from __future__ import annotations

import contextlib

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MIN_LENGTH = 10
MAX_LENGTH = 200  # argon2 takes any length; a bound keeps a hostile 4 MB "password" cheap to refuse
PASSWORD_RULE = f"at least {MIN_LENGTH} characters, with at least one letter and one digit or symbol"

_hasher = PasswordHasher()
_DUMMY_HASH = _hasher.hash("meridian-dummy-password-for-unknown-addresses")


def password_problem(password: str) -> str | None:
    """Why a new password is refused (None: acceptable)."""
    if len(password) < MIN_LENGTH:
        return f"password too short: {PASSWORD_RULE}"
    if len(password) > MAX_LENGTH:
        return f"password too long: at most {MAX_LENGTH} characters"
    if not any(c.isalpha() for c in password) or all(c.isalpha() for c in password):
        return f"password too weak: {PASSWORD_RULE}"
    if password.strip() != password:
        return "password must not start or end with spaces"
    return None


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    """Constant-time check (argon2-cffi); False for a wrong password or an unreadable hash."""
    if len(password) > MAX_LENGTH:
        verify_dummy()
        return False
    try:
        return _hasher.verify(password_hash, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def verify_dummy() -> None:
    """Spend the time of one verification (for an unknown address)."""
    with contextlib.suppress(VerifyMismatchError):
        _hasher.verify(_DUMMY_HASH, "not-the-dummy-password")


def needs_rehash(password_hash: str) -> bool:
    return _hasher.check_needs_rehash(password_hash)
