"""Bradley-Terry ratings: the fit's known cases, its hard cases, and its accuracy through the scheduler."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
import scipy.optimize
from bench_modules import load_bench
from scipy.special import expit

from arena_platform.ratings import (
    DISPERSION_PRIOR_GAMES,
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

bench = load_bench("ratings")  # the project's rating-accuracy method (simulated ladders)


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
    results = games("strong", "house", wins=3000, losses=1000)
    table = fit_ratings(results, anchors={"house"})
    assert table["strong"].rating == pytest.approx(400 * math.log10(3), abs=1.0)
    assert table["house"].rating == 0.0
    assert table.anchors == ("house",)
    assert [row.bot for row in table.rows] == ["strong", "house"]
    # Each interval is against the ladder, here the two bots' mean: each holds half the difference's.
    against_house = fit_ratings(results, anchors={"house"}, reference={"house"})
    assert against_house["house"].half_width == pytest.approx(0.0, abs=1e-6)
    difference = against_house["strong"].half_width
    assert difference == pytest.approx(Z_95 * math.sqrt(1 / (4000 * 0.75 * 0.25)) * ELO_PER_LOGIT, rel=0.01)
    assert table["strong"].half_width == pytest.approx(difference / 2)
    assert table["house"].half_width == pytest.approx(difference / 2)
    with pytest.raises(ValueError, match="no bot of the reference"):
        fit_ratings(results, anchors={"house"}, reference={"stranger"})


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
    bc_table = fit_ratings(triangle(), anchors={"b", "c", "never-played"})
    by_bc = ratings(bc_table)
    no_house = fit_ratings(triangle(), anchors=set())
    assert by_a["a"] == 0.0
    assert bc_table.anchors == ("b", "c")
    assert sum(row.anchor_weight * row.rating for row in bc_table.rows) == pytest.approx(0.0, abs=1e-9)
    assert sum(row.anchor_weight * row.rating for row in no_house.rows) == pytest.approx(0.0, abs=1e-9)
    assert no_house.anchors == ("a", "b", "c")
    for bot in "abc":
        assert by_a[bot] - by_a["b"] == pytest.approx(by_bc[bot] - by_bc["b"], abs=1e-6)


def test_the_fit_is_the_documented_maximum_of_likelihood_plus_prior():
    """An independent brute-force fit of the model in the module's docstring, with one anchor, and
    its intervals: each bot's rating less the information-weighted mean of all (every bot here has
    scored against, and conceded to, the others), its variance scaled by the Pearson dispersion."""
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
    r = np.concatenate([[0.0], optimum.x])
    p = expit(r[first] - r[second])
    information = np.bincount(first, p * (1 - p), 4) + np.bincount(second, p * (1 - p), 4)
    reference = information / information.sum()
    contrasts = (np.eye(4) - reference)[:, 1:]  # r_i - reference @ r, over the free ratings b, c, d
    pearson = np.sum((score - p) ** 2 / (p * (1 - p)))
    dispersion = (pearson + DISPERSION_PRIOR_GAMES) / (len(results) - 3 + DISPERSION_PRIOR_GAMES)
    variances = dispersion * np.einsum("ij,jk,ik->i", contrasts, np.linalg.inv(hessian), contrasts)
    expected_half_widths = Z_95 * np.sqrt(variances) * ELO_PER_LOGIT
    assert [table[bot].half_width for bot in bots] == pytest.approx(expected_half_widths, rel=0.01)
    assert [table[bot].reference_weight for bot in bots] == pytest.approx(reference, rel=1e-4)


def test_intervals_shrink_with_more_games_and_end_the_provisional_state():
    first = fit_ratings(games("a", "h", wins=6, losses=4), anchors={"h"})["a"]
    few = fit_ratings(games("a", "h", wins=36, losses=24), anchors={"h"})["a"]
    many = fit_ratings(games("a", "h", wins=1440, losses=960), anchors={"h"})["a"]
    assert many.half_width == pytest.approx(few.half_width / math.sqrt(40), rel=0.05)
    assert first.provisional
    assert first.half_width > PROVISIONAL_HALF_WIDTH
    assert not many.provisional
    assert first.interval_low < first.rating < first.interval_high


def test_draws_narrow_the_intervals_by_the_observed_dispersion():
    """A game's score spreads less when it can be drawn: 60% draws at even odds spread it by 0.4 of
    the p (1 - p) of a won-or-lost game, and the variance scales by the observed spread."""
    decisive = fit_ratings(games("a", "h", wins=1000, losses=1000), anchors={"h"})["a"]
    drawish = fit_ratings(games("a", "h", wins=400, draws=1200, losses=400), anchors={"h"})["a"]
    decisive_pearson, drawish_pearson = 2000, 800  # sums of (s - 1/2)^2 / (1/4) over the games
    spread = (drawish_pearson + DISPERSION_PRIOR_GAMES) / (decisive_pearson + DISPERSION_PRIOR_GAMES)
    assert drawish.half_width / decisive.half_width == pytest.approx(math.sqrt(spread), rel=1e-3)


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
    anchored = games("a", "h", 60, 20, 40) + games("a", "b", 50, 20, 50) + games("b", "h", 50, 20, 50)
    table = fit_ratings(anchored + games("x", "y", 60, 20, 40), anchors={"h"})
    # The ladder is the larger part, a-b-h; x-y is measured as well as a-h, but its level against
    # the ladder rests on the prior alone.
    assert [table[bot].reference_weight > 0 for bot in "abhxy"] == [True] * 3 + [False] * 2
    alone = fit_ratings(games("x", "y", 60, 20, 40), anchors={"y"})["x"].rating
    assert table["x"].rating - table["y"].rating == pytest.approx(alone, rel=0.05)
    assert table["x"].half_width > 4 * table["a"].half_width
    assert all(math.isfinite(row.rating) for row in table.rows)
    assert table["x"].provisional
    assert table["y"].provisional


# A Bobail-like ladder (issue 23 item 9): `random` loses every game, `uct` is the other house bot.
BOBAIL_LIKE = {"random": -math.inf, "uct": 0.0} | {f"up{k}": -100.0 + 100 * k for k in range(6)}


def expected_games(first: str, second: str, count: int, elo_difference: float) -> list[GameResult]:
    """`count` games scored as the Bradley-Terry model expects them, draws 30% at even odds."""
    p = expit(elo_difference / ELO_PER_LOGIT)
    draws = round(count * 0.3 * 4 * p * (1 - p))
    wins = round(count * p - draws / 2)
    return games(first, second, wins, draws, count - wins - draws)


def bobail_like_ladder(games_per_pair: int, newcomer_games_per_opponent: int) -> list[GameResult]:
    """Every pair of BOBAIL_LIKE, and a newcomer at +200 Elo against each of them."""
    truth = BOBAIL_LIKE | {"newcomer": 200.0}
    played = {"newcomer": newcomer_games_per_opponent}
    return [
        game
        for a, b in itertools.combinations(truth, 2)
        for game in expected_games(b, a, played.get(b, games_per_pair), truth[b] - truth[a])
    ]


def test_a_house_bot_that_lost_every_game_neither_anchors_nor_widens_the_intervals():
    """Issue 23 item 9: `random`, whose rating only the prior places, was half the anchor, and every
    interval carried its uncertainty: a newcomer stayed provisional after 600 games."""
    table = fit_ratings(bobail_like_ladder(40, 75), anchors={"random", "uct"})
    newcomer, random_bot = table["newcomer"], table["random"]
    assert (newcomer.games, random_bot.losses) == (600, 7 * 40 + 75)
    assert table.anchors == ("uct",)
    assert table["uct"].rating == 0.0
    assert random_bot.reference_weight == 0.0
    assert random_bot.provisional  # its rating rests on the prior: it stays wide
    assert newcomer.half_width <= PROVISIONAL_HALF_WIDTH
    assert not newcomer.provisional
    assert newcomer.interval_low <= 200.0 <= newcomer.interval_high


def test_the_scale_stays_put_while_a_house_bot_keeps_losing():
    """`random` sinks as its losses pile up (only the prior holds it); the other ratings stay."""
    before = fit_ratings(bobail_like_ladder(40, 75), anchors={"random", "uct"})
    opponents = BOBAIL_LIKE.keys() - {"random"}
    more_losses = [game for opponent in opponents for game in games("random", opponent, losses=100)]
    after = fit_ratings(bobail_like_ladder(40, 75) + more_losses, anchors={"random", "uct"})
    assert after["random"].rating < before["random"].rating - 100
    for bot in [*opponents, "newcomer"]:
        assert after[bot].rating == pytest.approx(before[bot].rating, abs=1.0)


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
    coverage = np.mean(bench.covered(table, dict(zip(names, elo, strict=True))))
    assert 0.93 <= coverage <= 0.97


# --- Rating accuracy: simulated bots of known strength through the production scheduler and fit ---
# (bench/ratings.py's simulated ladders: the bench runs many, these tests a few).

LADDER_BOTS = 36
HOUSE_BOTS = 3
ROUNDS = 200


def test_rating_accuracy_through_the_scheduler():
    """36 bots from -300 to +300 Elo, 3 of them house bots, 200 rounds: each rating (on the anchored
    scale) within 1.3 times the error of a bot scoring 50% over as many games, and the intervals
    cover the truth measured as they measure it."""
    squared_errors, bounds_squared, covered = [], [], []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        names = [f"bot{k:02d}" for k in range(LADDER_BOTS)]
        truth = dict(zip(names, rng.uniform(-300, 300, LADDER_BOTS), strict=True))
        ladder = bench.SimulatedLadder(truth=truth, house=frozenset(names[:HOUSE_BOTS]), joins={})
        *_, table = bench.play_ladder(ladder, ROUNDS, rng)
        anchor_level = sum(row.anchor_weight * truth[row.bot] for row in table.rows)
        for row in table.rows:
            squared_errors.append((row.rating - (truth[row.bot] - anchor_level)) ** 2)
            bounds_squared.append(2 * ELO_PER_LOGIT**2 * 4 / row.games)  # 2: the anchor's error and the bot's
        covered.extend(bench.covered(table, truth))
    rmse, bound = math.sqrt(np.mean(squared_errors)), math.sqrt(np.mean(bounds_squared))
    assert rmse <= bound, f"RMSE {rmse:.1f} Elo against a bound of {bound:.1f}"
    assert np.mean(covered) >= 0.9


def test_a_newcomer_settles_within_600_games_on_a_ladder_with_random():
    """Issue 23 item 9: on a 9-bot ladder whose house bots include `random` (it loses every game),
    a newcomer's half-width reaches the provisional bound within 600 of its games, and intervals
    cover the truth at every refit (the bench measures 0.93-0.97 over 200 ladders)."""
    runs = [bench.run_newcomer_ladder(seed) for seed in range(4)]
    assert max(run.games_to_settle() for run in runs) <= 600
    assert 0.9 <= np.mean([hit for run in runs for hit in run.coverage]) <= 0.99
