"""The scheduler: introductions first, then 70% informative and 30% random pairings, shared fairly."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from arena_platform.scheduling import (
    LadderBot,
    LadderState,
    Pairing,
    SchedulePolicy,
    next_pairings,
    task_groups,
)

HOUSE = (LadderBot("house-random", is_house=True), LadderBot("house-mcts", is_house=True, created=1))
REGULARS = tuple(LadderBot(f"bot{k}", created=10 + k) for k in range(6))


def introduced(bots: tuple[LadderBot, ...], house_pairings: int = 2) -> Counter[tuple[str, str]]:
    """Played counts with every introduction complete."""
    played: Counter[tuple[str, str]] = Counter()
    for a, b in itertools.combinations(bots, 2):
        played[(a.name, b.name)] = house_pairings if a.is_house or b.is_house else 1
    return played


def spread_ratings(bots: tuple[LadderBot, ...]) -> dict[str, tuple[float, float]]:
    """Ratings 100 Elo apart, +-60 each."""
    return {bot.name: (100.0 * k, 60.0) for k, bot in enumerate(bots)}


def play_rounds(
    bots: tuple[LadderBot, ...], played: Counter, rounds: int, per_round: int, seed: int
) -> list[list[Pairing]]:
    """Rounds of booking pairings and finishing them all before the next round."""
    rng = np.random.default_rng(seed)
    booked = []
    for _ in range(rounds):
        pairings = next_pairings(LadderState(bots, played, {}, spread_ratings(bots)), per_round, rng)
        played.update((p.first, p.second) for p in pairings)
        booked.append(pairings)
    return booked


def opponents_in_order(booked: list[list[Pairing]], bot: str) -> list[Pairing]:
    return [p for pairings in booked for p in pairings if bot in (p.first, p.second)]


def other(pairing: Pairing, bot: str) -> str:
    return pairing.second if pairing.first == bot else pairing.first


def test_a_new_bot_plays_the_house_bots_then_a_round_robin_first():
    ladder = HOUSE + REGULARS
    newcomer = LadderBot("newcomer", created=99)
    booked = play_rounds((*ladder, newcomer), introduced(ladder), rounds=12, per_round=4, seed=1)
    own = opponents_in_order(booked, "newcomer")
    house_pairs, round_robin = own[:4], own[4:10]
    assert Counter(other(p, "newcomer") for p in house_pairs) == {"house-random": 2, "house-mcts": 2}
    assert sorted(other(p, "newcomer") for p in round_robin) == [bot.name for bot in REGULARS]
    assert all(p.reason == "introduction" for p in own[:10])
    assert all(p.reason != "introduction" for p in own[10:])
    # Meanwhile the other bots keep playing: the newcomer never holds all the workers.
    assert all(len(pairings) == 4 for pairings in booked)


def test_on_a_new_ladder_every_bot_meets_the_house_bots_before_anyone_else():
    ladder = HOUSE + REGULARS
    booked = play_rounds(ladder, Counter(), rounds=30, per_round=3, seed=2)
    for bot in REGULARS:
        own = opponents_in_order(booked, bot.name)
        assert {other(p, bot.name) for p in own[:4]} == {"house-random", "house-mcts"}
        assert {other(p, bot.name) for p in own[:10]} == {b.name for b in ladder} - {bot.name}
    introductions = [p for pairings in booked for p in pairings if p.reason == "introduction"]
    assert len(introductions) == 2 + 2 * 2 * len(REGULARS) + len(REGULARS) * (len(REGULARS) - 1) // 2


def test_seventy_percent_of_settled_pairings_go_where_they_teach_the_most():
    ladder = HOUSE + REGULARS
    block = SchedulePolicy().block
    booked = play_rounds(ladder, introduced(ladder), rounds=1000, per_round=block, seed=3)
    assert all(len(set(pairings)) == 1 for pairings in booked)  # each round one block: one choice
    reasons = Counter(pairings[0].reason for pairings in booked)
    assert reasons["introduction"] == 0
    share = reasons["informative"] / reasons.total()
    assert share == pytest.approx(0.7, abs=3 * np.sqrt(0.21 / reasons.total()))
    ratings = spread_ratings(ladder)

    def mean_gap(reason: str) -> float:
        gaps = [
            abs(ratings[p.first][0] - ratings[p.second][0]) for b in booked for p in b if p.reason == reason
        ]
        return float(np.mean(gaps))

    assert mean_gap("informative") < 0.6 * mean_gap("random")


def test_the_informative_opponent_is_close_and_uncertain():
    bots = (LadderBot("me"), LadderBot("close-wide"), LadderBot("close-narrow"), LadderBot("far-wide"))
    played = introduced(bots)
    played.update(
        {("close-wide", "close-narrow"): 5, ("close-narrow", "far-wide"): 5, ("close-wide", "far-wide"): 5}
    )
    ratings = {
        "me": (0.0, 100.0),
        "close-wide": (20.0, 150.0),
        "close-narrow": (10.0, 10.0),
        "far-wide": (700.0, 150.0),
    }
    state = LadderState(bots, played, {}, ratings)
    always_informative = SchedulePolicy(informative_share=1.0)
    [pairing] = next_pairings(state, 1, np.random.default_rng(0), always_informative)
    assert (pairing.first, pairing.second, pairing.reason) == ("me", "close-wide", "informative")


def test_a_bot_whose_games_are_foregone_losses_is_not_the_informative_opponent():
    """`random` loses every game, so only the prior places it and its interval stays wide, while a
    game against it teaches next to nothing. Counting absolute variance drops, the scheduler chose
    it anyway (it played 41% of a simulated 9-bot ladder's games, bench/ratings.py)."""
    bots = (LadderBot("me"), LadderBot("random"), LadderBot("peer"))
    played = introduced(bots)
    played[("random", "peer")] += 1  # `me` has played least: it picks the opponent
    ratings = {"me": (0.0, 60.0), "random": (-1200.0, 320.0), "peer": (50.0, 60.0)}
    state = LadderState(bots, played, {}, ratings)
    [pairing] = next_pairings(state, 1, np.random.default_rng(0), SchedulePolicy(informative_share=1.0))
    assert (pairing.first, pairing.second) == ("me", "peer")


def test_no_bot_exceeds_its_in_flight_cap_and_games_are_shared_fairly():
    """Asynchronous workers: each step one pairing finishes and the free workers get new ones."""
    ladder = HOUSE + REGULARS
    played, in_flight = introduced(ladder), Counter()
    rng = np.random.default_rng(4)
    workers = 5
    for _ in range(600):
        state = LadderState(ladder, played, dict(in_flight), spread_ratings(ladder))
        for p in next_pairings(state, workers - in_flight.total(), rng):
            in_flight[(p.first, p.second)] += 1
        per_bot = Counter(name for pair, count in in_flight.items() for name in pair for _ in range(count))
        assert max(per_bot.values()) <= SchedulePolicy().max_in_flight
        finished = list(in_flight.elements())[rng.integers(in_flight.total())]
        in_flight[finished] -= 1
        played[finished] += 1
    totals = Counter(name for pair, count in played.items() for name in pair for _ in range(count))
    assert max(totals.values()) <= 1.05 * min(totals.values())  # about 160 pairings each


def test_the_cap_stops_booking_when_every_bot_is_busy():
    ladder = HOUSE + REGULARS
    busy = {("bot0", "bot1"): SchedulePolicy().max_in_flight, ("bot2", "bot3"): 1}
    state = LadderState(ladder, introduced(ladder), busy, spread_ratings(ladder))
    pairings = next_pairings(state, 100, np.random.default_rng(5))
    in_flight = Counter(name for p in pairings for name in (p.first, p.second))
    in_flight.update(name for pair, count in busy.items() for name in pair for _ in range(count))
    assert max(in_flight.values()) <= SchedulePolicy().max_in_flight
    assert "bot0" not in {name for p in pairings for name in (p.first, p.second)}
    assert len(pairings) < 100


def test_a_newcomer_and_a_priority_pair_are_booked_while_their_opponents_are_at_their_cap():
    cap = SchedulePolicy().max_in_flight
    busy = {("house-random", "house-mcts"): cap, ("bot0", "bot1"): cap}
    bots = (*HOUSE, LadderBot("bot0", created=10), LadderBot("bot1", created=11))
    late = LadderBot("late", created=20)
    rng = np.random.default_rng(6)
    waiting = LadderState((*bots, late), introduced(bots), busy, {})
    assert next_pairings(waiting, 4, rng) == []  # the round in progress holds every creditor's room
    arrived = LadderState((*bots, LadderBot("late", created=20, newcomer=True)), introduced(bots), busy, {})
    introduction = next_pairings(arrived, 4, rng)
    assert [p.reason for p in introduction] == ["introduction"] * 4
    assert Counter(other(p, "late") for p in introduction) == {"house-random": 2, "house-mcts": 2}
    tested = next_pairings(waiting, cap + 1, rng, priority=[("late", "bot0")])
    assert tested == [Pairing("late", "bot0", "priority")] * cap  # the new version's room only


def test_leagues_never_meet_and_each_bot_owes_its_own_league_only():
    """Two leagues, each with its house boss: every pairing, introduction or settled, stays within
    one league, and both leagues play; a priority pair across leagues is skipped; a league of one
    bot books nothing."""
    bots = (
        LadderBot("boss-low", is_house=True, league=0),
        LadderBot("boss-high", is_house=True, created=1, league=1),
        *(LadderBot(f"low{k}", created=10 + k, league=0) for k in range(3)),
        *(LadderBot(f"high{k}", created=20 + k, league=1) for k in range(2)),
    )
    league = {bot.name: bot.league for bot in bots}
    played: Counter[tuple[str, str]] = Counter()
    rng = np.random.default_rng(9)
    booked = []
    for _ in range(30):
        pairings = next_pairings(LadderState(bots, played, {}, {}), 4, rng, priority=[("low0", "high0")])
        played.update((p.first, p.second) for p in pairings)
        booked += pairings
    assert all(league[p.first] == league[p.second] for p in booked)
    assert {league[p.first] for p in booked} == {0, 1}
    assert {p.reason for p in booked} >= {"introduction", "informative"}
    assert played[("low0", "boss-low")] + played[("boss-low", "low0")] >= SchedulePolicy().house_pairings
    alone = (LadderBot("boss", is_house=True, league=1), LadderBot("a", league=0), LadderBot("b", league=0))
    assert {
        frozenset((p.first, p.second)) for p in next_pairings(LadderState(alone, {}, {}, {}), 8, rng)
    } == {frozenset(("a", "b"))}


def test_the_same_seed_gives_the_same_pairings():
    ladder = HOUSE + REGULARS
    first = play_rounds(ladder, Counter(), rounds=40, per_round=3, seed=6)
    again = play_rounds(ladder, Counter(), rounds=40, per_round=3, seed=6)
    other_seed = play_rounds(ladder, Counter(), rounds=40, per_round=3, seed=7)
    assert first == again
    assert first != other_seed


def test_tiny_ladders_and_inactive_bots():
    rng = np.random.default_rng(8)
    lonely = LadderState((LadderBot("alone"),), {("alone", "retired"): 3}, {}, {})
    assert next_pairings(lonely, 5, rng) == []
    pair = LadderState((LadderBot("a"), LadderBot("b")), {("retired", "a"): 7}, {}, {})
    assert next_pairings(pair, 0, rng) == []
    assert next_pairings(pair, 1, rng) == [Pairing("b", "a", "introduction")]


def test_a_chosen_pair_is_booked_as_a_block_within_the_count_and_both_bots_room():
    ladder = HOUSE + REGULARS
    policy = SchedulePolicy(block=4, max_in_flight=6)
    rng = np.random.default_rng(9)
    for count in (4, 3):
        state = LadderState(ladder, introduced(ladder), {}, spread_ratings(ladder))
        first = next_pairings(state, count, rng, policy)
        assert len(first) == count
        assert len(set(first)) == 1  # one pair, `count` pairings of it
    # bot0 and bot1 have room for 2 more each: a block between them is cut to 2
    two_bots = (LadderBot("bot0"), LadderBot("bot1"))
    busy = LadderState(two_bots, {("bot0", "bot1"): 1}, {("bot0", "bot1"): 4}, {})
    assert next_pairings(busy, 10, rng, policy) == [next_pairings(busy, 1, rng, policy)[0]] * 2


def test_task_groups_keep_blocks_and_a_new_bots_round_robin_together():
    pairs = [("a", "b"), ("c", "d"), ("a", "b"), ("new", "a"), ("new", "c"), ("c", "d"), ("new", "e")]
    pairs += [("a", "b"), ("c", "d"), ("a", "b"), ("d", "c")]
    groups = task_groups(pairs, 4)
    assert sorted(index for group in groups for index in group) == list(range(len(pairs)))
    as_pairs = [sorted({pairs[index] for index in group}) for group in groups]
    assert as_pairs == [[("a", "b")], [("c", "d"), ("d", "c")], [("new", "a"), ("new", "c"), ("new", "e")]]
    assert [len(group) for group in task_groups(pairs, 3)] == [3, 3, 3, 1, 1]
    with pytest.raises(ValueError, match="size"):
        task_groups(pairs, 0)
