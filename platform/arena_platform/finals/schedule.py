"""The final's schedule: a full round robin fixed when the final starts, then extra rounds between
neighbours whose order the games have not settled (ARCHITECTURE §10).

A pairing is the ladder's unit of play: two games from one seeded opening with seats swapped
(`arena_bots.pairs.paired_setups`: both games of a pairing of seed s start from `game.opening(s)`).

The round robin: every unordered pair of entrants plays `pairs_per_pair` pairings, round by round
(round k holds the k-th pairing of every pair), so a final stopped early has played each pair of
entrants equally often up to one. Pairing number n of the schedule (from 0, in schedule order)
has the seed `pairing_seed(final seed, n)`, derived as a ladder derives a pairing's from its id:
every pairing has its own opening. Openings are drawn per pairing rather than shared by all pairs,
so that games are independent given the entrants' strengths, as the fit's intervals assume; every
entrant still meets the same distribution of openings and the same number against each opponent.
The same plan always gives the same list in the same order. Booked as ladder pairings
(`store.pairings.create_pairings`, which seeds a pairing from its ladder), each pairing's `seed`
must be set to the schedule's.

The extra rounds ("more games where the ranking is still unsettled"), decided once every pairing
scheduled so far has been played: an adjacent pair of the current ranking is unsettled when the
probability that the higher entrant is the stronger is below the ranking's tie level
(`ranking.TIE_LEVEL`). An extra round gives every unsettled pair `extra_pairs` more pairings
between its two entrants (direct games are the most informative about their difference); an
entrant between two unsettled pairs plays both neighbours. At most `max_extra_rounds` extra
rounds are played; the pairs still unsettled after them are shown as ties. The seeds continue the
numbering, so the extra rounds are as reproducible as the round robin, given the same results.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from arena_platform.finals.ranking import TIE_LEVEL, FinalRanking
from arena_platform.store.pairings import pairing_seed

DEFAULT_EXTRA_ROUNDS = 2  # extra rounds at most, after the round robin


@dataclass(frozen=True)
class FinalPlan:
    """What fixes a final's schedule: the entrants (bot ids), the round robin's pairings per pair of
    entrants, the final's seed, and the extra rounds' size and cap (the module's rule)."""

    entrants: tuple[int, ...]
    pairs_per_pair: int
    seed: int
    extra_pairs: int = 1  # pairings per unsettled adjacent pair in an extra round
    max_extra_rounds: int = DEFAULT_EXTRA_ROUNDS

    def __post_init__(self) -> None:
        if len(set(self.entrants)) != len(self.entrants):
            raise ValueError(f"an entrant is listed twice: {sorted(self.entrants)}")
        if len(self.entrants) < 2:
            raise ValueError(f"a final needs at least 2 entrants, not {len(self.entrants)}")
        if self.pairs_per_pair < 1 or self.extra_pairs < 1:
            raise ValueError("pairs_per_pair and extra_pairs must be at least 1")
        if self.max_extra_rounds < 0:
            raise ValueError(f"max_extra_rounds must be 0 or more, not {self.max_extra_rounds}")


@dataclass(frozen=True)
class FinalPairing:
    """One pairing of the final. bot_a has the first seat in the pairing's first game."""

    number: int  # its place in the schedule, from 0; the extra rounds continue the numbering
    round: int  # 0 .. pairs_per_pair - 1: the round robin's; from pairs_per_pair on: extra rounds
    bot_a: int
    bot_b: int
    seed: int  # pairing_seed(plan.seed, number): the pairing's seed and its opening's


def round_robin_size(entrants: int, pairs_per_pair: int) -> int:
    """Pairings in the round robin of `entrants` entrants: 100 entrants at 4 pairs make 19,800."""
    return entrants * (entrants - 1) // 2 * pairs_per_pair


def round_robin(plan: FinalPlan) -> list[FinalPairing]:
    """The final's round robin, in schedule order: by round, then by pair of entrants (sorted ids)."""
    pairs = list(itertools.combinations(sorted(plan.entrants), 2))
    rounds = ((round_, pair) for round_ in range(plan.pairs_per_pair) for pair in pairs)
    return _numbered(plan, rounds, start=0)


def unsettled_pairs(ranking: FinalRanking) -> list[tuple[int, int]]:
    """The adjacent (higher, lower) entrants of `ranking` whose order is unsettled: the higher is
    the stronger with probability below TIE_LEVEL (the pairs the ranking shows tied)."""
    rows = ranking.rows
    return [
        (higher.entrant, lower.entrant)
        for higher, lower in itertools.pairwise(rows)
        if higher.stronger_than_next is None or higher.stronger_than_next < TIE_LEVEL
    ]


def extra_round(
    plan: FinalPlan, scheduled: Sequence[FinalPairing], ranking: FinalRanking
) -> list[FinalPairing]:
    """The next extra round (the module's rule) after `scheduled`, every pairing scheduled so far
    (numbered 0 .. len - 1) and all played, whose games `ranking` ranks; empty when the ranking is
    settled or the cap is reached."""
    if sorted(pairing.number for pairing in scheduled) != list(range(len(scheduled))):
        raise ValueError("the scheduled pairings must be the whole schedule so far, numbered from 0")
    rounds_scheduled = max((pairing.round for pairing in scheduled), default=-1) + 1
    if rounds_scheduled < plan.pairs_per_pair:
        raise ValueError("the round robin is not all scheduled: extra rounds come after it")
    if rounds_scheduled - plan.pairs_per_pair >= plan.max_extra_rounds:
        return []
    pairs = [tuple(sorted(pair)) for pair in unsettled_pairs(ranking)]
    rounds = ((rounds_scheduled, pair) for pair in pairs for _ in range(plan.extra_pairs))
    return _numbered(plan, rounds, start=len(scheduled))


def _numbered(
    plan: FinalPlan, rounds: Iterable[tuple[int, tuple[int, int]]], start: int
) -> list[FinalPairing]:
    """Pairings numbered from `start` for the (round, (bot_a, bot_b)) items of `rounds`, in order."""
    return [
        FinalPairing(number=number, round=round_, bot_a=a, bot_b=b, seed=pairing_seed(plan.seed, number))
        for number, (round_, (a, b)) in enumerate(rounds, start=start)
    ]
