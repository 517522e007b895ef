"""Recording a pairing's games: exactly once, whatever the workers do (ARCHITECTURE §5).

The games of a pairing, their outcomes added to the ladder's pair counts (the rating fit's input;
not an unrated challenge's, store.challenges), its pairs added to the running SPRT between its two
bots if there is one (store.sprt_tests; not a challenge's), and
the pairing's `done` mark are written in one transaction. Two lines of defence make a
re-delivered or re-run pairing count nothing twice: the conditional update that marks the pairing
done (only one recording can win it), and the unique (pairing_id, index) constraint on games. The
replays are written to the blob store before the transaction; they are content-addressed, so a
replay written twice is stored once, and a replay orphaned by a crash is harmless.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import case, delete, func, insert, literal
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from arena_platform.models import GameRecord, PairCount, Pairing
from arena_platform.ratings import count_pair_arrays
from arena_platform.store.challenges import counts_in_ratings
from arena_platform.store.live import drop_pairing
from arena_platform.store.pairings import mark_done, unrated_pairings
from arena_platform.store.sprt_tests import add_pairing

MAX_END_REASON_CHARS = 500  # the width of GameRecord.end_reason
PAIR_KEY = ("ladder_id", "low_bot_id", "high_bot_id")
OUTCOME_COUNTS = ("low_wins", "draws", "high_wins")


@dataclass(frozen=True)
class PlayedGame:
    """One finished game of a pairing, ready to record. `score` is the first seat's: 1, 0.5 or 0."""

    index: int  # 0: bot_a has the first seat; 1: the seats are swapped; and so on in pairs
    first_bot_id: int
    second_bot_id: int
    score: float
    end_reason: str
    forfeit_seat: int | None
    steps: int
    replay_sha256: str


def record_pairing(
    session: Session, *, pairing: Pairing, games: Sequence[PlayedGame], play_seconds: float | None = None
) -> bool:
    """Writes `games` and marks `pairing` done (with its cost, `Pairing.play_seconds`) in one
    transaction, which also deletes its games in progress (store.live); False if it was already
    recorded.

    Commits on success and rolls back otherwise; an integrity error that is not the duplicate
    guard (a missing bot, say) is raised.
    """
    try:
        if not mark_done(session, pairing_id=pairing.id, play_seconds=play_seconds):
            session.rollback()
            return False
        session.add_all(
            GameRecord(
                pairing_id=pairing.id,
                ladder_id=pairing.ladder_id,
                index=game.index,
                first_bot_id=game.first_bot_id,
                second_bot_id=game.second_bot_id,
                score=game.score,
                end_reason=game.end_reason[:MAX_END_REASON_CHARS],
                forfeit_seat=game.forfeit_seat,
                steps=game.steps,
                replay_sha256=game.replay_sha256,
            )
            for game in games
        )
        if counts_in_ratings(session, pairing=pairing):
            _count_pairs(session, ladder_id=pairing.ladder_id, games=games)
        if pairing.challenge_id is None:  # a challenge's pairs are its own evidence, no SPRT's
            add_pairing(session, bot_a_id=pairing.bot_a_id, bot_b_id=pairing.bot_b_id, games=games)
        drop_pairing(session, pairing_id=pairing.id)  # its games are no longer in progress
        session.commit()
        return True
    except IntegrityError:
        session.rollback()
        if recorded_games(session, pairing_id=pairing.id) == 0:
            raise
        return False


def recorded_games(session: Session, *, pairing_id: int) -> int:
    """How many games of the pairing are recorded."""
    statement = select(func.count()).select_from(GameRecord).where(col(GameRecord.pairing_id) == pairing_id)
    return session.exec(statement).one()


def pairing_games(session: Session, *, pairing_id: int) -> list[GameRecord]:
    """The recorded games of a pairing, by index."""
    statement = select(GameRecord).where(col(GameRecord.pairing_id) == pairing_id).order_by(GameRecord.index)
    return list(session.exec(statement))


def recount_pairs(session: Session, *, ladder_id: int) -> None:
    """Rebuilds the ladder's pair counts from its games, unrated challenges' left out (after games
    were loaded around `record_pairing`, as a benchmark's bulk SQL does). Does not commit."""
    first_is_low = col(GameRecord.first_bot_id) < col(GameRecord.second_bot_id)
    outcomes = (
        select(
            case((first_is_low, GameRecord.first_bot_id), else_=GameRecord.second_bot_id).label("low"),
            case((first_is_low, GameRecord.second_bot_id), else_=GameRecord.first_bot_id).label("high"),
            case((first_is_low, GameRecord.score), else_=1 - col(GameRecord.score)).label("points"),
        )
        .where(col(GameRecord.ladder_id) == ladder_id, col(GameRecord.pairing_id).not_in(unrated_pairings()))
        .subquery()
    )

    def games_where_low_scored(points: float) -> Any:
        return func.sum(case((outcomes.c.points == points, 1), else_=0))

    counted = select(
        literal(ladder_id),
        outcomes.c.low,
        outcomes.c.high,
        *(games_where_low_scored(points) for points in (1.0, 0.5, 0.0)),
    ).group_by(outcomes.c.low, outcomes.c.high)
    session.exec(delete(PairCount).where(col(PairCount.ladder_id) == ladder_id))
    session.exec(insert(PairCount).from_select([*PAIR_KEY, *OUTCOME_COUNTS], counted))


def _count_pairs(session: Session, *, ladder_id: int, games: Sequence[PlayedGame]) -> None:
    """Adds the games' outcomes to the ladder's PairCount rows: an insert, or an increment of the
    row that exists (an atomic upsert, so concurrent recordings of one pair add up)."""
    bot_ids = sorted({bot_id for game in games for bot_id in (game.first_bot_id, game.second_bot_id)})
    position = {bot_id: k for k, bot_id in enumerate(bot_ids)}
    pairs = count_pair_arrays(
        tuple(str(bot_id) for bot_id in bot_ids),
        np.array([position[game.first_bot_id] for game in games], dtype=np.int64),
        np.array([position[game.second_bot_id] for game in games], dtype=np.int64),
        np.array([game.score for game in games], dtype=np.float64),
    )
    outcomes = zip(pairs.low, pairs.high, pairs.low_wins, pairs.draws, pairs.high_wins, strict=True)
    rows = [
        {
            "ladder_id": ladder_id,
            "low_bot_id": bot_ids[low],
            "high_bot_id": bot_ids[high],
            "low_wins": int(low_wins),
            "draws": int(draws),
            "high_wins": int(high_wins),
        }
        for low, high, low_wins, draws, high_wins in outcomes
    ]
    if not rows:
        return
    upsert = _dialect_insert(session)(PairCount).values(rows)
    increments = {name: getattr(PairCount, name) + upsert.excluded[name] for name in OUTCOME_COUNTS}
    session.exec(upsert.on_conflict_do_update(index_elements=PAIR_KEY, set_=increments))


def _dialect_insert(session: Session) -> Any:
    """The INSERT construct of the session's database, the one with ON CONFLICT DO UPDATE."""
    dialect = session.get_bind().dialect.name
    return {"postgresql": postgresql.insert, "sqlite": sqlite.insert}[dialect]
