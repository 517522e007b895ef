"""Pairings: booking them, the claim with a lease, heartbeats, and the sweeper's recovery (ARCHITECTURE §5).

What the columns mean in each status:
- queued: `lease_owner` is None and `lease_expires_at` is the *redelivery deadline*: a worker should
  have claimed the pairing by then, or its task message may be lost, and the sweeper sends another one
  (a duplicate message is harmless: exactly one claim succeeds).
- running: `lease_owner` names the claim (host/pid/token) and `lease_expires_at` is when the lease
  lapses unless a heartbeat renews it. `attempts` counts the claims that may have been the
  pairing's own fault: a claim given back for a fault of the platform (`release_pairing` with
  `refund`) is not counted.
- done, failed: `finished_at` is set and the lease is cleared. A failed pairing (its workers went
  silent `max_attempts` times) is not a played one: scheduling books the pair again.

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

from sqlalchemy import and_, literal, or_, update
from sqlmodel import Session, col, select

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

    A lease that lapsed is lost even while nobody has taken it over yet: its owner was silent (a
    paused or partitioned worker), and the sweeper may give the pairing to another worker at any
    moment, so renewing it afterwards would let two workers hold it at once.
    """
    now = now or utc_now()
    statement = (
        update(Pairing)
        .where(*_held_by(pairing_id, owner), col(Pairing.lease_expires_at) >= now)
        .values(lease_expires_at=now + timedelta(seconds=lease_seconds))
    )
    renewed = session.exec(statement).rowcount == 1
    session.commit()
    return renewed


def release_pairing(
    session: Session,
    *,
    pairing_id: int,
    owner: str,
    error: str,
    redelivery_seconds: int,
    max_attempts: int,
    refund: bool = False,
) -> str | None:
    """Gives back a pairing `owner` could not finish, recording `error`; the new status, or None.

    It goes back to queued (sent again by the sweeper after `redelivery_seconds`) or, once it used
    up `max_attempts`, to failed. With `refund` (the platform failed, not the pairing) the claim's
    attempt is given back too, and the pairing is always queued again. None when `owner` no longer
    held it. Commits.
    """
    now = utc_now()
    attempts = col(Pairing.attempts) - 1 if refund else col(Pairing.attempts)
    exhausted = literal(False) if refund else col(Pairing.attempts) >= max_attempts
    for status, condition in ((FAILED, exhausted), (QUEUED, ~exhausted)):
        values = _cleared_lease(status, now, redelivery_seconds) | {"error": error[:MAX_ERROR_CHARS]}
        statement = (
            update(Pairing).where(*_held_by(pairing_id, owner), condition).values(attempts=attempts, **values)
        )
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
    session: Session,
    *,
    lease_seconds: int,
    max_attempts: int,
    now: datetime | None = None,
    resend_all_queued: bool = False,
) -> Sweep:
    """Recovers pairings whose worker went silent and queued pairings whose message may be lost. Commits.

    The caller sends a task message for every pairing in `Sweep.to_send`; their redelivery deadline
    moves `lease_seconds` ahead, so each is sent again at most once per lease while it waits.
    `resend_all_queued` resends every queued pairing, due or not (after a broker lost its messages).
    """
    now = now or utc_now()
    lapsed = and_(col(Pairing.status) == RUNNING, col(Pairing.lease_expires_at) < now)
    requeued, failed = _take_back(
        session, lapsed, now=now, lease_seconds=lease_seconds, max_attempts=max_attempts
    )
    overdue = and_(
        col(Pairing.status) == QUEUED,
        literal(True) if resend_all_queued else col(Pairing.lease_expires_at) < now,
    )
    resent = _update_returning_ids(
        session, overdue, {"lease_expires_at": now + timedelta(seconds=lease_seconds)}
    )
    session.commit()
    return Sweep(requeued=requeued, failed=failed, resent=resent)


def running_owners(session: Session) -> list[str]:
    """The lease owners of the running pairings, each once."""
    statement = select(Pairing.lease_owner).where(col(Pairing.status) == RUNNING).distinct()
    return sorted(owner for owner in session.exec(statement).all() if owner)


def requeue_owned(session: Session, *, owners: Sequence[str], max_attempts: int, lease_seconds: int) -> Sweep:
    """Takes the running pairings of `owners` (workers known to be dead) back at once, as the sweep
    does with a lapsed lease, without waiting for their leases to lapse. Commits."""
    theirs = and_(col(Pairing.status) == RUNNING, col(Pairing.lease_owner).in_(list(owners)))
    requeued, failed = _take_back(
        session, theirs, now=utc_now(), lease_seconds=lease_seconds, max_attempts=max_attempts
    )
    session.commit()
    return Sweep(requeued=requeued, failed=failed, resent=[])


def _take_back(
    session: Session, running, *, now: datetime, lease_seconds: int, max_attempts: int
) -> tuple[list[int], list[int]]:
    """Requeues the `running` pairings, or fails those out of attempts; their ids (requeued,
    failed). The caller sends the requeued ones now: their redelivery deadline is a lease ahead."""
    exhausted = col(Pairing.attempts) >= max_attempts
    failed = _update_returning_ids(
        session,
        and_(running, exhausted),
        _cleared_lease(FAILED, now, lease_seconds)
        | {"error": f"its worker went silent on each of {max_attempts} attempts"},
    )
    requeued = _update_returning_ids(
        session, and_(running, ~exhausted), _cleared_lease(QUEUED, now, lease_seconds)
    )
    return requeued, failed


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
