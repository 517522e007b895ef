"""Bradley-Terry ratings: the fit's known cases, its hard cases, and its accuracy through the scheduler."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest
import scipy.optimize
from scipy.special import expit

from arena_platform.ratings import (
    ELO_PER_LOGIT,
    PROVISIONAL_HALF_WIDTH,
    Z_95,
    GameResult,
    RatingTable,
    count_pair_arrays,
    count_pairs,
    fit_pair_counts,
    fit_ratings,
)
from arena_platform.scheduling import LadderBot, LadderState, next_pairings


def games(first: str, second: str, wins: int = 0, draws: int = 0, losses: int = 0) -> list[GameResult]:
    """Results of `first` against `second`, seats alternating, with ids unique to the pair."""
    scores = [1.0] * wins + [0.5] * draws + [0.0] * losses
    return [
        GameResult(f"{first}-{second}-{k}", *((first, second, s) if k % 2 else (second, first, 1.0 - s)))
        for k, s in enumerate(scores)
    ]


def ratings(table: RatingTable) -> dict[str, float]:
    return {row.bot: row.rating for row in table.rows}


def test_a_75_percent_score_is_about_191_elo():
    table = fit_ratings(games("strong", "house", wins=3000, losses=1000), anchors={"house"})
    assert table["strong"].rating == pytest.approx(400 * math.log10(3), abs=1.0)
    assert table["house"].rating == 0.0
    assert table["house"].half_width == pytest.approx(0.0, abs=1e-6)  # a single anchor is the origin
    assert table.anchors == ("house",)
    assert [row.bot for row in table.rows] == ["strong", "house"]


def test_draws_count_half():
    half_wins = fit_ratings(games("a", "h", wins=500, draws=500), anchors={"h"})
    three_to_one = fit_ratings(games("a", "h", wins=750, losses=250), anchors={"h"})
    assert half_wins["a"].rating == pytest.approx(three_to_one["a"].rating, abs=1e-9)
    all_draws = fit_ratings(games("a", "h", draws=20), anchors={"h"})
    split = fit_ratings(games("a", "h", wins=10, losses=10), anchors={"h"})
    assert all_draws["a"].rating == pytest.approx(split["a"].rating, abs=1e-9)
    row = half_wins["a"]
    assert (row.games, row.wins, row.draws, row.losses) == (1000, 500, 500, 0)
    assert (half_wins["h"].wins, half_wins["h"].draws, half_wins["h"].losses) == (0, 500, 500)


def triangle() -> list[GameResult]:
    return games("a", "b", 30, 10, 20) + games("b", "c", 25, 5, 30) + games("a", "c", 40, 0, 20)


def test_the_anchor_mean_is_pinned_to_zero_and_only_shifts_the_scale():
    by_a = ratings(fit_ratings(triangle(), anchors={"a"}))
    by_bc = ratings(fit_ratings(triangle(), anchors={"b", "c", "never-played"}))
    no_house = fit_ratings(triangle(), anchors=set())
    assert by_a["a"] == 0.0
    assert by_bc["b"] + by_bc["c"] == pytest.approx(0.0, abs=1e-9)
    assert sum(ratings(no_house).values()) == pytest.approx(0.0, abs=1e-9)
    assert no_house.anchors == ("a", "b", "c")
    for bot in "abc":
        assert by_a[bot] - by_a["b"] == pytest.approx(by_bc[bot] - by_bc["b"], abs=1e-6)


def test_the_fit_is_the_documented_maximum_of_likelihood_plus_prior():
    """An independent brute-force fit of the model in the module's docstring, with one anchor."""
    results = triangle() + games("c", "d", 3, 1, 4) + games("a", "d", 5, 0, 0)
    bots = ["a", "b", "c", "d"]  # anchor: a, pinned to 0
    first = np.array([bots.index(g.first) for g in results])
    second = np.array([bots.index(g.second) for g in results])
    score = np.array([g.score for g in results])

    def negative_log_posterior(free: np.ndarray) -> float:
        r = np.concatenate([[0.0], free])
        p = expit(r[first] - r[second])
        likelihood = np.sum(score * np.log(p) + (1 - score) * np.log(1 - p))
        above = r - r.mean()
        prior = np.sum(np.log(expit(above)) + np.log(expit(-above)))  # 2 virtual draws: 1 point won, 1 lost
        return -(likelihood + prior)

    optimum = scipy.optimize.minimize(
        negative_log_posterior, np.zeros(3), method="BFGS", options={"gtol": 1e-9}
    )
    table = fit_ratings(results, anchors={"a"})
    assert [table[bot].rating for bot in bots[1:]] == pytest.approx(optimum.x * ELO_PER_LOGIT, abs=0.01)

    def at(shift: np.ndarray) -> float:
        return negative_log_posterior(optimum.x + shift)

    step = 1e-4  # the observed information by central second differences
    hessian = np.empty((3, 3))
    for i, j in np.ndindex(3, 3):
        di, dj = np.eye(3)[i] * step, np.eye(3)[j] * step
        hessian[i, j] = (at(di + dj) - at(di - dj) - at(dj - di) + at(-di - dj)) / (4 * step**2)
    expected_half_widths = Z_95 * np.sqrt(np.diag(np.linalg.inv(hessian))) * ELO_PER_LOGIT
    assert [table[bot].half_width for bot in bots[1:]] == pytest.approx(expected_half_widths, rel=0.01)


