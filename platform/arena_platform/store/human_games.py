"""Games between people and bots (HumanGame): started, moved on under the `ply` guard, listed.

The rules of such a game are arena_platform.human_play's; this module only keeps its rows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from sqlalchemy import update
from sqlmodel import Session, col, select

from arena_bots.pairs import first_seat_score
from arena_games.replay import Replay
from arena_platform.models import HumanGame, utc_now

PLAYING, OVER = "playing", "over"


def key_digest(key: str) -> str:
    """The stored form of a game's key: its SHA-256, hex."""
    return hashlib.sha256(key.encode()).hexdigest()


def record_new_game(
    session: Session,
    *,
    bot_id: int,
    ladder_id: int,
    human_seat: int,
    simulations: int,
    key: str,
    replay: Replay,
) -> HumanGame:
    """A new game's row (`replay` may already hold the bot's first moves). Commits."""
    game = HumanGame(
        bot_id=bot_id,
        ladder_id=ladder_id,
        human_seat=human_seat,
        simulations=simulations,
        key_sha256=key_digest(key),
        **_columns_of(replay, human_seat),
    )
    session.add(game)
    session.commit()
    session.refresh(game)
    return game


def get_game(session: Session, *, game_id: int) -> HumanGame | None:
    return session.get(HumanGame, game_id)


def record_move(session: Session, *, game: HumanGame, replay: Replay) -> bool:
    """Saves `replay` as the game's new state if nobody moved since `game` was read (its `ply` is
    still the stored one); False, saving nothing, when someone did. Commits."""
    result = session.execute(
        update(HumanGame)
        .where(col(HumanGame.id) == game.id, col(HumanGame.ply) == game.ply)
        .values(**_columns_of(replay, game.human_seat), updated_at=utc_now())
    )
    session.commit()
    return result.rowcount == 1


def recent_games(session: Session, *, bot_id: int, limit: int) -> Sequence[HumanGame]:
    """The bot's games against people, newest first."""
    query = (
        select(HumanGame)
        .where(col(HumanGame.bot_id) == bot_id)
        .order_by(col(HumanGame.created_at).desc(), col(HumanGame.id).desc())
        .limit(limit)
    )
    return session.exec(query).all()


def _columns_of(replay: Replay, human_seat: int) -> dict[str, Any]:
    """The row's replay and what follows from it: ply, status and the person's score."""
    over = bool(replay.end_reason)
    score = first_seat_score(replay.returns) if over else None
    return {
        "replay": replay.to_dict(),
        "ply": len(replay.steps),
        "status": OVER if over else PLAYING,
        "human_score": None if score is None else (score if human_seat == 0 else 1.0 - score),
    }
