"""Pairings: booking them, the claim with a lease, heartbeats, and the sweeper's recovery (ARCHITECTURE §5).

What the columns mean in each status:
- queued: `lease_owner` is None and `lease_expires_at` is the *redelivery deadline*: a worker should
  have claimed the pairing by then, or its task message may be lost, and the sweeper sends another one
  (a duplicate message is harmless: exactly one claim succeeds).
- running: `lease_owner` names the claim (host/pid/token) and `lease_expires_at` is when the lease
  lapses unless a heartbeat renews it. `attempts` counts the claims so far.
- done, failed: `finished_at` is set and the lease is cleared.

Every state change is one conditional UPDATE, so two workers racing for a pairing cannot both win:
PostgreSQL re-checks the WHERE clause of a blocked UPDATE once the row lock frees, and SQLite runs one
writer at a time. Times are timezone-aware UTC from the worker's clock: workers need a synchronised
clock, with skew far below a lease (minutes).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, or_, update
from sqlmodel import Session, col

from arena_platform.models import Ladder, Pairing, utc_now

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
MAX_ERROR_CHARS = 2000  # the width of Pairing.error


class PairingNotFound(LookupError):
    """No pairing has this id."""


def pairing_seed(ladder_seed: int, pairing_id: int) -> int:
    """The seed of a pairing, derived from the ladder's seed and the pairing's id; in [0, 2**31)."""
    digest = hashlib.blake2b(f"{ladder_seed}:{pairing_id}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") >> 1  # 31 bits: fits PostgreSQL's integer


def create_pairings(
    session: Session, *, ladder: Ladder, pairs: Sequence[tuple[int, int]], redelivery_seconds: int
) -> list[Pairing]:
    """Queued pairings of `ladder` for the (bot_a_id, bot_b_id) `pairs`, with their seeds.

    bot_a moves first in a pairing's first game. Flushes (the seed needs the id); the caller commits,
    then sends one task message per pairing.
    """
    deadline = utc_now() + timedelta(seconds=redelivery_seconds)
    pairings = [
        Pairing(ladder_id=ladder.id, bot_a_id=a, bot_b_id=b, seed=0, lease_expires_at=deadline)
        for a, b in pairs
    ]
    session.add_all(pairings)
    session.flush()
    for pairing in pairings:
        pairing.seed = pairing_seed(ladder.seed, pairing.id)
    session.flush()
    return pairings


def get_pairing(session: Session, *, pairing_id: int) -> Pairing:
    pairing = session.get(Pairing, pairing_id)
    if pairing is None:
        raise PairingNotFound(f"pairing {pairing_id} does not exist")
    return pairing


def claim_pairing(
    session: Session,
    *,
    pairing_id: int,
    owner: str,
    lease_seconds: int,
    max_attempts: int,
    now: datetime | None = None,
) -> bool:
    """Takes the pairing for `owner` if it is queued, or running with a lapsed lease; True if won.

    A won claim sets running, the owner, a lease of `lease_seconds` and counts an attempt. A pairing
    that used up `max_attempts` is left to the sweeper, which fails it. Commits: a claim is a whole
    transaction of its own, so every other claimer sees it at once.
    """
    now = now or utc_now()
    claimable = or_(
        col(Pairing.status) == QUEUED,
        and_(col(Pairing.status) == RUNNING, col(Pairing.lease_expires_at) < now),
    )
    statement = (
        update(Pairing)
        .where(col(Pairing.id) == pairing_id, claimable, col(Pairing.attempts) < max_attempts)
        .values(
            status=RUNNING,
            lease_owner=owner,
            lease_expires_at=now + timedelta(seconds=lease_seconds),
            attempts=col(Pairing.attempts) + 1,
        )
    )
    won = session.exec(statement).rowcount == 1
    session.commit()
    return won


def renew_lease(
    session: Session, *, pairing_id: int, owner: str, lease_seconds: int, now: datetime | None = None
) -> bool:
    """Extends `owner`'s lease to `lease_seconds` from now; False if the lease was lost. Commits.

    A lapsed lease that nobody took over yet is still the owner's and is renewed.
    """
    now = now or utc_now()
    statement = (
        update(Pairing)
        .where(*_held_by(pairing_id, owner))
        .values(lease_expires_at=now + timedelta(seconds=lease_seconds))
    )
    renewed = session.exec(statement).rowcount == 1
    session.commit()
    return renewed


def release_pairing(
    session: Session, *, pairing_id: int, owner: str, error: str, redelivery_seconds: int, max_attempts: int
) -> str | None:
    """Gives back a pairing `owner` could not finish, recording `error`; the new status, or None.

    It goes back to queued (sent again by the sweeper after `redelivery_seconds`, a natural back-off)
    or, once it used up `max_attempts`, to failed. None when `owner` no longer held it. Commits.
    """
    now = utc_now()
    exhausted = col(Pairing.attempts) >= max_attempts
    for status, condition in ((FAILED, exhausted), (QUEUED, ~exhausted)):
        values = _cleared_lease(status, now, redelivery_seconds) | {"error": error[:MAX_ERROR_CHARS]}
        statement = update(Pairing).where(*_held_by(pairing_id, owner), condition).values(**values)
        if session.exec(statement).rowcount:
            session.commit()
            return status
    session.commit()
    return None


def mark_done(session: Session, *, pairing_id: int) -> bool:
    """Marks the pairing done, whoever holds it; False if it already was. Does not commit.

    Called in the transaction that records the pairing's games. A pairing the sweeper failed or
    re-queued meanwhile is still done: its games are valid, and exactly one recording wins this update.
    """
    now = utc_now()
    statement = (
        update(Pairing)
        .where(col(Pairing.id) == pairing_id, col(Pairing.status) != DONE)
        .values(status=DONE, finished_at=now, lease_owner=None, lease_expires_at=None, error=None)
    )
    return session.exec(statement).rowcount == 1


@dataclass(frozen=True)
class Sweep:
    """What one sweep did, by pairing id."""

    requeued: list[int]  # a lapsed lease: back to queued, to be sent again
    failed: list[int]  # a lapsed lease and no attempts left
    resent: list[int]  # queued past the redelivery deadline: to be sent again

    @property
    def to_send(self) -> list[int]:
        return sorted(self.requeued + self.resent)


def sweep_pairings(
    session: Session, *, lease_seconds: int, max_attempts: int, now: datetime | None = None
) -> Sweep:
    """Recovers pairings whose worker went silent and queued pairings whose message may be lost. Commits.

    The caller sends a task message for every pairing in `Sweep.to_send`; their redelivery deadline
    moves `lease_seconds` ahead, so each is sent again at most once per lease while it waits.
    """
    now = now or utc_now()
    lapsed = and_(col(Pairing.status) == RUNNING, col(Pairing.lease_expires_at) < now)
    exhausted = col(Pairing.attempts) >= max_attempts
    failed = _update_returning_ids(
        session,
        and_(lapsed, exhausted),
        _cleared_lease(FAILED, now, lease_seconds)
        | {"error": f"its worker went silent on each of {max_attempts} attempts"},
    )
    requeued = _update_returning_ids(
        session, and_(lapsed, ~exhausted), _cleared_lease(QUEUED, now, lease_seconds)
    )
    overdue = and_(col(Pairing.status) == QUEUED, col(Pairing.lease_expires_at) < now)
    resent = _update_returning_ids(
        session, overdue, {"lease_expires_at": now + timedelta(seconds=lease_seconds)}
    )
    session.commit()
    return Sweep(requeued=requeued, failed=failed, resent=resent)


def _held_by(pairing_id: int, owner: str) -> tuple:
    return col(Pairing.id) == pairing_id, col(Pairing.status) == RUNNING, col(Pairing.lease_owner) == owner


def _cleared_lease(status: str, now: datetime, redelivery_seconds: int) -> dict:
    """The column values of a pairing leaving `running` for queued (with a redelivery deadline) or failed."""
    if status == QUEUED:
        return {
            "status": QUEUED,
            "lease_owner": None,
            "lease_expires_at": now + timedelta(seconds=redelivery_seconds),
        }
    return {"status": FAILED, "lease_owner": None, "lease_expires_at": None, "finished_at": now}


def _update_returning_ids(session: Session, condition, values: dict) -> list[int]:
    statement = update(Pairing).where(condition).values(**values).returning(col(Pairing.id))
    return sorted(session.exec(statement).scalars())
