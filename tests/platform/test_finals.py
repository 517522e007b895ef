"""The final of a competition (issue 26 items 3 and 7): its schedule, its extra rounds, its ranking
with ties, the statistics of its intervals and probabilities, and its exports."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from bench_modules import load_bench

from arena_bots.loading import house_player
from arena_bots.match import play
from arena_games.registry import get_game
from arena_platform.finals.export import (
    COLUMNS,
    RANKING_FORMAT,
    ranking_csv,
    ranking_json,
    ranking_rows,
    replay_file_name,
    write_replay_zip,
)
from arena_platform.finals.ranking import TIE_LEVEL, FinalRanking, rank_final
from arena_platform.finals.schedule import (
    FinalPairing,
    FinalPlan,
    extra_round,
    round_robin,
    round_robin_size,
    unsettled_pairs,
)
from arena_platform.local_view import load_game
from arena_platform.ratings import GameResult
from arena_platform.store.pairings import pairing_seed

bench = load_bench("ratings")  # the project's rating-accuracy method: paired_games, covered


def played(pairing: FinalPairing, points_of_a: float) -> list[GameResult]:
    """The pairing's two games, seats swapped, in which bot_a scores `points_of_a` of 2 (0 .. 2 by halves)."""
    first_game = min(points_of_a, 1.0)
    return [
        GameResult(f"{pairing.number}-0", str(pairing.bot_a), str(pairing.bot_b), first_game),
        GameResult(
            f"{pairing.number}-1", str(pairing.bot_b), str(pairing.bot_a), 1.0 - (points_of_a - first_game)
        ),
    ]


# --- The schedule ---


def test_the_round_robin_gives_every_pair_the_same_pairings_round_by_round():
    plan = FinalPlan(entrants=(12, 3, 7, 40), pairs_per_pair=3, seed=11)
    schedule = round_robin(plan)
    assert len(schedule) == round_robin_size(4, 3) == 18
    every_pair = itertools.combinations((3, 7, 12, 40), 2)
    assert Counter((p.bot_a, p.bot_b) for p in schedule) == dict.fromkeys(every_pair, 3)
    assert [p.round for p in schedule] == sorted(p.round for p in schedule)  # round by round
    assert [p.number for p in schedule] == list(range(18))
    assert round_robin_size(100, 4) == 19_800  # issue 26's scale


def test_the_schedule_and_its_seeds_are_fixed_by_the_plan():
    """The same plan (entrants in any order) gives the same list; each pairing's seed is derived from
    the final's seed as a ladder derives a pairing's, so each pairing has its own opening."""
    plan = FinalPlan(entrants=(1, 2, 3, 4, 5), pairs_per_pair=2, seed=2026)
    schedule = round_robin(plan)
    assert round_robin(FinalPlan(entrants=(5, 3, 1, 4, 2), pairs_per_pair=2, seed=2026)) == schedule
    assert [p.seed for p in schedule] == [pairing_seed(2026, p.number) for p in schedule]
    assert len({p.seed for p in schedule}) == len(schedule)
    other_seeds = [
        p.seed for p in round_robin(FinalPlan(entrants=(1, 2, 3, 4, 5), pairs_per_pair=2, seed=2027))
    ]
    assert not set(other_seeds) & {p.seed for p in schedule}


@pytest.mark.parametrize(
    ("entrants", "pairs", "extra_rounds", "reason"),
    [
        ((1, 1, 2), 1, 0, "listed twice"),
        ((1,), 1, 0, "at least 2 entrants"),
        ((1, 2), 0, 0, "at least 1"),
        ((1, 2), 1, -1, "0 or more"),
    ],
)
def test_a_bad_plan_is_refused_with_its_reason(entrants, pairs, extra_rounds, reason):
    with pytest.raises(ValueError, match=reason):
        FinalPlan(entrants=entrants, pairs_per_pair=pairs, seed=0, max_extra_rounds=extra_rounds)