def test_intervals_shrink_with_more_games_and_end_the_provisional_state():
    few = fit_ratings(games("a", "h", wins=30, draws=10, losses=20), anchors={"h"})["a"]
    many = fit_ratings(games("a", "h", wins=1200, draws=400, losses=800), anchors={"h"})["a"]
    assert many.half_width == pytest.approx(few.half_width / math.sqrt(40), rel=0.05)
    assert few.provisional
    assert few.half_width > PROVISIONAL_HALF_WIDTH
    assert not many.provisional
    assert few.interval_low < few.rating < few.interval_high


def test_a_perfect_score_stays_finite():
    table = fit_ratings(
        games("winner", "house", wins=10) + games("loser", "house", losses=10), anchors={"house"}
    )
    assert all(math.isfinite(row.rating) and math.isfinite(row.half_width) for row in table.rows)
    assert 200 < table["winner"].rating < 800
    assert -800 < table["loser"].rating < -200
    assert table["winner"].provisional


def test_bots_without_games_are_listed_unrated():
    table = fit_ratings(games("a", "h", wins=3, losses=1), anchors={"h"}, bots={"a", "h", "newcomer"})
    newcomer = table["newcomer"]
    assert table.rows[-1] is newcomer
    assert newcomer.rating is None
    assert newcomer.provisional
    assert (newcomer.interval_low, newcomer.interval_high) == (-math.inf, math.inf)
    assert newcomer.games == 0
    assert "newcomer" not in table.estimates()
    empty = fit_ratings([], anchors={"h"}, bots={"h"})
    assert empty["h"].rating is None
    assert empty.anchors == ()
    with pytest.raises(KeyError):
        table["stranger"]


def test_a_disconnected_comparison_graph_gets_finite_ratings_and_wide_intervals():
    table = fit_ratings(games("a", "h", 60, 20, 40) + games("x", "y", 60, 20, 40), anchors={"h"})
    # x-y is measured as well as a-h, but their level against the anchor rests on the prior alone.
    assert table["x"].rating - table["y"].rating == pytest.approx(table["a"].rating, rel=0.05)
    assert table["x"].half_width > 4 * table["a"].half_width
    assert all(math.isfinite(row.rating) for row in table.rows)
    assert table["x"].provisional
    assert table["y"].provisional


def test_order_and_duplicate_deliveries_give_the_same_table():
    results = triangle() + games("c", "d", 3, 1, 4)
    again = results + results[::3]
    random.Random(7).shuffle(again)
    assert fit_ratings(again, anchors={"a"}) == fit_ratings(results, anchors={"a"})


def test_a_game_id_with_two_different_results_is_an_error():
    with pytest.raises(ValueError, match="two different results"):
        fit_ratings([GameResult("g1", "a", "b", 1.0), GameResult("g1", "a", "b", 0.0)], anchors=())


@pytest.mark.parametrize(("first", "second", "score"), [("a", "a", 1.0), ("a", "b", 0.7), ("a", "b", 2)])
def test_invalid_results_are_refused(first, second, score):
    with pytest.raises(ValueError, match=r"itself|must be 0, 0\.5 or 1"):
        GameResult("g", first, second, score)


def test_pair_counts_from_results_and_from_arrays_agree():
    results = triangle()
    by_results = count_pairs(results, bots={"z"})
    bots = by_results.bots
    assert bots == ("a", "b", "c", "z")
    by_arrays = count_pair_arrays(
        bots,
        np.array([bots.index(g.first) for g in results]),
        np.array([bots.index(g.second) for g in results]),
        np.array([g.score for g in results]),
    )
    for field in ("low", "high", "low_wins", "draws", "high_wins"):
        assert np.array_equal(getattr(by_results, field), getattr(by_arrays, field))
    assert by_results.low.tolist() == [0, 0, 1]
    assert by_results.high.tolist() == [1, 2, 2]
    assert by_results.games.tolist() == [60, 60, 60]
    assert by_results.low_score.tolist() == [35.0, 40.0, 27.5]
    with pytest.raises(ValueError, match="out of range"):
        count_pair_arrays(("a", "b"), np.array([0]), np.array([2]), np.array([1.0]))


