"""The final's ranking: the Bradley-Terry fit of the final's games, with each entrant's 95% interval,
the probability that each entrant is stronger than the next below, and shared ranks (ARCHITECTURE §10).

Which games count: the final's alone. The games played before the deadline (on the competition's
ladder, against whoever the scheduler chose, under bots' earlier versions) do not: every entrant
is ranked on the same schedule, the round robin, and a bot that played much before the deadline
gains nothing from it.

The fit is the ladder's (`arena_platform.ratings.fit_pair_counts`, its prior, dispersion and
intervals as documented there) with no anchors: ratings are in Elo relative to the entrants'
information-weighted mean, and an interval is that of the rating relative to it.

The probability that the higher of two adjacent entrants is the stronger is the fit's
(`arena_platform.ratings.stronger_probabilities`, measured against the lower entrant: the normal
approximation of the maximum-likelihood estimate).
An entrant without games is listed last, unrated, and the probability of a pair it belongs to is
None (unknown).

Ties: an adjacent pair whose probability is below TIE_LEVEL (or unknown) shares a rank. Ties chain:
if A-B and B-C are both unsettled, A, B and C share a rank (even if A is surely above C). A shared
rank is the best of its group's places (competition ranking: 1, 2, 2, 4).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from arena_platform.ratings import (
    GameResult,
    RatingTable,
    count_pairs,
    fit_pair_counts,
    stronger_probabilities,
)

# An adjacent pair is shown as a tie unless the higher entrant is the stronger with at least this
# probability: the one-sided counterpart of the 95% intervals (5% of settled orders may be wrong).
TIE_LEVEL = 0.95


@dataclass(frozen=True)
class RankedEntrant:
    """One row of the final's table. Ratings and bounds in Elo relative to the entrants' mean (None
    for an entrant without games)."""

    rank: int  # shared by tied entrants: 1 + the entrants above their group
    entrant: int  # bot id
    tied: bool  # shares its rank with a neighbour
    rating: float | None
    interval_low: float | None  # of the 95% interval
    interval_high: float | None
    games: int
    wins: int
    draws: int
    losses: int
    stronger_than_next: float | None  # P(stronger than the entrant below); None: last, or unknown


@dataclass(frozen=True)
class FinalRanking:
    """The final's table, best first, in the fit's order (rated entrants by rating, then those
    without games; equals by str(id)), and the fit behind it."""

    rows: tuple[RankedEntrant, ...]
    table: RatingTable  # bots named str(entrant id)


def rank_final(results: Iterable[GameResult], entrants: Collection[int]) -> FinalRanking:
    """The final's ranking (the module's rules) from the results of its games, keyed by game id,
    naming the entrants str(bot id); ValueError for a game of a bot that is not an entrant."""
    games = list(results)
    names = {str(entrant): entrant for entrant in entrants}
    strangers = sorted({name for game in games for name in (game.first, game.second)} - names.keys())
    if strangers:
        raise ValueError(f"games of bots that are not entrants of the final: {', '.join(strangers)}")
    pairs = count_pairs(games, names)
    table = fit_pair_counts(pairs, anchors=())
    probabilities = [
        stronger_probabilities(pairs, table, [higher.bot], lower.bot)[higher.bot]
        for higher, lower in zip(table.rows, table.rows[1:], strict=False)
    ]
    probabilities.append(None)
    ranks = _shared_ranks(probabilities)
    group_sizes = Counter(ranks)
    rows = tuple(
        RankedEntrant(
            rank=ranks[k],
            entrant=names[row.bot],
            tied=group_sizes[ranks[k]] > 1,
            rating=row.rating,
            interval_low=None if row.rating is None else row.interval_low,
            interval_high=None if row.rating is None else row.interval_high,
            games=row.games,
            wins=row.wins,
            draws=row.draws,
            losses=row.losses,
            stronger_than_next=probabilities[k],
        )
        for k, row in enumerate(table.rows)
    )
    return FinalRanking(rows=rows, table=table)


def _shared_ranks(probabilities: list[float | None]) -> list[int]:
    """Ranks of rows in order, from each row's probability of being stronger than the next (the
    last row's is None): a row continues its predecessor's rank when that pair is unsettled."""
    ranks: list[int] = []
    for place, previous in enumerate([None, *probabilities[:-1]]):
        settled = place == 0 or (previous is not None and previous >= TIE_LEVEL)
        ranks.append(place + 1 if settled else ranks[-1])
    return ranks
