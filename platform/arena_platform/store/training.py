"""Training sessions: a user's training run as platform work, its checkpoints entering the ladder.

A session is queued on creation and played by a worker of the `training` queue
(arena_workers.training) one generation at a time. Like a pairing (store.pairings) it is claimed
with a conditional update and a lease that the worker's heartbeats renew; the sweeper sends a
queued session again when its message may be lost, and puts back a running one whose worker went
silent (`sweep_sessions`). What a generation made is saved in one transaction (`save_generation`):
the resume point's blob key, the counters, and the checkpoint when one is due, entered into the
game's ladder as the next version of the session's bot. A checkpoint is unique per (session,
generation), so a generation played again after a worker died never enters twice.

Checkpoints play no SPRT against the previous version (an upload does, store.bots): a session's
checkpoints are measured by their ladder ratings, the previous one staying active beside the new
one (so they meet in its introduction) until the next checkpoint retires it.

Owner actions: `pause` (a running session stops after its generation), `resume` (a paused or
failed session is queued again, from its last saved generation) and `cancel`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import update
from sqlmodel import Session, col, or_, select

from arena_bots.manifest import Manifest
from arena_platform.models import (
    Bot,
    Rating,
    TrainingCheckpoint,
    TrainingSession,
    User,
    WorkerBeat,
    utc_now,
)
from arena_platform.queue import TRAINING_QUEUE
from arena_platform.store import bots
from arena_platform.store.reads import UtcDatetime

QUEUED, RUNNING, PAUSED, FINISHED, FAILED, CANCELLED = (
    "queued",
    "running",
    "paused",
    "finished",
    "failed",
    "cancelled",
)
# The games each kit builds a network for: alphazero one (C, H, W) board with flat extras and one
# action head (arena_bots.training.networks.build_network), actor-critic seed 003's Smash net, dqn
# seed 002's Coders Strike Back Q-nets (runner, then blocker).
KIT_GAMES = {"alphazero": ("bobail", "pente", "spring2021"), "actor-critic": ("smash",), "dqn": ("csb",)}
KITS = tuple(KIT_GAMES)  # the kits the training workers run (arena_workers.training)
LIVE = (QUEUED, RUNNING)  # what counts against a user's sessions at once
ENDED = (FINISHED, FAILED, CANCELLED)


class SessionStateError(ValueError):
    """The session's status does not allow what was asked (resume a running session...)."""


class LossPoint(BaseModel):
    step: int  # gradient steps so far
    # The generation's mean losses. policy: cross-entropy (alphazero), V-trace's policy gradient
    # (actor-critic), None (dqn: no policy head). value: MSE (to the V-trace targets for
    # actor-critic), the mean |TD error| for dqn.
    policy: float | None
    value: float


class Progress(BaseModel):
    """A session's counters, over all its workers."""

    generation: int = 0
    step: int = 0  # gradient steps
    games: int = 0  # self-play games
    positions: int = 0
    elapsed_seconds: float = 0.0  # training time so far (what the time limit counts)
    losses: list[LossPoint] = Field(default_factory=list)  # one point per generation


class CheckpointView(BaseModel):
    """A checkpoint and its ladder rating (None until it played), with the 95% interval."""

    generation: int
    step: int
    games: int
    bot_id: int | None  # None: its validation refused it (`error`)
    version: int | None
    error: str | None
    rating: float | None
    low: float | None
    high: float | None
    rated_games: int
    created_at: UtcDatetime


class TrainingSummary(BaseModel):
    id: int
    owner: str
    game: str
    kit: str
    bot_name: str
    base_bot_id: int | None
    status: str  # queued | running | paused | finished | failed | cancelled
    settings: dict[str, Any]  # what was asked: episodes, time limit, network, seed...
    progress: Progress
    error: str | None
    created_at: UtcDatetime
    finished_at: UtcDatetime | None


class TrainingDetail(TrainingSummary):
    checkpoints: list[CheckpointView]


def create_session(
    session: Session,
    *,
    owner_id: int,
    game: str,
    kit: str,
    bot_name: str,
    settings: dict[str, Any],
    base_bot_id: int | None = None,
) -> TrainingSession:
    """A queued session, due to be sent at once. Flushes; the caller commits."""
    row = TrainingSession(
        owner_id=owner_id,
        game=game,
        kit=kit,
        bot_name=bot_name,
        base_bot_id=base_bot_id,
        settings=settings,
        progress=Progress().model_dump(),
        lease_expires_at=utc_now(),
    )
    session.add(row)
    session.flush()
    return row


