"""Fishtest-style pentanomial SPRT: is a bot's new version better than its previous one?

Pure functions over plain numbers (no I/O, no clock). The unit of evidence is a *pair*: two games
from the same opening with seats swapped (ARCHITECTURE §4). A pair scores 0, 0.5, 1, 1.5 or 2 points
for the new version; a pentanomial is the five counts of pairs per score, in that order (fishtest's
"Ptnml(0-2)": LL, LD+DL, LW+DD+WL, DW+WD, WW).

The test (the model fishtest uses for its tests today, after Michel Van den Bergh's notes
"Normalized Elo, practical considerations" and "Support for MLE multinomial"):
- A pair's outcome is a draw from an unknown distribution p over the five pair scores, written as
  per-game scores a = (0, 1/4, 1/2, 3/4, 1). H0 says the new version's Elo advantage is elo0, H1
  that it is elo1; alpha is the chance of accepting H1 when H0 holds, beta of accepting H0 when H1
  holds.
- `normalized` (the default, fishtest's "normalized" model): Elo is *normalized Elo* (nElo), the
  t-value (mu - 1/2) / sigma of a game's score, scaled by 800 / ln 10 so that nElo equals
  logistic Elo for small differences between players who never draw. For pairs the t-value is
  sqrt(2) times larger (a pair's mean has half a game's variance). Because it divides by the spread,
  nElo measures how quickly a test can tell the versions apart, whatever the draw rate.
- `logistic` (fishtest's "logistic" model): Elo is the logistic Elo of the mean score,
  mu = 1 / (1 + 10^(-elo / 400)), the scale of the ladder's Bradley-Terry ratings.
- The statistic is the generalized log-likelihood ratio: under each hypothesis, p is the maximum
  likelihood distribution that satisfies the hypothesis's constraint (on the t-value or on the
  mean), and LLR = sum over pairs of ln p1(pair) - ln p0(pair). Empty cells of the pentanomial get a
  small prior (REGULARIZER pairs), so every constrained maximum exists.
- Wald's bounds: accept H0 at LLR <= ln(beta / (1 - alpha)), H1 at LLR >= ln((1 - beta) / alpha).
  Fishtest also corrects the bounds for the LLR's overshoot as a test runs; we keep the plain Wald
  bounds, so a test here may stop a few pairs later than fishtest would.

Arena's defaults (Settings.sprt_*): the normalized model with elo0 = 0 and elo1 = 25 nElo, alpha =
beta = 0.05. Fishtest tests patches at <0, 2> nElo (short time control) and <0.5, 2.5> (long); see
settings.py for why ours is wider.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import scipy.optimize

from arena_platform.ratings import ELO_PER_LOGIT, Z_95

Model = Literal["normalized", "logistic"]
Verdict = Literal["H1", "H0", "continue"]

PAIR_POINTS = (0.0, 0.5, 1.0, 1.5, 2.0)  # the new version's points in a pair, per pentanomial cell
GAME_SCORES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])  # the same, as a mean score per game
NELO_PER_T = 800.0 / math.log(10.0)  # nElo per unit of a game's t-value, (mu - 1/2) / sigma
REGULARIZER = 1e-3  # pairs put in each empty pentanomial cell before fitting
MAX_FIXED_POINT_STEPS = 200  # for the t-value constrained maximum likelihood
FIXED_POINT_TOLERANCE = 1e-12  # largest change of a probability between steps at convergence
T_VALUE_TOLERANCE = 1e-6  # the answer's t-value is the target's within this, or it is refused
MAX_CONTINUATION_STAGES = 64  # for t-values far from 0 (see mle_with_t_value)
SCORE_CLIP = 1e-3  # Elo estimates clip the mean score to [SCORE_CLIP, 1 - SCORE_CLIP]


@dataclass(frozen=True)
class SprtResult:
    """The state of one test; Elo figures are the new version's advantage over the old one."""

    llr: float  # nats
    lower_bound: float  # nats: H0 is accepted at or below it
    upper_bound: float  # nats: H1 is accepted at or above it
    verdict: Verdict  # "H1": better, "H0": not better, "continue": play more pairs
    pentanomial: tuple[int, int, int, int, int]  # pairs scoring 0, 0.5, 1, 1.5, 2 points
    pairs: int
    elo0: float  # the hypotheses, in the model's unit
    elo1: float
    alpha: float
    beta: float
    model: Model
    elo: float | None  # logistic Elo from the mean score; None before the first pair
    elo_low: float | None  # 95% interval of `elo`, from the pentanomial's variance
    elo_high: float | None
    nelo: float | None  # normalized Elo estimate (the unit of the default model)

    def to_dict(self) -> dict:
        """JSON-safe: lists for tuples, None where no estimate exists yet."""
        out = asdict(self)
        out["pentanomial"] = list(self.pentanomial)
        return out


