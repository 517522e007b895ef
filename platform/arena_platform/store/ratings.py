"""A ladder's rating table: refitted from all its games and kept in the Rating table (ARCHITECTURE §5).

The fit is `arena_platform.ratings` (Bradley-Terry over pair counts); bots are named there by their
id as a string, and the ladder's house bots are the anchors. Its input is the PairCount table, kept
in step with the games as they are recorded (store.results), so a refit reads one row per pair of
bots that met, never one per game.

Debounce and idempotence: the Rating rows say how many games they were fitted on (every game counts
once for each of its two bots), so a refit when no game arrived since the last one does nothing. A
refit replaces the ladder's Rating rows and appends a RatingHistory row for each bot whose number of
games changed, so running it twice changes nothing the second time. The database copies the new
ratings into the leaderboard's ready rows (LeaderboardRow) in the refit's own transaction, in which
a competition's ladder also promotes the bots its fit says beat their league's boss (store.leagues).
"""

from __future__ import annotations

import numpy as np
from sqlalchemy import delete, func, insert, update
from sqlmodel import Session, col, select

from arena_platform.db import plain_rows
from arena_platform.models import Bot, Ladder, PairCount, Rating, RatingHistory, utc_now
from arena_platform.ratings import PairCounts, RatingTable, fit_pair_counts
from arena_platform.store.leagues import promote

# The games a ladder's pair counts cover (0 for none).
_COUNTED_GAMES = func.coalesce(func.sum(PairCount.low_wins + PairCount.draws + PairCount.high_wins), 0)


class LadderNotFound(LookupError):
    """No ladder has this id."""


def lock_ladder(session: Session, *, ladder_id: int) -> Ladder:
    """The ladder, locked until the transaction ends (PostgreSQL: SELECT ... FOR NO KEY UPDATE).

    Serialises the read-modify-write rounds of one ladder (refits, scheduling rounds) across workers,
    without blocking the inserts that merely refer to the ladder (games being recorded). SQLite has
    no row locks: there a write that changes nothing takes the database's write lock first (the
    embedded worker's play processes book rounds at once too), so that two rounds cannot both read
    the same tables, nor fail when the second upgrades its read to a write.
    """
    if session.get_bind().dialect.name == "sqlite":
        session.exec(update(Ladder).where(col(Ladder.id) == ladder_id).values(seed=col(Ladder.seed)))
    locked = select(Ladder).where(col(Ladder.id) == ladder_id).with_for_update(key_share=True)
    ladder = session.exec(locked).first()
    if ladder is None:
        raise LadderNotFound(f"ladder {ladder_id} does not exist")
    return ladder


def refit_ladder(session: Session, *, ladder_id: int) -> bool:
    """Refits the ladder's ratings unless they already cover all its games; True if it refitted. Commits."""
    ladder = lock_ladder(session, ladder_id=ladder_id)
    if fitted_games(session, ladder_id=ladder_id) == ladder_games(session, ladder_id=ladder_id):
        session.rollback()
        return False
    pairs = ladder_pair_counts(session, ladder_id=ladder_id)
    table = _fit(session, ladder_id, pairs)
    _replace_ratings(session, ladder_id, table)
    promote(session, ladder=ladder, pairs=pairs, table=table, now=utc_now())  # a competition's leagues
    session.commit()
    return True


def fit_ladder(session: Session, *, ladder_id: int) -> RatingTable:
    """The rating table of all the ladder's games; bots are named by their id as a string."""
    return _fit(session, ladder_id, ladder_pair_counts(session, ladder_id=ladder_id))