def four_entrants() -> tuple[FinalPlan, list[FinalPairing], list[GameResult]]:
    """1 well above 2 and 3, who are even, well above 4: 5 pairings per pair of entrants."""
    plan = FinalPlan(entrants=(1, 2, 3, 4), pairs_per_pair=5, seed=3, extra_pairs=2, max_extra_rounds=2)
    schedule = round_robin(plan)
    even = (2, 3)  # the others: the lower id scores 9 points of 10 (1 of 2 in round 0, then 2 of 2)
    results = [
        game
        for p in schedule
        for game in played(p, 1.0 if (p.bot_a, p.bot_b) == even or not p.round else 2.0)
    ]
    return plan, schedule, results


def test_an_extra_round_replays_the_unsettled_neighbours_up_to_the_cap():
    plan, schedule, results = four_entrants()
    ranking = rank_final(results, plan.entrants)
    assert [sorted(pair) for pair in unsettled_pairs(ranking)] == [[2, 3]]
    extra = extra_round(plan, schedule, ranking)
    assert [(p.round, p.bot_a, p.bot_b) for p in extra] == [(5, 2, 3), (5, 2, 3)]  # extra_pairs = 2
    assert [p.number for p in extra] == [30, 31]
    assert [p.seed for p in extra] == [pairing_seed(3, 30), pairing_seed(3, 31)]
    second = extra_round(plan, schedule + extra, ranking)
    assert [p.round for p in second] == [6, 6]
    assert extra_round(plan, schedule + extra + second, ranking) == []  # the cap: 2 extra rounds


def test_a_settled_ranking_gets_no_extra_round_and_extra_rounds_follow_the_round_robin():
    plan = FinalPlan(entrants=(1, 2, 3), pairs_per_pair=6, seed=0)
    schedule = round_robin(plan)
    results = [game for p in schedule for game in played(p, 2.0 if p.bot_a + 1 == p.bot_b else 1.5)]
    ranking = rank_final(results, plan.entrants)
    assert unsettled_pairs(ranking) == []
    assert extra_round(plan, schedule, ranking) == []
    with pytest.raises(ValueError, match="round robin is not all scheduled"):
        extra_round(plan, schedule[:3], ranking)
    with pytest.raises(ValueError, match="whole schedule so far"):
        extra_round(plan, schedule[1:], ranking)


# --- The ranking ---


def test_the_ranking_shares_the_rank_of_an_unsettled_pair():
    plan, _, results = four_entrants()
    ranking = rank_final(results, plan.entrants)
    assert [row.entrant for row in ranking.rows][0::3] == [1, 4]
    assert [row.rank for row in ranking.rows] == [1, 2, 2, 4]
    assert [row.tied for row in ranking.rows] == [False, True, True, False]
    probabilities = [row.stronger_than_next for row in ranking.rows]
    assert probabilities[0] > TIE_LEVEL
    assert probabilities[2] > TIE_LEVEL
    assert probabilities[1] == pytest.approx(0.5)
    assert probabilities[3] is None
    assert all(row.interval_low < row.rating < row.interval_high for row in ranking.rows)
    assert [row.games for row in ranking.rows] == [30] * 4


def test_ties_chain_along_unsettled_neighbours():
    """Three entrants a step apart that no pair settles share one rank."""
    plan = FinalPlan(entrants=(1, 2, 3, 4), pairs_per_pair=2, seed=0)
    schedule = round_robin(plan)
    results = [
        game for p in schedule for game in played(p, 2.0 if p.bot_b == 4 else 1.0 + 0.5 * (p.number % 2))
    ]
    ranks = [row.rank for row in rank_final(results, plan.entrants).rows]
    assert ranks == [1, 1, 1, 4]