def live_sessions(session: Session, *, owner_id: int) -> int:
    """How many of the user's sessions are queued or running."""
    statement = select(TrainingSession.id).where(
        col(TrainingSession.owner_id) == owner_id, col(TrainingSession.status).in_(LIVE)
    )
    return len(session.exec(statement).all())


def get_session(session: Session, *, session_id: int) -> TrainingSession | None:
    return session.get(TrainingSession, session_id)


def list_sessions(
    session: Session, *, owner_id: int, limit: int = 100, offset: int = 0
) -> list[TrainingSummary]:
    """The user's sessions, newest first."""
    rows = session.exec(
        select(TrainingSession, User.name)
        .join(User, User.id == TrainingSession.owner_id)
        .where(col(TrainingSession.owner_id) == owner_id)
        .order_by(col(TrainingSession.id).desc())
        .offset(offset)
        .limit(limit)
    )
    return [_summary(row, owner) for row, owner in rows]


def describe_session(session: Session, *, session_id: int) -> TrainingDetail | None:
    """The session with its checkpoints (oldest first) and their current ladder ratings."""
    row = session.get(TrainingSession, session_id)
    if row is None:
        return None
    owner = session.get(User, row.owner_id)
    statement = (
        select(TrainingCheckpoint, Bot.version, Rating)
        .outerjoin(Bot, Bot.id == TrainingCheckpoint.bot_id)
        .outerjoin(Rating, (Rating.bot_id == Bot.id) & (Rating.ladder_id == Bot.ladder_id))
        .where(col(TrainingCheckpoint.session_id) == session_id)
        .order_by(TrainingCheckpoint.generation)
    )
    checkpoints = [
        CheckpointView(
            generation=checkpoint.generation,
            step=checkpoint.step,
            games=checkpoint.games,
            bot_id=checkpoint.bot_id,
            version=version,
            error=checkpoint.error,
            rating=None if rating is None else rating.rating,
            low=None if rating is None else rating.low,
            high=None if rating is None else rating.high,
            rated_games=0 if rating is None else rating.games,
            created_at=checkpoint.created_at,
        )
        for checkpoint, version, rating in session.exec(statement)
    ]
    return TrainingDetail(**_summary(row, owner.name).model_dump(), checkpoints=checkpoints)


def checkpoint_of_bot(session: Session, *, bot_id: int) -> TrainingCheckpoint | None:
    """The training checkpoint that is `bot_id` (its session; what a fine-tune starts from), if any."""
    return session.exec(select(TrainingCheckpoint).where(col(TrainingCheckpoint.bot_id) == bot_id)).first()


# --- Owner actions -------------------------------------------------------------------------------


def pause(session: Session, *, row: TrainingSession) -> TrainingSession:
    """A queued or running session pauses (a running one after its current generation). Commits."""
    return _move(session, row, {QUEUED, RUNNING, PAUSED}, PAUSED)


def cancel(session: Session, *, row: TrainingSession) -> TrainingSession:
    """A session that has not ended is cancelled; its checkpoints stay on the ladder. Commits."""
    return _move(session, row, {QUEUED, RUNNING, PAUSED, CANCELLED}, CANCELLED)


def resume(session: Session, *, row: TrainingSession) -> TrainingSession:
    """A paused or failed session is queued again, to go on from its last saved generation; the
    caller sends it. Commits."""
    return _move(session, row, {PAUSED, FAILED}, QUEUED)


def _move(session: Session, row: TrainingSession, allowed: set[str], status: str) -> TrainingSession:
    session.refresh(row, with_for_update=True)
    if row.status not in allowed:
        raise SessionStateError(f"training session {row.id} is {row.status}: it cannot be {_verb(status)}")
    row.status = status
    if status == QUEUED:
        row.attempts, row.error, row.finished_at, row.lease_expires_at = 0, None, None, utc_now()
    elif status == CANCELLED:
        row.finished_at = row.finished_at or utc_now()
    session.add(row)
    session.commit()
    return row


def _verb(status: str) -> str:
    return {PAUSED: "paused", CANCELLED: "cancelled", QUEUED: "resumed"}[status]


# --- The worker's side ---------------------------------------------------------------------------