def wald_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """(lower, upper) LLR bounds in nats for error rates alpha, beta in (0, 1/2)."""
    if not (0.0 < alpha < 0.5 and 0.0 < beta < 0.5):
        raise ValueError(f"SPRT error rates must be between 0 and 0.5, got alpha={alpha}, beta={beta}")
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def pentanomial_from_points(pair_points: Iterable[float]) -> tuple[int, int, int, int, int]:
    """Counts per pentanomial cell from each pair's points for the new version (0 to 2 by 0.5)."""
    counts = [0] * len(PAIR_POINTS)
    for points in pair_points:
        if points not in PAIR_POINTS:
            raise ValueError(f"a pair scores 0, 0.5, 1, 1.5 or 2 points, got {points!r}")
        counts[PAIR_POINTS.index(points)] += 1
    return tuple(counts)


def check_pentanomial(counts: Sequence[int]) -> tuple[int, int, int, int, int]:
    """The counts as a tuple of five non-negative integers, or ValueError naming the problem."""
    if len(counts) != len(PAIR_POINTS):
        raise ValueError(f"a pentanomial has 5 counts (pairs scoring 0 to 2 points), got {len(counts)}")
    if any(int(c) != c or c < 0 for c in counts):
        raise ValueError(f"pentanomial counts must be non-negative integers, got {list(counts)}")
    return tuple(int(c) for c in counts)


def _regularized(counts: Sequence[int]) -> tuple[float, np.ndarray]:
    """(pairs, empirical probabilities per cell), empty cells set to REGULARIZER pairs first."""
    weights = np.array([c if c > 0 else REGULARIZER for c in counts], dtype=float)
    total = float(weights.sum())
    return total, weights / total


def _mean_var(probs: np.ndarray) -> tuple[float, float]:
    """Mean and variance of a game's score (per-pair mean) under cell probabilities `probs`."""
    mean = float(probs @ GAME_SCORES)
    return mean, float(probs @ (GAME_SCORES - mean) ** 2)


