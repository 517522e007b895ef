"""Games in progress (issue 25.4): what a worker writes while it plays a pairing, for viewers.

The database is the truth, and a game in progress is kept there too, in its own two tables
(ARCHITECTURE §5, "Games in progress"): `live_game`, one row per game of a claimed pairing (its
replay header, how many steps are written, its result once over) and `live_step`, one row per step
(appended, never rewritten). So a viewer of the embedded platform (SQLite, no Redis) and of a
deployment (PostgreSQL, Celery workers) reads the same rows through the same code.

A row is shown only while the claim that wrote it holds the pairing's lease (status running, the
same lease owner, the lease not lapsed): a worker that dies or gives its pairings back leaves
nothing "in progress" once its lease is gone, even before the sweeper deletes the rows
(`drop_stale`). Recording the pairing deletes its rows in the same transaction
(`store.results.record_pairing`), so a game is either in progress or recorded, never both or neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import and_, bindparam, delete, exists, insert, update
from sqlalchemy.orm import aliased
from sqlmodel import Session, col, select

from arena_platform.models import Bot, GameRecord, LiveGame, LiveStep, Pairing, utc_now
from arena_platform.store.pairings import RUNNING
from arena_platform.store.reads import BotRef, UtcDatetime

MAX_LISTED = 100  # games in progress listed per ladder (a ladder has a few per worker)


@dataclass(frozen=True)
class NewLiveGame:
    """A game a claim starts to play: its pairing and index, the bots by seat and its replay
    header (`Replay.to_dict()` without `steps`)."""

    pairing_id: int
    index: int
    ladder_id: int
    first_bot_id: int
    second_bot_id: int
    header: dict[str, Any]


@dataclass(frozen=True)
class LiveProgress:
    """What a game played since its last write: `steps` (replay step JSON) from ply `first_ply`,
    and its replay's `result` JSON once it is over (None while it is played)."""

    live_game_id: int
    first_ply: int
    steps: Sequence[dict[str, Any]]
    result: dict[str, Any] | None = None


class LiveGameSummary(BaseModel):
    """A game in progress as a ladder lists it."""

    pairing_id: int
    index: int  # the game's index in its pairing
    seats: list[BotRef]  # who plays, by seat
    ply: int  # steps played so far (the opening's included)
    over: bool  # the game ended; it is recorded with the rest of its pairing's batch
    started_at: UtcDatetime
    updated_at: UtcDatetime


@dataclass(frozen=True)
class HeldGame:
    """A game in progress with every step written so far (replay step JSON, ply by ply)."""

    row: LiveGame
    seats: list[BotRef]
    steps: list[dict[str, Any]]


def open_games(session: Session, *, owner: str, games: Sequence[NewLiveGame]) -> list[int]:
    """Creates the rows of the games the claim `owner` starts to play; their ids, in order. Commits."""
    now = utc_now()
    rows = [LiveGame(owner=owner, started_at=now, updated_at=now, **vars(game)) for game in games]
    session.add_all(rows)
    session.commit()
    return [row.id for row in rows]


def add_progress(session: Session, *, progress: Sequence[LiveProgress]) -> None:
    """Appends the games' new steps and sets the results of those over, in one transaction. Commits.

    Two statements for the whole batch (an executemany each, in Core: ORM statements per game cost
    about 3 ms of CPU a write for eight games), and one per game that ended."""
    connection, games = session.connection(), LiveGame.__table__
    steps = [
        {"live_game_id": game.live_game_id, "ply": game.first_ply + offset, "step": step}
        for game in progress
        for offset, step in enumerate(game.steps)
    ]
    if steps:
        connection.execute(insert(LiveStep.__table__), steps)
    if progress:
        moved = update(games).where(games.c.id == bindparam("live_id"))
        written = [
            {"live_id": game.live_game_id, "written": game.first_ply + len(game.steps)} for game in progress
        ]
        connection.execute(moved.values(steps=bindparam("written"), updated_at=utc_now()), written)
    for game in progress:
        if game.result is not None:
            connection.execute(
                update(games).where(games.c.id == game.live_game_id).values(result=game.result)
            )
    session.commit()


def ladder_games(session: Session, *, ladder_id: int, now: datetime | None = None) -> list[LiveGameSummary]:
    """The ladder's games in progress, oldest first (at most MAX_LISTED)."""
    statement = _held_games(now or utc_now()).where(col(LiveGame.ladder_id) == ladder_id)
    rows = session.exec(statement.order_by(LiveGame.started_at, LiveGame.id).limit(MAX_LISTED)).all()
    return [
        LiveGameSummary(
            pairing_id=row.pairing_id,
            index=row.index,
            seats=[_ref(first), _ref(second)],
            ply=row.steps,
            over=row.result is not None,
            started_at=row.started_at,
            updated_at=row.updated_at,
        )
        for row, first, second in rows
    ]


def held_game(
    session: Session, *, pairing_id: int, index: int, now: datetime | None = None
) -> HeldGame | None:
    """Game `index` of the pairing as its current claim played it so far; None when no claim that
    holds the pairing wrote it (the pairing is queued, recorded, given back, or unknown)."""
    statement = _held_games(now or utc_now()).where(
        col(LiveGame.pairing_id) == pairing_id, col(LiveGame.index) == index
    )
    found = session.exec(statement).first()
    if found is None:
        return None
    row, first, second = found
    steps = session.exec(
        select(LiveStep.step).where(col(LiveStep.live_game_id) == row.id).order_by(LiveStep.ply)
    ).all()
    return HeldGame(row=row, seats=[_ref(first), _ref(second)], steps=list(steps))


def recorded_game_id(session: Session, *, pairing_id: int, index: int) -> int | None:
    """The id of the recorded game `index` of the pairing; None before it is recorded."""
    statement = select(GameRecord.id).where(GameRecord.pairing_id == pairing_id, GameRecord.index == index)
    return session.exec(statement).first()


def drop_pairing(session: Session, *, pairing_id: int) -> None:
    """Deletes the pairing's games in progress, of every claim. Does not commit: called in the
    transaction that records the pairing."""
    _drop(session, col(LiveGame.pairing_id) == pairing_id)


def drop_stale(session: Session, *, now: datetime | None = None) -> None:
    """Deletes the games in progress whose claim no longer holds their pairing (it was recorded,
    given back, taken back or taken over, or its lease lapsed). Commits."""
    _drop(session, ~exists().where(_holds(now or utc_now())))
    session.commit()


def _drop(session: Session, condition) -> None:
    ids = select(LiveGame.id).where(condition)
    session.exec(delete(LiveStep).where(col(LiveStep.live_game_id).in_(ids)))
    session.exec(delete(LiveGame).where(col(LiveGame.id).in_(ids)))


def _holds(now: datetime):
    """The pairing row of a LiveGame whose claim holds it now."""
    return and_(
        col(Pairing.id) == col(LiveGame.pairing_id),
        col(Pairing.status) == RUNNING,
        col(Pairing.lease_owner) == col(LiveGame.owner),
        col(Pairing.lease_expires_at) >= now,
    )


def _held_games(now: datetime):
    """(LiveGame, first Bot, second Bot) of the games whose claim holds their pairing now."""
    first, second = aliased(Bot), aliased(Bot)
    return (
        select(LiveGame, first, second)
        .join(Pairing, _holds(now))
        .join(first, col(first.id) == col(LiveGame.first_bot_id))
        .join(second, col(second.id) == col(LiveGame.second_bot_id))
    )


def _ref(bot: Bot) -> BotRef:
    return BotRef(id=bot.id, name=bot.name, version=bot.version)