def claim_session(
    session: Session, *, session_id: int, owner: str, lease_seconds: int, max_attempts: int
) -> TrainingSession | None:
    """Claims a queued session (or a running one whose lease lapsed) for `owner`; the session, or
    None when it is not to be run here (ended, paused, or held elsewhere). A session claimed more
    than `max_attempts` times without saving a generation fails instead. Commits."""
    now = utc_now()
    claimable = or_(
        col(TrainingSession.status) == QUEUED,
        (col(TrainingSession.status) == RUNNING) & (col(TrainingSession.lease_expires_at) < now),
    )
    claimed = session.exec(
        update(TrainingSession)
        .where(col(TrainingSession.id) == session_id, claimable)
        .values(
            status=RUNNING,
            lease_owner=owner,
            lease_expires_at=now + timedelta(seconds=lease_seconds),
            attempts=TrainingSession.attempts + 1,
        )
    )
    session.commit()
    if claimed.rowcount != 1:
        return None
    row = session.get(TrainingSession, session_id, populate_existing=True)
    if row.attempts > max_attempts:
        finish(session, session_id=session_id, owner=owner, status=FAILED, error=_too_many(row.attempts - 1))
        return None
    return row


def _too_many(attempts: int) -> str:
    return f"its worker stopped {attempts} times during one generation (killed, or out of memory?)"


def renew_session_lease(session: Session, *, session_id: int, owner: str, lease_seconds: int) -> str | None:
    """Extends `owner`'s lease; the session's status, or None when the lease is no longer theirs.
    A session resumed (queued) while its worker still runs is simply taken on. Commits."""
    row = session.get(TrainingSession, session_id, populate_existing=True, with_for_update=True)
    if row is None or row.lease_owner != owner:
        session.rollback()
        return None
    row.lease_expires_at = utc_now() + timedelta(seconds=lease_seconds)
    if row.status == QUEUED:
        row.status = RUNNING
    session.add(row)
    session.commit()
    return row.status


def save_generation(
    session: Session,
    *,
    session_id: int,
    owner: str,
    state_sha256: str,
    progress: Progress,
    checkpoint: TrainingCheckpoint | None = None,
    manifest: Manifest | None = None,
    report: dict[str, Any] | None = None,
    model_sha256: str | None = None,
    ladder_id: int | None = None,
) -> tuple[bool, int | None]:
    """Saves a finished generation while `owner` holds the session: its resume point, its counters
    and, when given, its checkpoint, entered into `ladder_id` as the next version of the session's
    bot (from `manifest`, `report` and `model_sha256`) unless its validation refused it
    (`checkpoint.error`). One transaction. Returns (saved, the new bot's id or None). Commits."""
    row = session.get(TrainingSession, session_id, populate_existing=True, with_for_update=True)
    if row is None or row.lease_owner != owner:
        session.rollback()
        return False, None
    row.state_sha256, row.progress, row.attempts = state_sha256, progress.model_dump(), 0
    session.add(row)
    bot_id = None
    if checkpoint is not None and not _has_checkpoint(session, session_id, checkpoint.generation):
        if checkpoint.error is None:
            bot = bots.create_network_bot(
                session,
                ladder_id=ladder_id,
                owner_id=row.owner_id,
                manifest=manifest,
                report=report,
                model_sha256=model_sha256,
                checkpoint=True,
            )
            checkpoint.bot_id = bot_id = bot.id
        session.add(checkpoint)
    session.commit()
    return True, bot_id


def drop_ended_states(session: Session) -> list[str]:
    """Clears the resume points of finished and cancelled sessions (nothing resumes them) and
    returns their blob keys, for the caller to delete those no session holds. Commits."""
    ended = col(TrainingSession.status).in_((FINISHED, CANCELLED))
    keys = list(
        session.exec(
            select(TrainingSession.state_sha256).where(ended, col(TrainingSession.state_sha256).is_not(None))
        )
    )
    if keys:
        session.exec(
            update(TrainingSession)
            .where(ended, col(TrainingSession.state_sha256).in_(keys))
            .values(state_sha256=None)
        )
    session.commit()
    return keys


def holds_state(session: Session, *, state_sha256: str) -> bool:
    """Whether some session's resume point is the blob `state_sha256`."""
    statement = select(TrainingSession.id).where(col(TrainingSession.state_sha256) == state_sha256)
    return session.exec(statement).first() is not None