def ladder_pair_counts(session: Session, *, ladder_id: int) -> PairCounts:
    """The pair counts of all the ladder's games; bots are named by their id as a string."""
    statement = select(
        PairCount.low_bot_id,
        PairCount.high_bot_id,
        PairCount.low_wins,
        PairCount.draws,
        PairCount.high_wins,
    ).where(col(PairCount.ladder_id) == ladder_id)
    # (P, 5): low id, high id, low wins, draws, high wins
    counts = np.array(plain_rows(session, statement), dtype=np.int64).reshape(-1, 5)
    # Sorted by pair (the fit's sums, rounding included, must not depend on the rows' order on disk);
    # sorting here lets the database scan the table in its own order.
    bot_ids = np.unique(counts[:, :2])  # sorted, so low < high holds for the indices too
    low, high = np.searchsorted(bot_ids, counts[:, 0]), np.searchsorted(bot_ids, counts[:, 1])
    order = np.argsort(low * len(bot_ids) + high)
    return PairCounts(
        bots=tuple(str(bot_id) for bot_id in bot_ids),
        low=low[order],
        high=high[order],
        low_wins=counts[order, 2],
        draws=counts[order, 3],
        high_wins=counts[order, 4],
    )


def _fit(session: Session, ladder_id: int, pairs: PairCounts) -> RatingTable:
    """The fit of the ladder's `pairs`, its house bots the anchors."""
    house = session.exec(select(Bot.id).where(col(Bot.ladder_id) == ladder_id, col(Bot.kind) == "house"))
    return fit_pair_counts(pairs, anchors={str(bot_id) for bot_id in house})


def ladder_games(session: Session, *, ladder_id: int) -> int:
    """How many games the ladder has recorded (as its pair counts say)."""
    statement = select(_COUNTED_GAMES).where(col(PairCount.ladder_id) == ladder_id)
    return session.exec(statement).one()


def fitted_games(session: Session, *, ladder_id: int) -> int:
    """How many games the ladder's current Rating rows were fitted on."""
    statement = select(func.coalesce(func.sum(Rating.games), 0)).where(col(Rating.ladder_id) == ladder_id)
    return session.exec(statement).one() // 2


def stale_ladders(session: Session) -> list[int]:
    """The ids of ladders with games that their Rating rows do not cover yet (a refit was lost)."""
    games = dict(
        session.exec(select(PairCount.ladder_id, _COUNTED_GAMES).group_by(PairCount.ladder_id)).all()
    )
    rated = select(Rating.ladder_id, func.sum(Rating.games)).group_by(Rating.ladder_id)
    fitted = {ladder_id: total // 2 for ladder_id, total in session.exec(rated).all()}
    return sorted(ladder_id for ladder_id, count in games.items() if fitted.get(ladder_id, 0) != count)


def rating_estimates(session: Session, *, ladder_id: int) -> dict[int, tuple[float, float]]:
    """bot id -> (rating, 95% half-width) in Elo, for the ladder's rated bots."""
    rows = session.exec(select(Rating).where(col(Rating.ladder_id) == ladder_id))
    return {row.bot_id: (row.rating, (row.high - row.low) / 2) for row in rows}


def _replace_ratings(session: Session, ladder_id: int, table: RatingTable) -> None:
    """Replaces the ladder's Rating rows by `table`'s rated bots; history for bots with new games.

    Bulk inserts (one statement per table): a ladder of a thousand bots is a thousand rows each.
    """
    fitted = select(Rating.bot_id, Rating.games).where(col(Rating.ladder_id) == ladder_id)
    previous = dict(session.exec(fitted).all())
    session.exec(delete(Rating).where(col(Rating.ladder_id) == ladder_id))
    now = utc_now()
    ratings = [
        {
            "ladder_id": ladder_id,
            "bot_id": int(row.bot),
            "rating": row.rating,
            "low": row.interval_low,
            "high": row.interval_high,
            "games": row.games,
            "wins": row.wins,
            "draws": row.draws,
            "losses": row.losses,
            "provisional": row.provisional,
            "updated_at": now,
        }
        for row in table.rows
        if row.rating is not None
    ]
    history = [
        {key: rating[key] for key in ("ladder_id", "bot_id", "rating", "low", "high", "games")}
        | {"recorded_at": now}
        for rating in ratings
        if previous.get(rating["bot_id"]) != rating["games"]
    ]
    for model, rows in ((Rating, ratings), (RatingHistory, history)):
        if rows:
            session.exec(insert(model), params=rows)
