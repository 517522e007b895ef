"""A game's version bump retires its ladders: they keep their games and ratings but book no more
pairings (no worker of the new code plays the old rules). On SQLite and PostgreSQL (see conftest.py)."""

from __future__ import annotations

from sqlalchemy import Engine, update
from sqlmodel import col

from arena_games.registry import get_game
from arena_platform.db import session
from arena_platform.models import Ladder
from arena_platform.store.ladders import ensure_ladder, find_ladder, ladder_name
from arena_platform.store.scheduling import schedule_round


def test_a_ladder_of_a_retired_game_version_books_nothing_and_the_current_one_plays(engine: Engine):
    current = get_game("smash").spec.version
    with session(engine) as db:
        retired = ensure_ladder(db, game="smash", simulations=4, seed=3)
        older = {"game_version": current - 1, "name": ladder_name("smash", current - 1, 4)}
        db.exec(update(Ladder).where(col(Ladder.id) == retired.id).values(**older))
        db.commit()
        assert schedule_round(db, ladder_id=retired.id, count=4, redelivery_seconds=60) == []
        assert find_ladder(db, game="smash", simulations=4) is None  # uploads find no current ladder
        ladder = ensure_ladder(db, game="smash", simulations=4, seed=3)
        db.commit()
        assert (ladder.id != retired.id, ladder.game_version) == (True, current)
        assert len(schedule_round(db, ladder_id=ladder.id, count=4, redelivery_seconds=60)) == 4
