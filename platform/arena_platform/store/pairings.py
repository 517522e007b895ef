"""Pairings: booking them, the claim with a lease, heartbeats, and the sweeper's recovery (ARCHITECTURE §5).

What the columns mean in each status:
- queued: `lease_owner` is None and `lease_expires_at` says whether a task message is out: None,
  none is (it was taken back, given back, or its message was consumed without playing it), and
  the next sweep sends one; a time, one was sent, and a worker should have claimed the pairing by
  then, or its message may be lost (a duplicate message is harmless: exactly one claim succeeds).
- running: `lease_owner` names the claim ("<process>/<token>", the process being the name its
  heartbeat has in `workerbeat`) and `lease_expires_at` is when the lease lapses unless a heartbeat
  renews it.
- done, failed: `finished_at` is set and the lease is cleared. A failed pairing is not a played
  one: scheduling books the pair again.

What counts against a pairing (`attempts`): only a failure that can be traced to the pairing
itself. A claim costs nothing, and neither does a fault of the platform: a batch given back for a
PlatformFault, a worker shutting down, the database or the broker going away, a lease that lapsed
while its worker still beat. A failure of the batch itself (its worker process died, or playing it
raised an error of ours) is charged to a pairing only when it was played alone: the pairings of a
batch that failed together are charged nothing, and are marked `isolated`, so that they are sent
and played alone from then on and the next failure names its cause. A pairing that fails
`max_attempts` times alone is failed (a pairing that kills fresh workers deterministically costs
one batch death, then `max_attempts` deaths of its own; its batch-mates go on). A pairing whose
worker was killed from outside a few times is therefore played again with its own seed, not failed.

Every state change is one conditional UPDATE, so two workers racing for a pairing cannot both win:
PostgreSQL re-checks the WHERE clause of a blocked UPDATE once the row lock frees, and SQLite runs one
writer at a time. Times are timezone-aware UTC from the worker's clock: workers need a synchronised
clock, with skew far below a lease (minutes).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, literal, or_, update
from sqlmodel import Session, col, select

from arena_platform.models import Challenge, Ladder, Pairing, WorkerBeat, utc_now

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
MAX_ERROR_CHARS = 2000  # the width of Pairing.error

# A task message carries at most PAIRINGS_PER_TASK pairings (one block of the scheduler,
# SchedulePolicy.block: a bot's games batch together), and as many as its ladder plays in about
# TASK_SECONDS of a worker's time (`task_size`), at least one: a slow ladder's task holds a worker
# for one pairing, so the other ladders' messages behind it wait for one pairing, not four.
PAIRINGS_PER_TASK = 4
TASK_SECONDS = 30.0
COST_SAMPLE = 20  # a ladder's cost per pairing is the mean of this many of its latest recorded ones


class PairingNotFound(LookupError):
    """No pairing has this id."""


def pairing_seed(ladder_seed: int, pairing_id: int) -> int:
    """The seed of a pairing, derived from the ladder's seed and the pairing's id; in [0, 2**31)."""
    digest = hashlib.blake2b(f"{ladder_seed}:{pairing_id}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") >> 1  # 31 bits: fits PostgreSQL's integer


def create_pairings(
    session: Session,
    *,
    ladder: Ladder,
    pairs: Sequence[tuple[int, int]],
    redelivery_seconds: int,
    urgent: Collection[int] = (),
    challenge_id: int | None = None,
) -> list[Pairing]:
    """Queued pairings of `ladder` for the (bot_a_id, bot_b_id) `pairs`, with their seeds; those at
    the indices `urgent` are marked urgent (`most_urgent`); all of them `challenge_id`'s, if given.

    bot_a moves first in a pairing's first game. Flushes (the seed needs the id); the caller commits,
    then sends the task messages.
    """
    deadline = utc_now() + timedelta(seconds=redelivery_seconds)
    pairings = [
        Pairing(
            ladder_id=ladder.id,
            bot_a_id=a,
            bot_b_id=b,
            seed=0,
            lease_expires_at=deadline,
            urgent=index in urgent,
            challenge_id=challenge_id,
        )
        for index, (a, b) in enumerate(pairs)
    ]
    session.add_all(pairings)
    session.flush()
    for pairing in pairings:
        pairing.seed = pairing_seed(ladder.seed, pairing.id)
    session.flush()
    return pairings


def unrated_pairings() -> Any:
    """A SELECT of the ids of every unrated challenge's pairings, whose games stay out of the
    ladder's rating fit and of a bot's record against its opponents."""
    return (
        select(Pairing.id)
        .join(Challenge, col(Challenge.id) == Pairing.challenge_id)
        .where(~col(Challenge.rated))
    )


def task_size(session: Session, *, ladder_id: int) -> int:
    """How many pairings of `ladder_id` one task message carries: as many as fit in TASK_SECONDS
    at the mean `play_seconds` of its COST_SAMPLE latest recorded pairings, between 1 and
    PAIRINGS_PER_TASK; 1 while none is measured (its first task is short, and measures it)."""
    statement = (
        select(Pairing.play_seconds)
        .where(col(Pairing.ladder_id) == ladder_id, col(Pairing.play_seconds).is_not(None))
        .order_by(col(Pairing.finished_at).desc())
        .limit(COST_SAMPLE)
    )
    costs = session.exec(statement).all()
    if not costs:
        return 1
    per_pairing = sum(costs) / len(costs)
    return max(1, min(PAIRINGS_PER_TASK, int(TASK_SECONDS / max(per_pairing, 1e-9))))


def most_urgent(session: Session, *, instead_of: Sequence[int]) -> list[int]:
    """The pairings a task sent for `instead_of` plays in their place, oldest first; none when one
    of `instead_of` is itself queued and urgent, or when no urgent pairing is queued.

    An urgent pairing (a newcomer's introduction, a running SPRT's) jumps the messages of the round
    in progress: the next task of any worker plays it. They are the oldest queued urgent pairing
    that may be played in a batch (not isolated) and the queued urgent ones of its ladder that share
    a bot with it (a newcomer's round robin, a SPRT's pairs), at most its ladder's `task_size`.
    """
    queued_urgent = and_(col(Pairing.status) == QUEUED, col(Pairing.urgent))
    own = select(Pairing.id).where(col(Pairing.id).in_(list(instead_of)), queued_urgent)
    if session.exec(own).first() is not None:
        return []
    batchable = and_(queued_urgent, ~col(Pairing.isolated))
    first = session.exec(select(Pairing).where(batchable).order_by(col(Pairing.id)).limit(1)).first()
    if first is None:
        return []
    bots = [first.bot_a_id, first.bot_b_id]
    sharing = or_(col(Pairing.bot_a_id).in_(bots), col(Pairing.bot_b_id).in_(bots))
    statement = (
        select(Pairing.id)
        .where(batchable, col(Pairing.ladder_id) == first.ladder_id, sharing)
        .order_by(col(Pairing.id))
        .limit(task_size(session, ladder_id=first.ladder_id))
    )
    return list(session.exec(statement).all())


def urgent_ladders(session: Session, *, pairing_ids: Collection[int]) -> list[int]:
    """The ladders of the urgent pairings among `pairing_ids`, each once, by id."""
    urgent = col(Pairing.id).in_(list(pairing_ids)), col(Pairing.urgent)
    statement = select(Pairing.ladder_id).where(*urgent).distinct()
    return sorted(session.exec(statement).all())


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
    alone: bool = True,
    now: datetime | None = None,
) -> bool:
    """Takes the pairing for `owner` if it is queued, or running with a lapsed lease; True if won.

    A won claim sets running, the owner and a lease of `lease_seconds`; it costs no attempt (see the
    module's docstring). A pairing that used up `max_attempts` is not claimed, nor an isolated one
    unless it is to be played `alone` (a message of several, such as a batch redelivered after its
    worker died, leaves it to its own message). Commits: a claim is a whole transaction of its own,
    so every other claimer sees it at once.
    """
    now = now or utc_now()
    claimable = or_(
        col(Pairing.status) == QUEUED,
        and_(col(Pairing.status) == RUNNING, col(Pairing.lease_expires_at) < now),
    )
    playable = literal(True) if alone else ~col(Pairing.isolated)
    statement = (
        update(Pairing)
        .where(col(Pairing.id) == pairing_id, claimable, playable, col(Pairing.attempts) < max_attempts)
        .values(
            status=RUNNING,
            lease_owner=owner,
            lease_expires_at=now + timedelta(seconds=lease_seconds),
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
    session: Session, *, pairing_id: int, owner: str, error: str, max_attempts: int, charge: bool
) -> str | None:
    """Gives back a pairing `owner` could not finish, recording `error`; the new status, or None
    when `owner` no longer held it. Commits.

    Without `charge` (a fault of the platform) it is queued again as it was. With `charge` (an error
    raised while playing it) the failure counts against it as the module's docstring says: queued,
    or failed once out of attempts. Either way no message is out for it: the next sweep sends one.
    """
    requeued, failed = _take_back(
        session,
        and_(*_held_by(pairing_id, owner)),
        now=utc_now(),
        error=error,
        max_attempts=max_attempts,
        charge=charge,
    )
    session.commit()
    return QUEUED if requeued else FAILED if failed else None


def mark_done(session: Session, *, pairing_id: int, play_seconds: float | None = None) -> bool:
    """Marks the pairing done, whoever holds it, with what it cost (`Pairing.play_seconds`); False
    if it already was. Does not commit.

    Called in the transaction that records the pairing's games. A pairing the sweeper failed or
    re-queued meanwhile is still done: its games are valid, and exactly one recording wins this update.
    """
    now = utc_now()
    done = {"status": DONE, "finished_at": now, "lease_owner": None, "lease_expires_at": None, "error": None}
    statement = (
        update(Pairing)
        .where(col(Pairing.id) == pairing_id, col(Pairing.status) != DONE)
        .values(**done, play_seconds=play_seconds)
    )
    return session.exec(statement).rowcount == 1


@dataclass(frozen=True)
class Sweep:
    """What one sweep did, by pairing id."""

    requeued: list[int]  # taken back from a dead or silent worker: back to queued, to be sent again
    failed: list[int]  # taken back from a dead worker, out of attempts
    resent: list[int]  # queued with no message out, or one that is probably lost: to be sent again

    @property
    def to_send(self) -> list[int]:
        return sorted(self.requeued + self.resent)


def sweep_pairings(
    session: Session,
    *,
    dead_owners: Sequence[str] = (),
    max_attempts: int,
    now: datetime | None = None,
    resend_overdue: bool = True,
    waiting: Collection[int] = (),
    resend_all_queued: bool = False,
) -> Sweep:
    """Takes back the pairings of dead and silent workers, and finds the queued ones to send. Commits.

    `dead_owners` are claims whose worker process is known dead (its heartbeat stopped): their
    pairings come back at once, the failure charged as the module's docstring says. A lapsed lease
    is taken back uncharged (its worker may be alive, cut from the database). Every queued pairing
    with no message out is to be sent; with `resend_overdue`, so is every one past its redelivery
    deadline that no message `waiting` in the broker's queue names (so its message is lost: taken by
    a worker that died or was cut off, or gone with the broker's data); with `resend_all_queued`
    (the broker lost its messages) every queued one. The caller sends `Sweep.to_send` and then calls
    `mark_sent`, which moves the deadline a lease ahead: a pairing is resent at most once while its
    message waits, and once per lease while it is lost. What is not marked sent is sent again by
    the next sweep.
    """
    now = now or utc_now()
    theirs = and_(col(Pairing.status) == RUNNING, col(Pairing.lease_owner).in_(list(dead_owners)))
    error = "its worker process died (its heartbeat stopped)"
    requeued, failed = _take_back(
        session, theirs, now=now, error=error, max_attempts=max_attempts, charge=True
    )
    lapsed = and_(col(Pairing.status) == RUNNING, col(Pairing.lease_expires_at) < now)
    error = "its worker went silent until its lease lapsed"
    silent, _ = _take_back(session, lapsed, now=now, error=error, max_attempts=max_attempts, charge=False)
    unsent = col(Pairing.lease_expires_at).is_(None)
    overdue = col(Pairing.lease_expires_at) < now if resend_overdue else literal(False)
    due = literal(True) if resend_all_queued else or_(unsent, overdue)
    statement = select(Pairing.id, Pairing.lease_expires_at).where(col(Pairing.status) == QUEUED, due)
    taken = set(requeued + silent)
    lost = {
        pairing_id
        for pairing_id, deadline in session.exec(statement).all()
        if resend_all_queued or deadline is None or pairing_id not in waiting
    }
    resent = sorted(lost - taken)
    session.commit()
    return Sweep(requeued=sorted(taken), failed=failed, resent=resent)


def mark_sent(session: Session, *, pairing_ids: Sequence[int], redelivery_seconds: int) -> None:
    """Records that a task message for the still queued `pairing_ids` went out now: each is due
    again, as probably lost, `redelivery_seconds` from now. Commits."""
    deadline = utc_now() + timedelta(seconds=redelivery_seconds)
    statement = (
        update(Pairing)
        .where(col(Pairing.id).in_(list(pairing_ids)), col(Pairing.status) == QUEUED)
        .values(lease_expires_at=deadline)
    )
    session.exec(statement)
    session.commit()


def running_owners(session: Session) -> list[str]:
    """The lease owners of the running pairings, each once."""
    statement = select(Pairing.lease_owner).where(col(Pairing.status) == RUNNING).distinct()
    return sorted(owner for owner in session.exec(statement).all() if owner)


def _take_back(
    session: Session, running, *, now: datetime, error: str, max_attempts: int, charge: bool
) -> tuple[list[int], list[int]]:
    """Queues the `running` pairings again with no message out, recording `error`; their ids
    (requeued, failed). With `charge` the failure counts against an isolated pairing (one played
    alone), which fails once out of attempts, and isolates the others."""
    cleared = {
        "status": QUEUED,
        "lease_owner": None,
        "lease_expires_at": None,
        "error": error[:MAX_ERROR_CHARS],
    }
    if not charge:
        return _update_returning_ids(session, running, cleared), []
    isolated = col(Pairing.isolated)
    last = col(Pairing.attempts) + 1 >= max_attempts
    failed = _update_returning_ids(
        session,
        and_(running, isolated, last),
        cleared
        | {"status": FAILED, "finished_at": now, "attempts": col(Pairing.attempts) + 1}
        | {"error": f"failed {max_attempts} times while played alone; last: {error}"[:MAX_ERROR_CHARS]},
    )
    charged = _update_returning_ids(
        session, and_(running, isolated, ~last), cleared | {"attempts": col(Pairing.attempts) + 1}
    )
    newly_isolated = _update_returning_ids(session, and_(running, ~isolated), cleared | {"isolated": True})
    return sorted(charged + newly_isolated), failed


def _held_by(pairing_id: int, owner: str) -> tuple:
    return col(Pairing.id) == pairing_id, col(Pairing.status) == RUNNING, col(Pairing.lease_owner) == owner


def _update_returning_ids(session: Session, condition, values: dict) -> list[int]:
    statement = update(Pairing).where(condition).values(**values).returning(col(Pairing.id))
    return sorted(session.exec(statement).scalars())


# --- Worker liveness (arena_workers.liveness) ----------------------------------------------------


def silent_workers(session: Session, *, since: datetime) -> set[str]:
    """The names of the worker processes whose last heartbeat came before `since`."""
    return set(session.exec(select(WorkerBeat.name).where(col(WorkerBeat.last_seen) < since)).all())


def forget_silent_workers(session: Session, *, before: datetime) -> None:
    """Deletes the heartbeats of the processes silent since before `before` (long dead: whatever they
    held was taken back). Commits."""
    session.exec(delete(WorkerBeat).where(col(WorkerBeat.last_seen) < before))
    session.commit()
