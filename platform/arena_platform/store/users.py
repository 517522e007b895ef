"""Users, their API tokens, and the uploads they attempted (for the upload rate limit).

A token is shown once, when it is issued; only its SHA-256 is stored (`ApiToken.token_sha256`), so
a leaked database leaks no token. Tokens are long random strings, so an unsalted hash is enough.

Per-user caps (active tokens, uploads per hour) are checked in the transaction that adds the row,
after it: the row is inserted first, then the user's row is locked, then the rows are counted. So
concurrent requests of one user count one after another on PostgreSQL (the lock) and on SQLite
(the insert takes the database's write lock), and no two of them pass a cap together.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from sqlalchemy import func
from sqlmodel import Session, delete, select

from arena_platform.models import ApiToken, Challenge, Entry, UploadAttempt, User, utc_now
from arena_platform.store.reads import as_utc

TOKEN_PREFIX = "arena_"  # makes a leaked token recognisable to secret scanners
_TOKEN_BYTES = 32
MAX_NAME_CHARS = 64
TOKEN_USE_RESOLUTION = timedelta(minutes=1)  # `last_used_at` is written at most this often per token


class InvalidName(ValueError):
    """A user name must be 1 to 64 printable characters without surrounding spaces."""


class NameTaken(ValueError):
    """A user with this name exists already, whatever its case (`Alice` is `alice`)."""


class TooManyTokens(ValueError):
    """The user holds their cap of active tokens already."""


class UploadLimitReached(Exception):
    """The user attempted their cap of uploads within the window already; one leaves it at `frees_at`."""

    def __init__(self, frees_at: datetime) -> None:
        super().__init__(f"the upload limit is reached until {frees_at.isoformat()}")
        self.frees_at = frees_at


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def create_user(session: Session, *, name: str, organiser: bool = False) -> tuple[User, str]:
    """A new user (an `organiser`: one who may create competitions) and their first token, returned
    in plain text (the only time it is visible).

    Raises InvalidName or NameTaken. Flushes (the user has an id); the caller commits.
    """
    if not (0 < len(name) <= MAX_NAME_CHARS and name.isprintable() and name == name.strip()):
        raise InvalidName(f"a user name is 1 to {MAX_NAME_CHARS} printable characters, got {name!r}")
    holder = session.exec(select(User.name).where(func.lower(User.name) == func.lower(name))).first()
    if holder is not None:  # compared as the unique lower(name) index compares (SQLite folds ASCII only)
        raise NameTaken(f"the user name {name!r} is taken" + (f" (as {holder!r})" if holder != name else ""))
    user = User(name=name, organiser=organiser)
    session.add(user)
    session.flush()
    return user, issue_token(session, user_id=user.id)


def issue_token(
    session: Session, *, user_id: int, name: str | None = None, max_active: int | None = None
) -> str:
    """A new token for the user, in plain text; only its hash is stored. With `max_active`, raises
    TooManyTokens when the user would hold more active tokens than that: the caller rolls back.
    The caller commits."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(_TOKEN_BYTES)
    insert_counted(session, ApiToken(user_id=user_id, name=name, token_sha256=token_sha256(token)))
    if max_active is not None and len(list_tokens(session, user_id=user_id)) > max_active:
        raise TooManyTokens(f"a user holds at most {max_active} active API tokens: revoke one first")
    return token


def list_tokens(session: Session, *, user_id: int) -> list[ApiToken]:
    """The user's active (unrevoked) tokens, oldest first."""
    return list(
        session.exec(
            select(ApiToken)
            .where(ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None))
            .order_by(ApiToken.id)
        )
    )


def note_token_use(session: Session, *, token: ApiToken) -> bool:
    """Sets the token's `last_used_at` to now, unless it was set less than TOKEN_USE_RESOLUTION ago;
    True when it changed (the caller commits)."""
    now = utc_now()
    if token.last_used_at is not None and as_utc(token.last_used_at) > now - TOKEN_USE_RESOLUTION:
        return False
    token.last_used_at = now
    session.add(token)
    session.flush()
    return True


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


def count_upload_attempt(session: Session, *, user_id: int, limit: int, window: timedelta) -> int:
    """Count one upload the user sent, whatever the model turns out to be; its attempt id (to refund
    it). Raises UploadLimitReached when the user sent `limit` uploads in the `window` before it
    already: the caller rolls back, and nothing is counted. The caller commits."""
    attempt = UploadAttempt(user_id=user_id)
    insert_counted(session, attempt)
    times = upload_attempts_since(session, user_id=user_id, since=attempt.created_at - window)
    if len(times) > limit:  # the newest is this one
        raise UploadLimitReached(frees_at=times[len(times) - 1 - limit] + window)
    assert attempt.id is not None  # flushed
    return attempt.id


def refund_upload_attempt(session: Session, *, attempt_id: int) -> None:
    """Uncount an attempt that the platform failed (not the model): it costs the user nothing. The
    caller commits."""
    session.exec(delete(UploadAttempt).where(UploadAttempt.id == attempt_id))


def upload_attempts_since(session: Session, *, user_id: int, since: datetime) -> list[datetime]:
    """When the user's uploads at or after `since` were attempted, oldest first, in UTC."""
    times = session.exec(
        select(UploadAttempt.created_at)
        .where(UploadAttempt.user_id == user_id, UploadAttempt.created_at >= since)
        .order_by(UploadAttempt.created_at)
    )
    return [as_utc(moment) for moment in times]


def insert_counted(session: Session, row: ApiToken | UploadAttempt | Challenge | Entry) -> None:
    """Adds the user's `row` (one that a per-user cap counts), then locks the user's row until the
    transaction ends: a count made next sees every row of theirs that a concurrent transaction
    added (see the module's doc)."""
    session.add(row)
    session.flush()
    lock_user(session, user_id=row.user_id)


def lock_user(session: Session, *, user_id: int) -> None:
    """Locks the user's row until the transaction ends (on SQLite, the write lock the transaction
    holds once it wrote does). FOR NO KEY UPDATE: the lock does not wait for transactions that
    merely refer to the user."""
    session.exec(select(User.id).where(User.id == user_id).with_for_update(key_share=True)).one()


def get_user_by_name(session: Session, *, name: str) -> User | None:
    return session.exec(select(User).where(User.name == name)).first()


class UnknownUser(LookupError):
    """No user has this name."""


def set_organiser(session: Session, *, name: str, organiser: bool) -> User:
    """Grants the user `name` the organiser role (or takes it back); UnknownUser when there is no
    such user. The caller commits."""
    user = get_user_by_name(session, name=name)
    if user is None:
        raise UnknownUser(f"there is no user named {name!r}")
    user.organiser = organiser
    session.add(user)
    session.flush()
    return user