def test_the_probability_is_the_normal_approximation_of_the_fitted_difference():
    """Two entrants, 60% over 400 games: P = Phi(d / s) with s of a binomial proportion's logit."""
    results = [GameResult(f"g{k}", "1", "2", 1.0 if k % 5 < 3 else 0.0) for k in range(400)]
    top = rank_final(results, (1, 2)).rows[0]
    logit_error = 1.0 / math.sqrt(400 * 0.6 * 0.4)
    expected = 0.5 * (1.0 + math.erf(math.log(0.6 / 0.4) / logit_error / math.sqrt(2.0)))
    assert top.entrant == 1
    assert top.stronger_than_next == pytest.approx(expected, abs=0.005)


def test_an_entrant_without_games_is_listed_last_unrated_and_strangers_are_refused():
    results = [GameResult("g", "1", "2", 1.0), GameResult("h", "2", "1", 0.5)]
    ranking = rank_final(results, (1, 2, 9))
    last = ranking.rows[-1]
    assert (last.entrant, last.rating, last.interval_low, last.games) == (9, None, None, 0)
    assert ranking.rows[-2].stronger_than_next is None
    assert last.tied
    with pytest.raises(ValueError, match="not entrants of the final: 7"):
        rank_final([*results, GameResult("x", "1", "7", 1.0)], (1, 2))


# --- The statistics: simulated finals of entrants of known strength ---

SIMULATED_FINALS = 150  # about 1 s
SIMULATED_ENTRANTS = 8


def simulated_final(seed: int) -> tuple[FinalRanking, dict[str, float]]:
    """A final of 8 entrants with true Elo uniform in [-150, 150], 4 pairings per pair of entrants,
    outcomes from the Bradley-Terry model with draws (bench/ratings.py's `paired_games`)."""
    rng = np.random.default_rng(seed)
    plan = FinalPlan(entrants=tuple(range(SIMULATED_ENTRANTS)), pairs_per_pair=4, seed=seed)
    truth = rng.uniform(-150.0, 150.0, SIMULATED_ENTRANTS)
    results = bench.paired_games(rng, np.array([(p.bot_a, p.bot_b) for p in round_robin(plan)]), truth)
    return rank_final(results, plan.entrants), {str(e): float(truth[e]) for e in plan.entrants}


def test_simulated_finals_cover_the_truth_and_their_probabilities_are_calibrated():
    """150 simulated finals: the 95% intervals cover the truth (measured as they measure it, relative
    to the entrants' weighted mean) at about 95% (measured 0.970: a little wide, as the ladder's with
    30% draws and few games), and the adjacent pairs' probabilities are calibrated: the higher
    entrant is the stronger about as often as they say (0.706 said, 0.687 right), and at least
    about TIE_LEVEL of the time among the pairs shown settled (0.973 of 74)."""
    covered, said, right = [], [], []
    for seed in range(SIMULATED_FINALS):
        ranking, truth = simulated_final(seed)
        covered.extend(bench.covered(ranking.table, truth))
        for higher, lower in itertools.pairwise(ranking.rows):
            said.append(higher.stronger_than_next)
            right.append(truth[str(higher.entrant)] > truth[str(lower.entrant)])
    said, right = np.array(said), np.array(right)
    settled = said >= TIE_LEVEL
    assert 0.93 <= np.mean(covered) <= 0.99
    assert abs(np.mean(said) - np.mean(right)) <= 0.04
    assert np.mean(right[settled]) >= TIE_LEVEL - 0.02


# --- The exports ---


def test_the_ranking_exports_as_csv_and_json_with_the_documented_columns():
    ranking = rank_final([GameResult("g", "1", "2", 1.0), GameResult("h", "2", "1", 0.5)], (1, 2, 9))
    names = {1: "alpha", 2: "beta", 9: "gamma"}
    lines = list(csv.DictReader(io.StringIO(ranking_csv(ranking, names))))
    assert tuple(lines[0]) == COLUMNS
    assert [line["name"] for line in lines] == ["alpha", "beta", "gamma"]
    assert (lines[2]["rating"], lines[2]["tied"], lines[1]["stronger_than_next"]) == ("", "1", "")
    assert float(lines[0]["rating"]) == round(ranking.rows[0].rating, 1)
    document = json.loads(ranking_json(ranking, names))
    assert document["format"] == RANKING_FORMAT
    assert document["tie_level"] == TIE_LEVEL
    assert document["entrants"] == ranking_rows(ranking, names)
    assert tuple(document["entrants"][0]) == COLUMNS
    assert document["entrants"][2]["rating"] is None


