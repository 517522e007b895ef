"""The pentanomial SPRT (arena_platform.sprt) and its settings."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.optimize

from arena_platform import sprt
from arena_platform.settings import Settings, SettingsError, load_settings

# Published fishtest results, copied from Stockfish commit messages (github.com/official-stockfish/
# Stockfish), each line as fishtest printed it: "LLR: x (-2.94,2.94) <elo0,elo1> ... Ptnml(0-2): ...".
# Fishtest ran them with its default "normalized" model, so elo0/elo1 are nElo. Columns: commit,
# the test's page on tests.stockfishchess.org/tests/view/, elo0, elo1, pentanomial, printed LLR.
FISHTEST_RESULTS = [
    ("d077f9a81", "6a6dac3ac054e285ae029b30", 0.00, 2.00, (20, 1334, 3810, 1569, 35), "2.95"),
    ("218c74ec4", "6a596dca5529b8472df81060", 0.00, 2.00, (372, 17511, 39320, 17934, 399), "2.93"),
    ("218c74ec4", "6a6508b6c054e285ae028b5f", 0.50, 2.50, (39, 11353, 31686, 11822, 33), "2.96"),
    ("8e3b5b13f", "6a607ab325028d004c922829", 0.00, 2.00, (182, 5438, 13706, 5745, 193), "2.94"),
    ("b52f01471", "6a66bbd3c054e285ae028e0d", -1.75, 0.25, (1721, 77704, 208246, 77189, 1732), "3.19"),
    ("f4bcd4040", "6a4f36355529b8472df7ff7e", 0.00, 2.00, (521, 17154, 37050, 17170, 489), "-2.94"),
    ("f4bcd4040", "6a566a285529b8472df80b84", 0.50, 2.50, (9, 3819, 14395, 4117, 9), "2.94"),
    ("9fcd47a71", "6a3ae7913036e45021aeb4a0", 0.00, 2.00, (336, 8437, 18332, 8798, 209), "-0.01"),
    ("1eff8b038", "6a1143ad818cacc1db0ac14c", -1.75, 0.25, (390, 91902, 261789, 90790, 389), "-2.97"),
    ("c5aef2bf1", "6a60851f25028d004c922860", -1.75, 0.25, (7, 7001, 27083, 7145, 4), "2.94"),
]


@pytest.mark.parametrize(("commit", "test_id", "elo0", "elo1", "pentanomial", "printed"), FISHTEST_RESULTS)
def test_the_llr_matches_fishtest_to_the_printed_precision(commit, test_id, elo0, elo1, pentanomial, printed):
    assert f"{sprt.llr(pentanomial, elo0, elo1):.2f}" == printed


def test_the_bounds_are_walds_and_print_as_fishtests():
    lower, upper = sprt.wald_bounds(0.05, 0.05)
    assert (f"{lower:.2f}", f"{upper:.2f}") == ("-2.94", "2.94")
    assert lower == pytest.approx(math.log(0.05 / 0.95))
    assert sprt.wald_bounds(0.01, 0.1) == pytest.approx((math.log(0.1 / 0.99), math.log(0.9 / 0.01)))


def _best_local_log_likelihood(probs: np.ndarray, constraint, target: float) -> float:
    """Mean log-likelihood of the best local maximum SLSQP finds with constraint(q) = target.

    The t-value's constraint set is not convex, so this tries several starts; the true maximum is
    at least this high.
    """
    starts = [probs, np.full(5, 0.2), *np.random.default_rng(0).dirichlet(np.ones(5), size=3)]
    best = -math.inf
    for start in starts:
        result = scipy.optimize.minimize(
            lambda q: -probs @ np.log(q),
            start,
            method="SLSQP",
            bounds=[(1e-12, 1.0)] * len(probs),
            constraints=[
                {"type": "eq", "fun": lambda q: q.sum() - 1.0},
                {"type": "eq", "fun": lambda q: constraint(q) - target},
            ],
            options={"ftol": 1e-15, "maxiter": 1000},
        )
        if result.success:
            best = max(best, -result.fun)
    return best


def _mean(q):
    return q @ sprt.GAME_SCORES / q.sum()


def _t_value(q):
    q = q / q.sum()
    mean = q @ sprt.GAME_SCORES
    return (mean - 0.5) / math.sqrt(q @ (sprt.GAME_SCORES - mean) ** 2)


def _check_constrained_maximum(probs, fit, constraint, target) -> float:
    """Asserts `fit` meets the constraint and beats every local maximum found; its log-likelihood."""
    assert constraint(fit) == pytest.approx(target, abs=1e-6)
    log_likelihood = float(probs @ np.log(fit))
    assert log_likelihood >= _best_local_log_likelihood(probs, constraint, target) - 1e-9
    return log_likelihood


COUNTS = [(12, 80, 150, 95, 20), (3, 1, 40, 7, 2), (30, 10, 5, 20, 40)]


@pytest.mark.parametrize("counts", COUNTS)
def test_the_logistic_llr_is_the_constrained_maximum_likelihood_ratio(counts):
    pairs, probs = sprt._regularized(counts)
    fits = []
    for elo in (-5.0, 20.0):
        score = sprt._logistic_score(elo)
        fits.append(_check_constrained_maximum(probs, sprt.mle_with_mean(probs, score), _mean, score))
    assert sprt.llr(counts, -5.0, 20.0, model="logistic") == pytest.approx(pairs * (fits[1] - fits[0]))


@pytest.mark.parametrize("counts", COUNTS)
@pytest.mark.parametrize("hypotheses", [(0.0, 25.0), (-100.0, 400.0)])  # 400 nElo needs staged solving
def test_the_normalized_llr_is_the_constrained_maximum_likelihood_ratio(counts, hypotheses):
    pairs, probs = sprt._regularized(counts)
    fits = []
    for nelo in hypotheses:
        t = math.sqrt(2.0) * nelo / sprt.NELO_PER_T
        fits.append(_check_constrained_maximum(probs, sprt.mle_with_t_value(probs, t), _t_value, t))
    assert sprt.llr(counts, *hypotheses) == pytest.approx(pairs * (fits[1] - fits[0]))


def test_swapping_the_hypotheses_negates_the_llr():
    counts = (5, 30, 60, 40, 9)
    for model in ("normalized", "logistic"):
        assert sprt.llr(counts, 10.0, 0.0, model) == pytest.approx(-sprt.llr(counts, 0.0, 10.0, model))


def test_the_result_reports_counts_bounds_verdict_and_elo():
    result = sprt.sprt((20, 1334, 3810, 1569, 35), elo0=0.0, elo1=2.0, alpha=0.05, beta=0.05)
    assert result.verdict == "H1"
    assert f"{result.llr:.2f}" == "2.95"
    assert result.pairs == 6768
    assert result.pentanomial == (20, 1334, 3810, 1569, 35)
    # Total 13536 games, W 3564 L 3299 D 6673 on the test's page: 50.98% is +6.8 Elo.
    assert result.elo == pytest.approx(6.80, abs=0.01)
    assert result.elo_low < result.elo < result.elo_high
    assert result.elo_high - result.elo == pytest.approx(result.elo - result.elo_low, rel=0.01)
    assert result.nelo > 0
    as_json = result.to_dict()
    assert as_json["pentanomial"] == [20, 1334, 3810, 1569, 35]
    assert as_json["model"] == "normalized"

    failed = sprt.sprt((390, 91902, 261789, 90790, 389), elo0=-1.75, elo1=0.25, alpha=0.05, beta=0.05)
    assert failed.verdict == "H0"
    assert f"{failed.llr:.2f}" == "-2.97"
    # Fishtest stopped this one at -2.94 with its overshoot correction; plain Wald bounds go on.
    stopped = sprt.sprt((521, 17154, 37050, 17170, 489), elo0=0.0, elo1=2.0, alpha=0.05, beta=0.05)
    assert stopped.llr > stopped.lower_bound
    assert stopped.verdict == "continue"


def test_the_elo_interval_uses_the_pairs_variance_not_the_games():
    # The same 50% score: pairs that always split 1-1 are certain, pairs of 2-0 or 0-2 are not.
    steady = sprt.elo_estimate((0, 0, 100, 0, 0))
    swingy = sprt.elo_estimate((50, 0, 0, 0, 50))
    assert steady[0] == pytest.approx(0.0, abs=1e-9)
    assert swingy[0] == pytest.approx(0.0, abs=1e-9)
    assert steady[2] - steady[1] < 1.0 < swingy[2] - swingy[1]


def _pair_probabilities(elo: float, draw_ratio: float) -> np.ndarray:
    """Pentanomial cell probabilities of two independent games at `elo` logistic Elo."""
    score = sprt._logistic_score(elo)
    game = np.array([1.0 - score - draw_ratio / 2, draw_ratio, score - draw_ratio / 2])  # L, D, W
    return np.convolve(game, game)


def _wald_expected_pairs(probs: np.ndarray, elo0: float, elo1: float) -> float:
    """Wald's approximation of the pairs to a verdict: the bound over the LLR's drift per pair."""
    many = 10**8
    drift = sprt.llr(np.round(probs * many).astype(int).tolist(), elo0, elo1) / many
    lower, upper = sprt.wald_bounds(0.05, 0.05)
    return (upper if drift > 0 else lower) / drift


def _run_sprt(rng: np.random.Generator, probs: np.ndarray, elo0: float, elo1: float) -> tuple[str, int]:
    """Plays pairs (looked at every 10, as a worker reports them) until a verdict; (verdict, pairs)."""
    counts = np.zeros(5, dtype=int)
    while counts.sum() < 20_000:
        counts += rng.multinomial(10, probs)
        result = sprt.sprt(counts.tolist(), elo0=elo0, elo1=elo1, alpha=0.05, beta=0.05)
        if result.verdict != "continue":
            return result.verdict, result.pairs
    raise AssertionError("the test did not end")


@pytest.mark.parametrize(("elo", "expected_verdict"), [(30.0, "H1"), (0.0, "H0")])
def test_simulated_tests_reach_the_right_verdict_within_the_expected_pairs(elo, expected_verdict):
    settings = Settings()
    probs = _pair_probabilities(elo, draw_ratio=0.1)
    rng = np.random.default_rng(2026)
    runs = [_run_sprt(rng, probs, settings.sprt_elo0, settings.sprt_elo1) for _ in range(20)]
    right = sum(verdict == expected_verdict for verdict, _ in runs)
    assert right >= 18  # each run errs with probability at most 5%
    mean_pairs = sum(pairs for _, pairs in runs) / len(runs)
    assert mean_pairs <= 1.3 * _wald_expected_pairs(probs, settings.sprt_elo0, settings.sprt_elo1)


@pytest.mark.parametrize(
    "counts",
    [(0, 0, 0, 0, 0), (0, 0, 7, 0, 0), (0, 0, 0, 0, 3), (4, 0, 0, 0, 0), (1, 0, 0, 0, 1), (0, 2, 0, 2, 0)],
)
@pytest.mark.parametrize("model", ["normalized", "logistic"])
def test_few_or_degenerate_pairs_continue_without_crashing(counts, model):
    result = sprt.sprt(counts, elo0=0.0, elo1=25.0, alpha=0.05, beta=0.05, model=model)
    assert result.verdict == "continue"
    assert math.isfinite(result.llr)
    assert result.pairs == sum(counts)
    if sum(counts) == 0:
        assert result.llr == 0.0
        assert result.elo is None
        assert result.to_dict()["elo_low"] is None
    else:
        assert result.elo_low <= result.elo <= result.elo_high


def test_many_degenerate_pairs_end_the_test_the_sensible_way():
    def verdict(counts):
        return sprt.sprt(counts, elo0=0.0, elo1=25.0, alpha=0.05, beta=0.05).verdict

    assert verdict((0, 0, 0, 0, 200)) == "H1"
    assert verdict((200, 0, 0, 0, 0)) == "H0"
    assert verdict((0, 0, 2000, 0, 0)) == "H0"  # a draw every pair is not better


def test_pentanomial_counts_come_from_pair_points_and_bad_counts_are_named():
    assert sprt.pentanomial_from_points([2.0, 1.0, 1.0, 0.5, 0]) == (1, 1, 2, 0, 1)
    with pytest.raises(ValueError, match=r"0, 0\.5, 1, 1\.5 or 2 points"):
        sprt.pentanomial_from_points([2.5])
    with pytest.raises(ValueError, match="5 counts"):
        sprt.llr((1, 2, 3), 0.0, 2.0)
    with pytest.raises(ValueError, match="non-negative integers"):
        sprt.llr((1, -2, 3, 0, 0), 0.0, 2.0)
    with pytest.raises(ValueError, match="'normalized' or 'logistic'"):
        sprt.llr((0, 0, 0, 0, 0), 0.0, 2.0, model="bayeselo")
    with pytest.raises(ValueError, match=r"between 0 and 0\.5"):
        sprt.sprt((1, 2, 3, 4, 5), elo0=0.0, elo1=2.0, alpha=0.0, beta=0.05)


def test_the_sprt_settings_default_like_fishtest_and_come_from_the_environment():
    def sprt_settings(s: Settings) -> tuple[float, float, float, float]:
        return s.sprt_elo0, s.sprt_elo1, s.sprt_alpha, s.sprt_beta

    assert sprt_settings(Settings()) == (0.0, 25.0, 0.05, 0.05)
    loaded = load_settings({"ARENA_SPRT_ELO0": "-1.5", "ARENA_SPRT_ELO1": "10", "ARENA_SPRT_ALPHA": "0.01"})
    assert sprt_settings(loaded) == (-1.5, 10.0, 0.01, 0.05)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"ARENA_SPRT_ELO0": "5", "ARENA_SPRT_ELO1": "5"}, "ARENA_SPRT_ELO0 must be below ARENA_SPRT_ELO1"),
        ({"ARENA_SPRT_ELO1": "inf"}, "ARENA_SPRT_ELO1 must be a finite number"),
        ({"ARENA_SPRT_ELO0": "nan"}, "ARENA_SPRT_ELO0 must be a finite number"),
        ({"ARENA_SPRT_ALPHA": "0"}, "ARENA_SPRT_ALPHA must be between 0 and 0.5"),
        ({"ARENA_SPRT_BETA": "0.7"}, "ARENA_SPRT_BETA must be between 0 and 0.5"),
        ({"ARENA_SPRT_BETA": "five"}, "ARENA_SPRT_BETA must be float"),
    ],
)
def test_bad_sprt_settings_are_refused_with_the_variable_named(environ, message):
    with pytest.raises(SettingsError, match=message):
        load_settings(environ)
