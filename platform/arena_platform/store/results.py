"""Recording a pairing's games: exactly once, whatever the workers do (ARCHITECTURE §5).

The games of a pairing and the pairing's `done` mark are written in one transaction. Two lines of
defence make a re-delivered or re-run pairing count nothing twice: the conditional update that marks
the pairing done (only one recording can win it), and the unique (pairing_id, index) constraint on
games. The replays are written to the blob store before the transaction; they are content-addressed,
so a replay written twice is stored once, and a replay orphaned by a crash is harmless.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from arena_platform.models import GameRecord, Pairing
from arena_platform.store.pairings import mark_done

MAX_END_REASON_CHARS = 500  # the width of GameRecord.end_reason


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


def record_pairing(session: Session, *, pairing: Pairing, games: Sequence[PlayedGame]) -> bool:
    """Writes `games` and marks `pairing` done in one transaction; False if it was already recorded.

    Commits on success and rolls back otherwise; an integrity error that is not the duplicate
    guard (a missing bot, say) is raised.
    """
    try:
        if not mark_done(session, pairing_id=pairing.id):
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