def test_a_big_ladder_converges_where_objective_values_are_mostly_rounding():
    """400 bots, 2,000,000 games (with draws): near the optimum the value (~1e6 nats) changes by less
    than its rounding, and a line search that insisted on a decrease never stopped on this ladder."""
    rng = np.random.default_rng(0)
    bots, games_played = 400, 2_000_000
    elo = rng.normal(0.0, 250.0, bots)
    first = rng.integers(0, bots, games_played)
    second = (first + rng.integers(1, bots, games_played)) % bots
    p = expit((elo[first] - elo[second]) / ELO_PER_LOGIT)
    draw, u = 1.2 * p * (1 - p), rng.random(games_played)
    score = np.where(u < p - draw / 2, 1.0, np.where(u < p + draw / 2, 0.5, 0.0))
    names = tuple(f"bot{k:03d}" for k in range(bots))
    table = fit_pair_counts(count_pair_arrays(names, first, second, score), anchors=names[:3])
    truth = elo - elo[:3].mean()
    covered = [
        table[name].interval_low <= truth[k] <= table[name].interval_high for k, name in enumerate(names)
    ]
    assert np.mean(covered) >= 0.9


# --- Rating accuracy: simulated bots of known strength through the production scheduler and fit. ---

LADDER_BOTS = 36
HOUSE_BOTS = 3
ROUNDS = 200  # each round books up to PAIRINGS_PER_ROUND pairings, plays them all, then refits
PAIRINGS_PER_ROUND = 18
DRAW_RATE = 0.3  # the draw probability of an even game; 4 p (1 - p) of it in general


def simulate_ladder(seed: int) -> tuple[dict[str, float], list[GameResult]]:
    """True Elo per bot (aligned so the house mean is 0, the fit's convention) and every game played."""
    rng = np.random.default_rng(seed)
    bots = tuple(LadderBot(f"bot{k:02d}", is_house=k < HOUSE_BOTS, created=k) for k in range(LADDER_BOTS))
    strength = dict(zip([bot.name for bot in bots], rng.uniform(-300, 300, LADDER_BOTS), strict=True))
    house_mean = np.mean([strength[bot.name] for bot in bots if bot.is_house])
    true_elo = {name: elo - house_mean for name, elo in strength.items()}
    anchors = {bot.name for bot in bots if bot.is_house}
    results: list[GameResult] = []
    played: Counter[tuple[str, str]] = Counter()
    estimates: dict[str, tuple[float, float]] = {}
    for round_ in range(ROUNDS):
        state = LadderState(bots=bots, played=played, in_flight={}, ratings=estimates)
        for k, pairing in enumerate(next_pairings(state, PAIRINGS_PER_ROUND, rng)):
            played[(pairing.first, pairing.second)] += 1
            for seat, (a, b) in enumerate([(pairing.first, pairing.second), (pairing.second, pairing.first)]):
                p = 1.0 / (1.0 + 10.0 ** ((true_elo[b] - true_elo[a]) / 400.0))
                draw = DRAW_RATE * 4 * p * (1 - p)
                u = rng.random()
                score = 1.0 if u < p - draw / 2 else 0.5 if u < p + draw / 2 else 0.0
                results.append(GameResult(f"{round_}-{k}-{seat}", a, b, score))
        estimates = fit_ratings(results, anchors).estimates()
    return true_elo, results


def test_rating_accuracy_through_the_scheduler():
    squared_errors, bounds_squared, covered = [], [], []
    for seed in range(4):
        true_elo, results = simulate_ladder(seed)
        anchors = {f"bot{k:02d}" for k in range(HOUSE_BOTS)}
        table = fit_ratings(results, anchors)
        redelivered = results + results[: len(results) // 3]
        random.Random(seed).shuffle(redelivered)
        assert fit_ratings(redelivered, anchors) == table

        games_per_bot = 2 * len(results) / LADDER_BOTS
        for bot, truth in true_elo.items():
            row = table[bot]
            squared_errors.append((row.rating - truth) ** 2)
            bounds_squared.append(347.0**2 / games_per_bot)
            covered.append(row.interval_low <= truth <= row.interval_high)
    rmse, bound = math.sqrt(np.mean(squared_errors)), math.sqrt(np.mean(bounds_squared))
    assert rmse <= 1.3 * bound, f"RMSE {rmse:.1f} Elo against a bound of {bound:.1f}"
    assert np.mean(covered) >= 0.9
