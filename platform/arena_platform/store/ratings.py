"""A ladder's rating table: refitted from all its games and kept in the Rating table (ARCHITECTURE §5).

The fit is `arena_platform.ratings` (Bradley-Terry over pair counts); bots are named there by their
id as a string, and the ladder's house bots are the anchors. The games are read grouped by
(first bot, second bot, score), so a refit costs one aggregate query plus a fit over bots and pairs,
never a Python object per game.

Debounce and idempotence: the Rating rows say how many games they were fitted on (every game counts
once for each of its two bots), so a refit when no game arrived since the last one does nothing. A
refit replaces the ladder's Rating rows and appends a RatingHistory row for each bot whose number of
games changed, so running it twice changes nothing the second time.
"""

from __future__ import annotations

import numpy as np
from sqlalchemy import delete, func
from sqlmodel import Session, col, select

from arena_platform.models import Bot, GameRecord, Ladder, Rating, RatingHistory, utc_now
from arena_platform.ratings import RatingTable, count_pair_arrays, fit_pair_counts


class LadderNotFound(LookupError):
    """No ladder has this id."""


def lock_ladder(session: Session, *, ladder_id: int) -> Ladder:
    """The ladder, locked until the transaction ends (PostgreSQL: SELECT ... FOR NO KEY UPDATE).

    Serialises the read-modify-write rounds of one ladder (refits, scheduling rounds) across workers,
    without blocking the inserts that merely refer to the ladder (games being recorded). SQLite
    ignores the lock; the embedded worker runs one task at a time.
    """
    locked = select(Ladder).where(col(Ladder.id) == ladder_id).with_for_update(key_share=True)
    ladder = session.exec(locked).first()
    if ladder is None:
        raise LadderNotFound(f"ladder {ladder_id} does not exist")
    return ladder


def refit_ladder(session: Session, *, ladder_id: int) -> bool:
    """Refits the ladder's ratings unless they already cover all its games; True if it refitted. Commits."""
    lock_ladder(session, ladder_id=ladder_id)
    if fitted_games(session, ladder_id=ladder_id) == ladder_games(session, ladder_id=ladder_id):
        session.rollback()
        return False
    table = fit_ladder(session, ladder_id=ladder_id)
    _replace_ratings(session, ladder_id, table)
    session.commit()
    return True


def fit_ladder(session: Session, *, ladder_id: int) -> RatingTable:
    """The rating table of all the ladder's games; bots are named by their id as a string."""
    statement = (
        select(GameRecord.first_bot_id, GameRecord.second_bot_id, GameRecord.score, func.count())
        .where(col(GameRecord.ladder_id) == ladder_id)
        .group_by(GameRecord.first_bot_id, GameRecord.second_bot_id, GameRecord.score)
    )
    # The driver's plain tuples: SQLAlchemy's Row objects cost seconds per million, and NumPy
    # converts them one at a time.
    rows = session.connection().execute(statement).cursor.fetchall()
    groups = np.array(rows, dtype=np.float64).reshape(-1, 4)
    first, second, count = (groups[:, k].astype(np.int64) for k in (0, 1, 3))
    score = groups[:, 2]
    bot_ids = np.unique(np.concatenate([first, second]))  # sorted
    pairs = count_pair_arrays(
        tuple(str(bot_id) for bot_id in bot_ids),
        np.repeat(np.searchsorted(bot_ids, first), count),
        np.repeat(np.searchsorted(bot_ids, second), count),
        np.repeat(score, count),
    )
    house = session.exec(select(Bot.id).where(col(Bot.ladder_id) == ladder_id, col(Bot.kind) == "house"))
    return fit_pair_counts(pairs, anchors={str(bot_id) for bot_id in house})


def ladder_games(session: Session, *, ladder_id: int) -> int:
    """How many games the ladder has recorded."""
    statement = select(func.count()).select_from(GameRecord).where(col(GameRecord.ladder_id) == ladder_id)
    return session.exec(statement).one()


def fitted_games(session: Session, *, ladder_id: int) -> int:
    """How many games the ladder's current Rating rows were fitted on."""
    statement = select(func.coalesce(func.sum(Rating.games), 0)).where(col(Rating.ladder_id) == ladder_id)
    return session.exec(statement).one() // 2


def stale_ladders(session: Session) -> list[int]:
    """The ids of ladders with games that their Rating rows do not cover yet (a refit was lost)."""
    games = dict(
        session.exec(select(GameRecord.ladder_id, func.count()).group_by(GameRecord.ladder_id)).all()
    )
    rated = select(Rating.ladder_id, func.sum(Rating.games)).group_by(Rating.ladder_id)
    fitted = {ladder_id: total // 2 for ladder_id, total in session.exec(rated).all()}
    return sorted(ladder_id for ladder_id, count in games.items() if fitted.get(ladder_id, 0) != count)


def rating_estimates(session: Session, *, ladder_id: int) -> dict[int, tuple[float, float]]:
    """bot id -> (rating, 95% half-width) in Elo, for the ladder's rated bots."""
    rows = session.exec(select(Rating).where(col(Rating.ladder_id) == ladder_id))
    return {row.bot_id: (row.rating, (row.high - row.low) / 2) for row in rows}


def _replace_ratings(session: Session, ladder_id: int, table: RatingTable) -> None:
    """Replaces the ladder's Rating rows by `table`'s rated bots; history for bots with new games."""
    fitted = select(Rating.bot_id, Rating.games).where(col(Rating.ladder_id) == ladder_id)
    previous = dict(session.exec(fitted).all())
    session.exec(delete(Rating).where(col(Rating.ladder_id) == ladder_id))
    now = utc_now()
    for row in table.rows:
        if row.rating is None:
            continue
        bot_id = int(row.bot)
        session.add(
            Rating(
                ladder_id=ladder_id,
                bot_id=bot_id,
                rating=row.rating,
                low=row.interval_low,
                high=row.interval_high,
                games=row.games,
                wins=row.wins,
                draws=row.draws,
                losses=row.losses,
                provisional=row.provisional,
                updated_at=now,
            )
        )
        if previous.get(bot_id) != row.games:
            session.add(
                RatingHistory(
                    ladder_id=ladder_id,
                    bot_id=bot_id,
                    rating=row.rating,
                    low=row.interval_low,
                    high=row.interval_high,
                    games=row.games,
                    recorded_at=now,
                )
            )