def _has_checkpoint(session: Session, session_id: int, generation: int) -> bool:
    statement = select(TrainingCheckpoint.id).where(
        col(TrainingCheckpoint.session_id) == session_id, col(TrainingCheckpoint.generation) == generation
    )
    return session.exec(statement).first() is not None


def finish(
    session: Session,
    *,
    session_id: int,
    owner: str,
    status: str,
    error: str | None = None,
    redelivery_seconds: float = 0.0,
) -> bool:
    """`owner` gives the session up: ended (finished or failed, with `error`) or back in the queue
    (queued, due in `redelivery_seconds`: a worker's time slice is over); any other `status` (the
    worker stopped for its owner's pause or cancel) leaves the status as the owner set it, which
    also stands over the worker's. A session resumed while its worker was stopping stays queued,
    due at once. Only while `owner` holds it; True if so. Commits."""
    row = session.get(TrainingSession, session_id, populate_existing=True, with_for_update=True)
    if row is None or row.lease_owner != owner:
        session.rollback()
        return False
    row.lease_owner = None
    if status in (QUEUED, FINISHED, FAILED) and row.status in (RUNNING, QUEUED):
        row.status = status
        row.error = error[:2000] if error else None
        if status in ENDED:
            row.finished_at = utc_now()
    row.lease_expires_at = utc_now() + timedelta(seconds=redelivery_seconds) if row.status == QUEUED else None
    session.add(row)
    session.commit()
    return True


def sweep_sessions(
    session: Session, *, lease_seconds: int, resend_all_queued: bool = False, dead_owners: Sequence[str] = ()
) -> list[int]:
    """The sessions to send again: running ones whose worker went silent (its lease lapsed, or its
    owner is in `dead_owners`, workers known to be dead) put back in the queue, keeping their
    attempts, and queued ones whose message may be lost (their due time passed; all of them with
    `resend_all_queued`), each due again a lease later. Commits."""
    now = utc_now()
    lapsed = col(TrainingSession.lease_expires_at) < now
    silent = lapsed | col(TrainingSession.lease_owner).in_(list(dead_owners))
    queued = col(TrainingSession.status) == QUEUED
    statement = select(TrainingSession).where(
        or_(
            queued if resend_all_queued else queued & lapsed,
            (col(TrainingSession.status) == RUNNING) & silent,
        )
    )
    rows = list(session.exec(statement.with_for_update(skip_locked=True)))
    for row in rows:
        row.status, row.lease_owner = QUEUED, None
        row.lease_expires_at = now + timedelta(seconds=lease_seconds)
        session.add(row)
    session.commit()
    return [row.id for row in rows]


def running_session_owners(session: Session) -> list[str]:
    """The lease owners of the running sessions, each once."""
    statement = select(TrainingSession.lease_owner).where(col(TrainingSession.status) == RUNNING).distinct()
    return sorted(owner for owner in session.exec(statement).all() if owner)


# --- Training workers ----------------------------------------------------------------------------


def beat_worker(session: Session, *, name: str, queues: str) -> None:
    """Records that the worker `name`, consuming `queues`, is alive now. Commits."""
    row = session.get(WorkerBeat, name) or WorkerBeat(name=name, queues=queues)
    row.queues, row.last_seen = queues, utc_now()
    session.add(row)
    session.commit()


def forget_worker(session: Session, *, name: str) -> None:
    """A worker shutting down says so, so the API stops counting on it at once. Commits."""
    row = session.get(WorkerBeat, name)
    if row is not None:
        session.delete(row)
    session.commit()


def training_workers(session: Session, *, since: datetime) -> int:
    """How many workers consuming the training queue beat since `since`."""
    rows = session.exec(select(WorkerBeat.queues).where(col(WorkerBeat.last_seen) >= since))
    return sum(TRAINING_QUEUE in queues.split(",") for queues in rows)


def _summary(row: TrainingSession, owner: str) -> TrainingSummary:
    return TrainingSummary(
        id=row.id,
        owner=owner,
        game=row.game,
        kit=row.kit,
        bot_name=row.bot_name,
        base_bot_id=row.base_bot_id,
        status=row.status,
        settings=row.settings,
        progress=Progress.model_validate(row.progress),
        error=row.error,
        created_at=row.created_at,
        finished_at=row.finished_at,
    )