def _tilt(probs: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """The maximum likelihood distribution q near `probs` with sum q * shifts = 0.

    Lagrange's condition gives q_i = probs_i / (1 + x shifts_i) where x solves the secular equation
    sum probs_i shifts_i / (1 + x shifts_i) = 0; its left side falls monotonically from +inf to -inf
    on the interval that keeps every q_i positive, so the root is unique. Needs shifts of both signs.
    """
    if not shifts.min() < 0.0 < shifts.max():
        raise ArithmeticError("no distribution near the data meets the constraint")
    low, high = -1.0 / shifts.max(), -1.0 / shifts.min()

    def secular(x: float) -> float:
        return float(probs @ (shifts / (1.0 + x * shifts)))

    margin = 1e-12 * (high - low)
    while secular(low + margin) <= 0.0 or secular(high - margin) >= 0.0:
        margin /= 1e3  # the root hugs a pole when a cell's probability is tiny
        if margin < 1e-300:
            raise ArithmeticError("secular equation has no bracketed root")
    x = scipy.optimize.brentq(secular, low + margin, high - margin, xtol=1e-15, rtol=1e-15, maxiter=500)
    tilted = probs / (1.0 + x * shifts)
    return tilted / tilted.sum()


def mle_with_mean(probs: np.ndarray, mean: float) -> np.ndarray:
    """Most likely cell probabilities, given the empirical `probs`, whose mean game score is `mean`."""
    return _tilt(probs, GAME_SCORES - mean)


def mle_with_t_value(probs: np.ndarray, t: float) -> np.ndarray:
    """Most likely cell probabilities, given the empirical `probs`, whose (mu - 1/2) / sigma is `t`.

    Solved by `_t_value_fixed_point` from the uniform distribution. Far from it (|t| above about 1,
    200 nElo) one linearization may admit no distribution at all; then the target is approached in
    `steps` equal stages, each starting from the last one's answer, doubling `steps` until it works.
    """
    steps = 1
    while True:
        estimate = np.full_like(probs, 1.0 / len(probs))
        try:
            for stage in range(1, steps + 1):
                estimate = _t_value_fixed_point(probs, t * stage / steps, estimate)
            return estimate
        except ArithmeticError:
            if steps >= MAX_CONTINUATION_STAGES:
                raise
            steps *= 2


def _t_value_fixed_point(probs: np.ndarray, t: float, estimate: np.ndarray) -> np.ndarray:
    """The t-value constrained maximum, iterated from `estimate`; ArithmeticError if it fails.

    The constraint is not linear in the probabilities, so this iterates: linearize it around the
    current estimate q (mean mu, deviation sigma) as the shifts
    a_i - 1/2 - t (sigma^2 + (a_i - mu)^2) / (2 sigma), whose q-weighted sum is the constraint's
    residual mu - 1/2 - t sigma, tilt the empirical distribution to zero them, and repeat until the
    estimate stops moving.
    """
    for _ in range(MAX_FIXED_POINT_STEPS):
        mean, var = _mean_var(estimate)
        sigma = math.sqrt(var)
        shifts = GAME_SCORES - 0.5 - t * (var + (GAME_SCORES - mean) ** 2) / (2.0 * sigma)
        previous, estimate = estimate, _tilt(probs, shifts)
        if np.abs(estimate - previous).max() < FIXED_POINT_TOLERANCE:
            break
    mean, var = _mean_var(estimate)
    if not abs((mean - 0.5) / math.sqrt(var) - t) < T_VALUE_TOLERANCE:
        raise ArithmeticError(f"the t-value constrained likelihood did not converge (t = {t})")
    return estimate


def _logistic_score(elo: float) -> float:
    """Expected game score of a player `elo` logistic Elo stronger."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def llr(counts: Sequence[int], elo0: float, elo1: float, model: Model = "normalized") -> float:
    """Generalized log-likelihood ratio (nats) of H1: elo = elo1 against H0: elo = elo0.

    `counts` is a pentanomial; elo0 and elo1 are in nElo for "normalized", logistic Elo for
    "logistic". Zero pairs give 0.
    """
    counts = check_pentanomial(counts)
    if model not in ("normalized", "logistic"):
        raise ValueError(f"the SPRT model is 'normalized' or 'logistic', got {model!r}")
    if sum(counts) == 0:
        return 0.0
    pairs, probs = _regularized(counts)
    if model == "normalized":
        fit0, fit1 = (mle_with_t_value(probs, math.sqrt(2.0) * e / NELO_PER_T) for e in (elo0, elo1))
    else:
        fit0, fit1 = (mle_with_mean(probs, _logistic_score(e)) for e in (elo0, elo1))
    return pairs * float(probs @ (np.log(fit1) - np.log(fit0)))


def _score_to_elo(score: float) -> float:
    """Logistic Elo of a mean game score, clipped to [SCORE_CLIP, 1 - SCORE_CLIP]."""
    score = min(max(score, SCORE_CLIP), 1.0 - SCORE_CLIP)
    return ELO_PER_LOGIT * math.log(score / (1.0 - score))


def elo_estimate(counts: Sequence[int]) -> tuple[float, float, float, float] | None:
    """(elo, low, high, nelo) for the new version from a pentanomial; None without pairs.

    elo is the logistic Elo of the mean game score, [low, high] its 95% interval from the normal
    approximation of the mean over pairs (the pentanomial's own variance, so correlated games of a
    pair are counted right), nelo the normalized Elo (mu - 1/2) / sigma_game * 800 / ln 10 with
    sigma_game = sqrt(2) times a pair's standard deviation. Regularized like the LLR.
    """
    counts = check_pentanomial(counts)
    if sum(counts) == 0:
        return None
    pairs, probs = _regularized(counts)
    mean, var = _mean_var(probs)
    half_width = Z_95 * math.sqrt(var / pairs)
    nelo = (mean - 0.5) / math.sqrt(2.0 * var) * NELO_PER_T
    return (
        _score_to_elo(mean),
        _score_to_elo(mean - half_width),
        _score_to_elo(mean + half_width),
        nelo,
    )


def sprt(
    counts: Sequence[int],
    *,
    elo0: float,
    elo1: float,
    alpha: float,
    beta: float,
    model: Model = "normalized",
) -> SprtResult:
    """The test's state after the pairs in `counts` (a pentanomial, new version's points)."""
    counts = check_pentanomial(counts)
    lower, upper = wald_bounds(alpha, beta)
    value = llr(counts, elo0, elo1, model)
    verdict: Verdict = "H1" if value >= upper else "H0" if value <= lower else "continue"
    estimate = elo_estimate(counts)
    elo, elo_low, elo_high, nelo = estimate if estimate is not None else (None, None, None, None)
    return SprtResult(
        llr=value,
        lower_bound=lower,
        upper_bound=upper,
        verdict=verdict,
        pentanomial=counts,
        pairs=sum(counts),
        elo0=elo0,
        elo1=elo1,
        alpha=alpha,
        beta=beta,
        model=model,
        elo=elo,
        elo_low=elo_low,
        elo_high=elo_high,
        nelo=nelo,
    )