def test_the_replay_zip_opens_in_arena_view(tmp_path: Path):
    """Two Bobail games of a pairing, zipped; extracted, `arena view`'s reader loads each file."""
    game = get_game("bobail")
    pairing = FinalPairing(number=41, round=0, bot_a=7, bot_b=12, seed=pairing_seed(5, 41))
    players = [
        house_player("random", simulations=1, name="seven"),
        house_player("random", simulations=1, name="twelve"),
    ]
    opening = game.opening(pairing.seed, None)
    replays = [
        (
            replay_file_name(pairing, index),
            play(game, seats, pairing.seed, opening=opening).replay.to_json().encode(),
        )
        for index, seats in enumerate((players, players[::-1]))
    ]
    target = tmp_path / "final.zip"
    with target.open("wb") as out:
        assert write_replay_zip(out, replays) == 2
    with zipfile.ZipFile(target) as archive:
        assert archive.namelist() == ["000041-7-vs-12-game0.json", "000041-7-vs-12-game1.json"]
        archive.extractall(tmp_path / "replays")
    for number, name in enumerate(sorted((tmp_path / "replays").iterdir()), start=1):
        shown = load_game(number, name)
        assert shown.summary.steps > len(opening)
    assert [load_game(1, tmp_path / "replays" / replays[1][0]).summary.first.name] == ["twelve"]


@pytest.mark.parametrize(
    ("name", "reason"), [("../x.json", "plain .json name"), ("a.txt", "plain .json name")]
)
def test_the_replay_zip_refuses_unsafe_names(name: str, reason: str):
    with pytest.raises(ValueError, match=reason):
        write_replay_zip(io.BytesIO(), [(name, b"{}")])
    with pytest.raises(ValueError, match="two replays are named"):
        write_replay_zip(io.BytesIO(), [("a.json", b"{}"), ("a.json", b"{}")])


def test_a_whole_final_plays_its_extra_rounds_until_settled_or_capped():
    """The loop the competition runs: the round robin, then extra rounds while any are due, each
    played whole before the next is asked for; the extra games settle neighbours they are between."""
    rng = np.random.default_rng(7)
    plan = FinalPlan(entrants=(1, 2, 3, 4, 5), pairs_per_pair=2, seed=7, extra_pairs=8, max_extra_rounds=3)
    truth = np.array([0.0, -300.0, -100.0, 0.0, 100.0, 300.0])  # by entrant id; index 0 unused
    schedule = round_robin(plan)
    results = played_final(rng, schedule, truth)
    unsettled_before = len(unsettled_pairs(rank_final(results, plan.entrants)))
    while extra := extra_round(plan, schedule, rank_final(results, plan.entrants)):
        results += played_final(rng, extra, truth, first_game=2 * len(schedule))
        schedule += extra
    assert max(p.round for p in schedule) < plan.pairs_per_pair + plan.max_extra_rounds
    assert len(unsettled_pairs(rank_final(results, plan.entrants))) < unsettled_before


def played_final(
    rng: np.random.Generator, schedule: list[FinalPairing], truth: np.ndarray, first_game: int = 0
) -> list[GameResult]:
    """The schedule's pairings played as bench/ratings.py's `paired_games` plays them, game ids
    from `first_game` on (a later round's ids follow the earlier rounds')."""
    games = bench.paired_games(rng, np.array([(p.bot_a, p.bot_b) for p in schedule]), truth)
    return [GameResult(str(first_game + int(g.game_id)), g.first, g.second, g.score) for g in games]
