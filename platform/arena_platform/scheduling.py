"""Who plays whom next on a ladder: a pure function over plain data (ARCHITECTURE §4, §5).

Contract of `next_pairings(state, count, rng, policy, priority)`:
- A pairing is the unit of play: two games from one opening with seats swapped. The returned list
  holds at most `count` pairings in booking order; fewer when the in-flight cap (or a ladder of
  fewer than two bots) leaves nothing admissible. The caller records them as in flight.
- The state is a snapshot: the active bots, pairings finished and in flight per unordered pair
  (pairs naming inactive bots are ignored) and the current ratings. Nothing is read elsewhere; the
  only randomness is `rng`, so the same state and generator state give the same pairings.

The order of play:
0. Priority pairs (a new version against the previous one while their SPRT runs): each pair in the
   order given, as many pairings as the first (new) bot's in-flight room allows, before anything
   else: the round in progress that holds its opponent's room does not hold back its test.
1. Introduction. House bots count as older than every other bot; otherwise bots are ordered by
   creation, then name. A bot's introduction is its debt to every older bot: `house_pairings`
   pairings with each house bot, then one with every other bot (a round robin). While a bot owes a
   house bot it plays only house bots, and a non-house bot in that stage is not drawn into a newer
   bot's round robin either. Admissible introduction pairings are booked before anything else, for
   the bot with the fewest pairings scheduled first, against its oldest creditor. A `newcomer` (a
   bot that joined the ladder in progress) is introduced within its own in-flight room only, its
   creditors' being taken by the round in progress.
2. Everyone else (introduction complete): the first bot is one with the fewest pairings scheduled
   (fair share; ties drawn at random). With probability `informative_share` its opponent is the one
   whose game teaches the most (expected information gain, below), otherwise a uniformly random one:
   pairing only close ratings was measured to distort the scale. The pair chosen is booked as a
   block of up to `block` pairings (each from its own opening): a worker plays a block as one task,
   so each of the two bots searches `block` games at once and its model sees batches that large
   (fishtest's tasks are likewise many games of one pair).
Leagues (a competition's, store.leagues): bots of different `league`s are never paired, in
any step; a bot owes introductions only to the older bots of its league. Without leagues (every
`league` None) the ladder is one league.
Throughout, no bot has more than `max_in_flight` pairings in flight, so no bot hogs the workers,
except the opponents of a priority pair or of a newcomer's introduction (their games are its).

`task_groups` splits a round's pairings into task messages that keep pairings sharing a bot
together (a block, a new bot's round robin), for the same reason.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import expit

from arena_platform.ratings import ELO_PER_LOGIT, Z_95

UNRATED_SD = 400.0 / ELO_PER_LOGIT  # logits: the belief about a bot with no rating yet, at the anchor level

Reason = Literal["priority", "introduction", "informative", "random"]


@dataclass(frozen=True)
class LadderBot:
    name: str
    is_house: bool = False
    created: int = 0  # creation order: lower is older
    newcomer: bool = False  # joined the ladder in progress: its creditors' cap does not hold it back
    league: int | None = None  # plays only bots of the same league (None: the ladder has no leagues)


@dataclass(frozen=True)
class LadderState:
    """A snapshot of one ladder. Pair keys are unordered: (a, b) and (b, a) mean the same pair."""

    bots: tuple[LadderBot, ...]  # the active bots
    played: Mapping[tuple[str, str], int]  # finished pairings per pair
    in_flight: Mapping[tuple[str, str], int]  # scheduled, unfinished pairings per pair
    ratings: Mapping[str, tuple[float, float]]  # bot -> (rating, 95% half-width) in Elo; absent: unrated


@dataclass(frozen=True)
class SchedulePolicy:
    house_pairings: int = 2  # pairings owed to each house bot (and between house bots)
    informative_share: float = 0.7  # of the pairings after introduction; the rest are random
    block: int = 4  # pairings booked at once for a pair chosen after introduction
    max_in_flight: int = 8  # pairings in flight per bot: two blocks


DEFAULT_POLICY = SchedulePolicy()


@dataclass(frozen=True)
class Pairing:
    first: str
    second: str
    reason: Reason


def next_pairings(
    state: LadderState,
    count: int,
    rng: np.random.Generator,
    policy: SchedulePolicy = DEFAULT_POLICY,
    priority: Sequence[tuple[str, str]] = (),
) -> list[Pairing]:
    """Up to `count` pairings to play next (see the module's contract). `priority` holds pairs of
    bots (first, second) to book first; pairs naming an inactive bot are skipped."""
    plan = _Plan(state, policy)
    pairings = plan.prioritized(priority, count)
    while len(pairings) < count:
        booked = plan.introduction() or plan.settled(rng, count - len(pairings))
        if not booked:
            break
        pairings.extend(booked)
    return pairings


def task_groups(pairs: Sequence[tuple[str, str]], size: int) -> list[list[int]]:
    """The indices of a round's pairings (given as their two bots, in booking order) in groups of
    at most `size`, one group per task message, so that pairings sharing a bot travel together.

    Greedy: the bot in the most pairings not yet grouped (ties: the one booked first) gets the next
    group: its pairings against its most frequent opponent first (a block stays whole), then in
    booking order. Every index appears in exactly one group.
    """
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    left = list(range(len(pairs)))
    groups = []
    while left:
        order = [bot for index in left for bot in pairs[index]]
        counts = Counter(order)
        hub = max(counts, key=lambda bot: (counts[bot], -order.index(bot)))
        own = [index for index in left if hub in pairs[index]]
        opponents = Counter(_other(pairs[index], hub) for index in own)
        own.sort(key=lambda index: (-opponents[_other(pairs[index], hub)], index))
        group = own[:size]
        groups.append(sorted(group))
        taken = set(group)
        left = [index for index in left if index not in taken]
    return groups


def _other(pair: tuple[str, str], bot: str) -> str:
    return pair[1] if pair[0] == bot else pair[0]


class _Plan:
    """The mutable working copy of a LadderState while one call books pairings.

    Bots are indexed oldest first (house bots first); matrices are (N, N) and symmetric, counts in
    pairings; means are in logits above the anchor, variances (logits^2) those of the table's intervals.
    """

    def __init__(self, state: LadderState, policy: SchedulePolicy) -> None:
        bots = sorted(state.bots, key=lambda bot: (not bot.is_house, bot.created, bot.name))
        self.names = [bot.name for bot in bots]
        self.is_house = np.array([bot.is_house for bot in bots], dtype=bool)
        self.newcomer = np.array([bot.newcomer for bot in bots], dtype=bool)
        leagues = np.array([-1 if bot.league is None else bot.league for bot in bots], dtype=np.int64)
        self.same_league = leagues[:, None] == leagues[None, :]  # (N, N) bool: [p, q] may meet
        self.policy = policy
        index = {name: k for k, name in enumerate(self.names)}
        self.in_flight = np.zeros((len(bots), len(bots)), dtype=np.int64)
        _add_pair_counts(self.in_flight, state.in_flight, index)
        self.scheduled = self.in_flight.copy()
        _add_pair_counts(self.scheduled, state.played, index)
        either_house = self.is_house[:, None] | self.is_house[None, :]
        owed = np.where(either_house, policy.house_pairings, 1) * self.same_league
        self.required = np.tril(owed, k=-1)  # [newer, older]
        self.mean, self.variance = _beliefs(self.names, state.ratings)

    def prioritized(self, pairs: Sequence[tuple[str, str]], most: int) -> list[Pairing]:
        """Pairings of `pairs` in order, each as many as the first bot's in-flight room allows, at
        most `most` in all."""
        index = {name: k for k, name in enumerate(self.names)}
        booked: list[Pairing] = []
        for first, second in pairs:
            if first not in index or second not in index or first == second:
                continue
            x, y = index[first], index[second]
            if not self.same_league[x, y]:
                continue
            number = int(min(self._room()[x], most - len(booked)))
            if number > 0:
                booked.extend(self._book(x, y, "priority", number))
        return booked

    def introduction(self) -> list[Pairing]:
        """The next introduction pairing (a list of one), or none when none is admissible now."""
        owed = self.required > self.scheduled  # [x, y]: x still owes older y a pairing
        in_house_stage = (owed & self.is_house[None, :]).any(axis=1)
        stage_allows = self.is_house[None, :] | ~in_house_stage[:, None]  # [p, q]: p may play q now
        free = self._free()
        creditor_free = free[None, :] | self.newcomer[:, None]
        admissible = owed & stage_allows & stage_allows.T & free[:, None] & creditor_free
        candidates = np.flatnonzero(admissible.any(axis=1))
        if not candidates.size:
            return []
        totals = self.scheduled.sum(axis=1)
        x = candidates[np.argmin(totals[candidates])]  # fewest scheduled, then oldest
        return self._book(x, int(np.argmax(admissible[x])), "introduction", 1)

    def settled(self, rng: np.random.Generator, most: int) -> list[Pairing]:
        """The next block of at most `most` pairings between introduced bots of one league (as many
        as the block size and both bots' in-flight room allow), or none when no league has two
        such bots free."""
        introduced = ~(self.required > self.scheduled).any(axis=1)
        pool = np.flatnonzero(introduced & self._free())
        partnered = pool[self.same_league[np.ix_(pool, pool)].sum(axis=1) > 1]  # itself and another
        if not partnered.size:
            return []
        totals = self.scheduled.sum(axis=1)[partnered]
        x = rng.choice(partnered[totals == totals.min()])
        opponents = pool[(pool != x) & self.same_league[x, pool]]
        if rng.random() < self.policy.informative_share:
            gain = _information_gain(self.mean, self.variance, x, opponents)
            y, reason = opponents[np.argmax(gain)], "informative"
        else:
            y, reason = rng.choice(opponents), "random"
        room = self._room()
        return self._book(x, y, reason, int(min(self.policy.block, most, room[x], room[y])))

    def _room(self) -> np.ndarray:
        """(N,) the pairings each bot may still put in flight."""
        return self.policy.max_in_flight - self.in_flight.sum(axis=1)

    def _free(self) -> np.ndarray:
        """(N,) bool: bots below the in-flight cap."""
        return self._room() > 0

    def _book(self, x: int, y: int, reason: Reason, count: int) -> list[Pairing]:
        for matrix in (self.in_flight, self.scheduled):
            matrix[x, y] += count
            matrix[y, x] += count
        return [Pairing(first=self.names[x], second=self.names[y], reason=reason)] * count


def _add_pair_counts(
    matrix: np.ndarray, counts: Mapping[tuple[str, str], int], index: dict[str, int]
) -> None:
    """Adds unordered pair counts into a symmetric (N, N) matrix, skipping pairs with inactive bots."""
    for (a, b), count in counts.items():
        if a in index and b in index and a != b:
            matrix[index[a], index[b]] += count
            matrix[index[b], index[a]] += count


def _beliefs(names: list[str], ratings: Mapping[str, tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """(N,) means and (N,) variances in logits: the table's ratings, or the anchor level +- UNRATED_SD."""
    mean, variance = np.zeros(len(names)), np.full(len(names), UNRATED_SD**2)
    for k, name in enumerate(names):
        if name in ratings:
            rating, half_width = ratings[name]
            mean[k] = rating / ELO_PER_LOGIT
            variance[k] = min((half_width / Z_95 / ELO_PER_LOGIT) ** 2, UNRATED_SD**2)
    return mean, variance


def _information_gain(mean: np.ndarray, variance: np.ndarray, x: int, others: np.ndarray) -> np.ndarray:
    """(K,) the expected information (nats) of one game between x and each other: the drop of
    (log var(x) + log var(other)) / 2, the entropy of the two beliefs.

    Independent Gaussian beliefs updated by one Bradley-Terry game linearised at the mean (the
    Weng-Lin update with tau = 0): with v = var_x + var_y and I = p (1 - p) the game's Fisher
    information, var_x shrinks by the factor 1 - var_x I / (1 + v I), and var_y alike. p is the win
    probability averaged over the beliefs (the probit approximation), so close ratings and wide
    intervals gain most. Relative drops, not absolute ones: a bot whose games are foregone losses
    (`random`) keeps the wide interval only the prior gives it, and absolute drops chased it for
    nothing (it played 41% of a simulated ladder's games; bench/ratings.py).
    """
    spread = variance[x] + variance[others]
    p = expit((mean[x] - mean[others]) / np.sqrt(1.0 + math.pi * spread / 8.0))
    information = p * (1.0 - p)
    shrink = information / (1.0 + information * spread)  # times a variance: its relative drop, below 1
    return -0.5 * (np.log1p(-variance[x] * shrink) + np.log1p(-variance[others] * shrink))
