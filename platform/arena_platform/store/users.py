"""Users, their API tokens, and the uploads they attempted (for the upload rate limit).

A token is shown once, when it is issued; only its SHA-256 is stored (`ApiToken.token_sha256`), so
a leaked database leaks no token. Tokens are long random strings, so an unsalted hash is enough.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime

from sqlmodel import Session, select

from arena_platform.models import ApiToken, UploadAttempt, User, utc_now
from arena_platform.store.reads import as_utc

TOKEN_PREFIX = "arena_"  # makes a leaked token recognisable to secret scanners
_TOKEN_BYTES = 32
MAX_NAME_CHARS = 64


class InvalidName(ValueError):
    """A user name must be 1 to 64 printable characters without surrounding spaces."""


class NameTaken(ValueError):
    """A user with this name exists already."""


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def create_user(session: Session, *, name: str) -> tuple[User, str]:
    """A new user and their first token, returned in plain text (the only time it is visible).

    Raises InvalidName or NameTaken. Flushes (the user has an id); the caller commits.
    """
    if not (0 < len(name) <= MAX_NAME_CHARS and name.isprintable() and name == name.strip()):
        raise InvalidName(f"a user name is 1 to {MAX_NAME_CHARS} printable characters, got {name!r}")
    if get_user_by_name(session, name=name) is not None:
        raise NameTaken(f"the user name {name!r} is taken")
    user = User(name=name)
    session.add(user)
    session.flush()
    return user, issue_token(session, user_id=user.id)


def issue_token(session: Session, *, user_id: int) -> str:
    """A new token for the user, in plain text; only its hash is stored. The caller commits."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(_TOKEN_BYTES)
    session.add(ApiToken(user_id=user_id, token_sha256=token_sha256(token)))
    session.flush()
    return token


def user_for_token(session: Session, *, token: str) -> User | None:
    """The owner of `token` when it was issued and is not revoked; None otherwise."""
    return session.exec(
        select(User)
        .join(ApiToken, ApiToken.user_id == User.id)
        .where(ApiToken.token_sha256 == token_sha256(token), ApiToken.revoked_at.is_(None))
    ).first()


def active_token(session: Session, *, token: str) -> ApiToken | None:
    """The row of `token` when it was issued and is not revoked; None otherwise."""
    return session.exec(
        select(ApiToken).where(ApiToken.token_sha256 == token_sha256(token), ApiToken.revoked_at.is_(None))
    ).first()


def revoke_token(session: Session, *, token: str) -> bool:
    """Revoke `token`; False when it is unknown or revoked already. The caller commits."""
    return _revoke(session, active_token(session, token=token))


def revoke_token_by_id(session: Session, *, user_id: int, token_id: int) -> bool:
    """Revoke the user's token `token_id`; False when the user has no such active token (another
    user's token is "no such token" too). The caller commits."""
    row = session.exec(
        select(ApiToken).where(
            ApiToken.id == token_id, ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None)
        )
    ).first()
    return _revoke(session, row)


def _revoke(session: Session, row: ApiToken | None) -> bool:
    if row is None:
        return False
    row.revoked_at = utc_now()
    session.add(row)
    session.flush()
    return True


def record_upload_attempt(session: Session, *, user_id: int) -> None:
    """Count one upload the user sent, whatever becomes of it. The caller commits."""
    session.add(UploadAttempt(user_id=user_id))
    session.flush()


def upload_attempts_since(session: Session, *, user_id: int, since: datetime) -> list[datetime]:
    """When the user's uploads at or after `since` were attempted, oldest first, in UTC."""
    times = session.exec(
        select(UploadAttempt.created_at)
        .where(UploadAttempt.user_id == user_id, UploadAttempt.created_at >= since)
        .order_by(UploadAttempt.created_at)
    )
    return [as_utc(moment) for moment in times]


def get_user_by_name(session: Session, *, name: str) -> User | None:
    return session.exec(select(User).where(User.name == name)).first()
