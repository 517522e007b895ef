"""Bradley-Terry ratings of a ladder: pure functions over plain data (ARCHITECTURE §5).

The model: bot i scores against bot j with expectation sigmoid(r_i - r_j), with r in logits; a draw
counts as half a win for each side. We fit r by maximum likelihood on *pair counts* (wins, draws and
losses per unordered pair), so a refit costs time in the number of bots and pairs, never games.

Conventions, all documented here once:
- Scale: Elo, ELO_PER_LOGIT = 400 / ln 10 Elo per logit (a 75% score is about +191 Elo).
- Measured bots: those whose ratings the games determine, i.e. the largest strongly connected
  components of the graph with an edge i -> j when i scored (won or drew) against j (Zermelo's
  condition: the likelihood alone has a finite maximum for them relative to each other). A bot that
  lost every game (`random` on most ladders) is not measured: only the prior places it, and its
  rating sinks as its losses pile up.
- Information: a bot's information is sum over its games of p (1 - p) at the fitted ratings (the
  Fisher information of its rating given its opponents'); weighted means below weigh each bot by it,
  so a bot whose games say little about it (few games, or lopsided ones) counts little.
- Anchor (the scale's zero): the information-weighted mean rating of the measured house bots is
  pinned to 0 Elo (of all measured bots on a ladder where no house bot is measured). House bots
  play every newcomer and never retire, so the zero stays put as bots come and go; a rating reads
  as "Elo above the ladder's house bots".
- Prior: every rated bot gets `prior_draws` virtual drawn games (default 2) against the average
  rated bot (a virtual opponent at the mean of all ratings). This keeps the estimate finite for a
  bot that won or lost every game and ties every component of a disconnected comparison graph to
  the rest (with a wide interval). A bot with n real games at even odds moves towards the average
  by at most about 2 prior_draws / n logits (under 7 Elo after 100 games). The prior depends on
  rating differences only, so the fit is invariant under a shift and the anchor is a pure choice
  of origin.
- Intervals: what a user asks is where a bot stands on the ladder, so a bot's 95% interval is that
  of its rating relative to the ladder's reference, the information-weighted mean of the measured
  bots (from the inverse of the observed information, likelihood plus prior), drawn around its
  anchored rating. It leaves out how well the anchor itself is placed against the reference: that
  error moves every rating alike and changes no comparison, and counting it made every interval
  as wide as the worst-measured house bot's. Variances scale by the ladder's dispersion: the model
  spreads a game's score by p (1 - p), as if every game were won or lost; draws spread scores less
  (about 0.7 of that with 30% draws at even odds) and bots beating each other in circles more, so
  the observed spread per degree of freedom (Pearson's, over games between measured bots), shrunk
  towards 1 by DISPERSION_PRIOR_GAMES, multiplies the variances (quasi-likelihood, as a
  quasi-binomial GLM does). A bot stays provisional until its half-width is within
  PROVISIONAL_HALF_WIDTH Elo. `reference` replaces the ladder's reference by given bots (the
  interval of a difference from one bot, say).
- Idempotence: results are keyed by a unique game id. The same games delivered in any order, once
  or several times, give the same table bit for bit: duplicates collapse, counts are integers, and
  bots are indexed by sorted name.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph
from scipy.special import expit

ELO_PER_LOGIT = 400.0 / math.log(10.0)
Z_95 = 1.959963984540054  # two-sided 95% quantile of the standard normal
PROVISIONAL_HALF_WIDTH = 50.0  # Elo
DEFAULT_PRIOR_DRAWS = 2.0  # virtual drawn games per bot against the average bot
DISPERSION_PRIOR_GAMES = 100.0  # games' worth of belief that scores spread as the model says
MAX_NEWTON_STEPS = 100
MAX_HALVINGS = 30
NEWTON_TOLERANCE = 1e-9  # logits: stop when a Newton step moves no rating further than this
FULL_STEP_DECREASE = 1e-6  # nats: below this predicted decrease, Newton steps are taken whole
SCORES = (0.0, 0.5, 1.0)  # loss, draw, win, from the first bot's point of view


@dataclass(frozen=True)
class GameResult:
    """One finished game. `score` is the first bot's: 1 win, 0.5 draw, 0 loss. Seats do not matter."""

    game_id: str  # unique per game: a result delivered twice counts once
    first: str
    second: str
    score: float

    def __post_init__(self) -> None:
        if self.first == self.second:
            raise ValueError(f"game {self.game_id}: a bot cannot play itself ({self.first})")
        if self.score not in SCORES:
            raise ValueError(f"game {self.game_id}: score must be 0, 0.5 or 1, not {self.score!r}")


@dataclass(frozen=True, eq=False)
class PairCounts:
    """Game outcomes aggregated per unordered pair of bots: the fit's whole input.

    Index k in the arrays means bots[k]. Rows are unique pairs with low < high, sorted by (low, high).
    All arrays have shape (P,) and dtype int64; a pair played low_wins + draws + high_wins games.
    """

    bots: tuple[str, ...]
    low: np.ndarray
    high: np.ndarray
    low_wins: np.ndarray
    draws: np.ndarray
    high_wins: np.ndarray

    @property
    def games(self) -> np.ndarray:
        """(P,) games per pair."""
        return self.low_wins + self.draws + self.high_wins

    @property
    def low_score(self) -> np.ndarray:
        """(P,) points the low bot scored against the high one, draws counting half."""
        return self.low_wins + 0.5 * self.draws


def unique_results(results: Iterable[GameResult]) -> list[GameResult]:
    """The results with duplicate game ids collapsed, sorted by game id.

    A game id delivered twice with different contents is an error, not a choice to make silently.
    """
    by_id: dict[str, GameResult] = {}
    for result in results:
        known = by_id.setdefault(result.game_id, result)
        if known != result:
            raise ValueError(f"game {result.game_id} was delivered with two different results")
    return [by_id[game_id] for game_id in sorted(by_id)]


def count_pairs(results: Iterable[GameResult], bots: Collection[str] = ()) -> PairCounts:
    """Pair counts of a set of results keyed by game id (duplicates collapse).

    `bots` adds bots that may have no games yet; the index is every bot named, sorted by name.
    """
    games = unique_results(results)
    names = tuple(sorted({*bots, *(g.first for g in games), *(g.second for g in games)}))
    index = {name: k for k, name in enumerate(names)}
    first = np.array([index[g.first] for g in games], dtype=np.int64)
    second = np.array([index[g.second] for g in games], dtype=np.int64)
    score = np.array([g.score for g in games], dtype=np.float64)
    return count_pair_arrays(names, first, second, score)


def count_pair_arrays(
    bots: tuple[str, ...], first: np.ndarray, second: np.ndarray, score: np.ndarray
) -> PairCounts:
    """Pair counts from arrays of games, vectorised: the path for bulk loads and benchmarks.

    first, second: (G,) integer indices into `bots`; score: (G,) the first bot's score in {0, 0.5, 1}.
    The arrays must hold each game once (deduplicate by game id before).
    """
    first, second = np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)
    score = np.asarray(score, dtype=np.float64)
    _check_game_arrays(len(bots), first, second, score)
    low, high = np.minimum(first, second), np.maximum(first, second)
    low_points = np.where(first == low, score, 1.0 - score)
    outcome = (2.0 * low_points).astype(np.int64)  # 0: high won, 1: draw, 2: low won
    pair_ids, pair_of_game = np.unique(low * len(bots) + high, return_inverse=True)
    counts = np.bincount(pair_of_game * 3 + outcome, minlength=3 * len(pair_ids)).reshape(-1, 3)
    pair_low, pair_high = np.divmod(pair_ids, len(bots))
    return PairCounts(
        bots=tuple(bots),
        low=pair_low,
        high=pair_high,
        low_wins=counts[:, 2],
        draws=counts[:, 1],
        high_wins=counts[:, 0],
    )


def _check_game_arrays(n_bots: int, first: np.ndarray, second: np.ndarray, score: np.ndarray) -> None:
    if not first.shape == second.shape == score.shape or first.ndim != 1:
        raise ValueError("first, second and score must be 1-d arrays of one length")
    if first.size and (min(first.min(), second.min()) < 0 or max(first.max(), second.max()) >= n_bots):
        raise ValueError("a bot index is out of range")
    if np.any(first == second):
        raise ValueError("a bot cannot play itself")
    if not np.all(np.isin(score, SCORES)):
        raise ValueError("scores must be 0, 0.5 or 1")


@dataclass(frozen=True)
class BotRating:
    """One row of the leaderboard. Ratings in Elo above the anchor; half-widths in Elo, of the rating
    relative to the reference (see the module's conventions)."""

    bot: str
    rating: float | None  # None until the bot has played a game
    half_width: float  # of the 95% interval; inf while unrated
    games: int
    wins: int
    draws: int
    losses: int
    anchor_weight: float  # its weight in the anchor, the mean pinned to 0 Elo (0 if not in it)
    reference_weight: float  # its weight in the reference the intervals measure against (0 if not in it)
    provisional: bool  # half_width > PROVISIONAL_HALF_WIDTH, or unrated

    @property
    def is_anchor(self) -> bool:
        return self.anchor_weight > 0

    @property
    def interval_low(self) -> float:
        return -math.inf if self.rating is None else self.rating - self.half_width

    @property
    def interval_high(self) -> float:
        return math.inf if self.rating is None else self.rating + self.half_width


@dataclass(frozen=True)
class RatingTable:
    """A ladder's ratings: rated bots by rating (best first, ties by name), then unrated ones by name."""

    rows: tuple[BotRating, ...]
    anchors: tuple[str, ...]  # the bots whose weighted mean rating is pinned to 0 Elo

    def __getitem__(self, bot: str) -> BotRating:
        return self._by_bot[bot]

    @functools.cached_property
    def _by_bot(self) -> dict[str, BotRating]:
        return {row.bot: row for row in self.rows}

    def estimates(self) -> dict[str, tuple[float, float]]:
        """bot -> (rating, 95% half-width) in Elo, for rated bots: the scheduler's view of the table."""
        return {row.bot: (row.rating, row.half_width) for row in self.rows if row.rating is not None}


def fit_ratings(
    results: Iterable[GameResult],
    anchors: Collection[str],
    *,
    bots: Collection[str] = (),
    prior_draws: float = DEFAULT_PRIOR_DRAWS,
    reference: Collection[str] | None = None,
) -> RatingTable:
    """The rating table of a set of game results keyed by game id (see the module's conventions).

    anchors: the ladder's house bots. bots: active bots to list even without games (as unrated).
    reference: the bots whose information-weighted mean the intervals measure against; None (the
    default) for the ladder's measured bots.
    """
    pairs = count_pairs(results, bots)
    return fit_pair_counts(pairs, anchors, prior_draws=prior_draws, reference=reference)


def fit_pair_counts(
    pairs: PairCounts,
    anchors: Collection[str],
    *,
    prior_draws: float = DEFAULT_PRIOR_DRAWS,
    reference: Collection[str] | None = None,
) -> RatingTable:
    """The rating table from pair counts (see the module's conventions); bots without games are unrated."""
    if not prior_draws > 0:
        raise ValueError("prior_draws must be positive: it keeps perfect scores and split graphs finite")
    record = _win_draw_loss(pairs)
    rated = np.flatnonzero(record.sum(axis=1) > 0)
    position = np.full(len(pairs.bots), -1, dtype=np.int64)
    position[rated] = np.arange(len(rated))
    names = np.asarray(pairs.bots, dtype=object)[rated]
    problem = _Problem(
        n=len(rated),
        low=position[pairs.low],
        high=position[pairs.high],
        low_score=pairs.low_score,
        games=pairs.games.astype(np.float64),
        low_score_squares=pairs.low_wins + 0.25 * pairs.draws,
        prior_draws=prior_draws,
    )
    if not problem.n:
        nothing = np.zeros(0)
        return _table(pairs.bots, record, rated, nothing, nothing, nothing, nothing)
    given_reference = None if reference is None else np.isin(names, list(reference))
    if given_reference is not None and not given_reference.any():
        raise ValueError(f"no bot of the reference {sorted(reference)} has played a game")
    logits = _maximise_likelihood(problem)
    measured = problem.measured()
    anchor_weights, reference_weights = _anchor_and_reference(
        problem.information(logits), measured, np.isin(names, list(anchors)), given_reference
    )
    dispersion = problem.dispersion(logits, measured)
    variances = dispersion * _contrast_variances(problem, logits, reference_weights)
    anchored = logits - anchor_weights @ logits
    return _table(pairs.bots, record, rated, anchored, variances, anchor_weights, reference_weights)


def stronger_probabilities(
    pairs: PairCounts, table: RatingTable, bots: Collection[str], than: str
) -> dict[str, float | None]:
    """bot -> P(bot is stronger than `than`), for each of `bots`, from `table` (the fit of `pairs`):
    P = Phi(d / s), d their rating difference and s the standard error of the difference, from the
    same fit's interval measured against `than` (`reference`: the fit's inverse information, i.e.
    its covariance) -- the normal approximation of the maximum-likelihood estimate. None where
    either bot is unrated. One more fit for all of `bots`."""
    if table[than].rating is None:
        return dict.fromkeys(bots)
    against = fit_pair_counts(pairs, anchors=(), reference=[than])
    probabilities: dict[str, float | None] = {}
    for bot in bots:
        if table[bot].rating is None:
            probabilities[bot] = None
            continue
        difference = table[bot].rating - table[than].rating
        error = against[bot].half_width / Z_95
        if error == 0.0:
            probabilities[bot] = 1.0 if difference > 0 else 0.5
        else:
            probabilities[bot] = 0.5 * (1.0 + math.erf(difference / (error * math.sqrt(2.0))))
    return probabilities


def _win_draw_loss(pairs: PairCounts) -> np.ndarray:
    """(B, 3) int64 wins, draws and losses per bot."""

    def per_bot(low_side: np.ndarray, high_side: np.ndarray) -> np.ndarray:
        n = len(pairs.bots)
        return np.bincount(pairs.low, low_side, n) + np.bincount(pairs.high, high_side, n)

    wins = per_bot(pairs.low_wins, pairs.high_wins)
    draws = per_bot(pairs.draws, pairs.draws)
    losses = per_bot(pairs.high_wins, pairs.low_wins)
    return np.stack([wins, draws, losses], axis=1).astype(np.int64)


def _anchor_and_reference(
    information: np.ndarray, measured: np.ndarray, house: np.ndarray, reference: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """(N,) anchor weights and (N,) reference weights (see the module's conventions), from (N,) bool
    masks: the measured bots, the house bots, and the reference bots given (None: the measured)."""
    measured_house = measured & house
    anchor = _weighted_mean(information, measured_house if measured_house.any() else measured)
    return anchor, _weighted_mean(information, measured if reference is None else reference)


def _weighted_mean(information: np.ndarray, members: np.ndarray) -> np.ndarray:
    """(N,) weights w, summing to 1, with w @ r the members' mean rating weighted by information."""
    weights = np.where(members, information, 0.0)
    return weights / weights.sum()


@dataclass(frozen=True, eq=False)
class _Problem:
    """The fit over the N rated bots, in logits. Pair arrays have shape (P,).

    Objective (minimised): the negative log-likelihood of the pair scores, plus prior_draws virtual
    draws of every bot against the average rated bot, plus the gauge term n mean(r)^2 / 2. The first
    two depend on rating differences only (their Hessian H has H 1 = 0), so the gauge term pins
    mean(r) = 0 without moving the optimum, and makes the Hessian positive definite.

    The prior is centred on the average bot, not on the anchor: centred on the anchor, the pulls of
    hundreds of bots would add up against the few anchors' games and shift the whole ladder.
    """

    n: int
    low: np.ndarray
    high: np.ndarray
    low_score: np.ndarray
    games: np.ndarray
    low_score_squares: np.ndarray  # sum of the low bot's squared scores: wins + draws / 4
    prior_draws: float

    def objective(self, r: np.ndarray) -> tuple[float, np.ndarray]:
        """Value and (N,) gradient."""
        k = self.prior_draws
        margin = r[self.low] - r[self.high]
        # -log P(scores) with P(low wins) = sigmoid(m): softplus(-m) per point won, softplus(m) per point
        # lost, which sums to games * softplus(m) - points * m since softplus(-m) = softplus(m) - m.
        pair_loss = self.games * np.logaddexp(0.0, margin) - self.low_score * margin
        above = r - r.mean()
        prior_loss = k * (np.logaddexp(0.0, above) - 0.5 * above)  # k/2 points won and k/2 lost
        total = r.sum()
        value = pair_loss.sum() + prior_loss.sum() + 0.5 * total**2 / self.n

        pair_slope = self.games * expit(margin) - self.low_score
        prior_slope = k * (expit(above) - 0.5)
        gradient = np.bincount(self.low, pair_slope, self.n) - np.bincount(self.high, pair_slope, self.n)
        gradient += prior_slope - prior_slope.mean() + total / self.n
        return float(value), gradient

    def hessian(self, r: np.ndarray) -> np.ndarray:
        """(N, N) dense Hessian: the pairs' weighted graph Laplacian plus the prior's and gauge's terms."""
        n = self.n
        weight = self._pair_information(r)
        off = np.bincount(self.low * n + self.high, weight, n * n).reshape(n, n)
        hessian = -(off + off.T)

        # Virtual draws: sum_i c_i (e_i - 1/n)(e_i - 1/n)^T with c_i the curvature of bot i's prior.
        above = r - r.mean()
        curvature = self.prior_draws * expit(above) * expit(-above)
        hessian[np.diag_indices(n)] = self._per_bot(weight) + curvature
        hessian -= (curvature[:, None] + curvature[None, :] - curvature.mean()) / n
        hessian += 1.0 / n
        return hessian

    def information(self, r: np.ndarray) -> np.ndarray:
        """(N,) each bot's information from its real games: sum of p (1 - p) over them."""
        return self._per_bot(self._pair_information(r))

    def measured(self) -> np.ndarray:
        """(N,) bool: the bots in the largest strongly connected components of "scored against"."""
        scored_by_low, scored_by_high = self.low_score > 0, self.games - self.low_score > 0
        tail = np.concatenate([self.low[scored_by_low], self.high[scored_by_high]])
        head = np.concatenate([self.high[scored_by_low], self.low[scored_by_high]])
        graph = scipy.sparse.coo_matrix((np.ones(tail.size), (tail, head)), shape=(self.n, self.n))
        _, component = scipy.sparse.csgraph.connected_components(
            graph.tocsr(), directed=True, connection="strong"
        )
        sizes = np.bincount(component)
        return sizes[component] == sizes.max()

    def dispersion(self, r: np.ndarray, measured: np.ndarray) -> float:
        """The observed spread of scores over the model's, per degree of freedom, shrunk towards 1.

        Pearson's statistic sum (s - p)^2 / (p (1 - p)) over the games between measured bots (the
        others' p rests on the prior), with as many degrees of freedom as those games less the
        measured bots' free ratings; DISPERSION_PRIOR_GAMES virtual games spread as the model says.
        """
        between = measured[self.low] & measured[self.high]
        margin = r[self.low[between]] - r[self.high[between]]
        p, games = expit(margin), self.games[between]
        squares = self.low_score_squares[between] - 2.0 * p * self.low_score[between] + games * p**2
        pearson = np.sum(squares / (p * expit(-margin)))
        freedom = max(games.sum() - (measured.sum() - 1), 0.0)
        return float((pearson + DISPERSION_PRIOR_GAMES) / (freedom + DISPERSION_PRIOR_GAMES))

    def _per_bot(self, per_pair: np.ndarray) -> np.ndarray:
        """(N,) the sums of a (P,) quantity over each bot's pairs."""
        return np.bincount(self.low, per_pair, self.n) + np.bincount(self.high, per_pair, self.n)

    def _pair_information(self, r: np.ndarray) -> np.ndarray:
        """(P,) games * p (1 - p) per pair: the Fisher information of its margin."""
        margin = r[self.low] - r[self.high]
        return self.games * expit(margin) * expit(-margin)


def _maximise_likelihood(problem: _Problem) -> np.ndarray:
    """(N,) maximum-likelihood logits with mean 0: Newton's method with backtracking.

    The objective is strictly convex, so Newton's method from 0 converges, quadratically near the
    optimum. A step far from it is halved until it achieves a quarter of the decrease it predicts;
    once the predicted decrease is below FULL_STEP_DECREASE the full step is taken, since comparing
    values that close would only compare rounding errors.
    """
    r = np.zeros(problem.n)
    value, gradient = problem.objective(r)
    for _ in range(MAX_NEWTON_STEPS):
        step = scipy.linalg.cho_solve(scipy.linalg.cho_factor(problem.hessian(r)), -gradient)
        if np.abs(step).max(initial=0.0) < NEWTON_TOLERANCE:
            return r + step
        predicted_decrease = -(gradient @ step)
        for halvings in range(MAX_HALVINGS + 1):
            scale = 0.5**halvings
            new_value, new_gradient = problem.objective(r + scale * step)
            if (
                predicted_decrease < FULL_STEP_DECREASE
                or new_value <= value - 0.25 * scale * predicted_decrease
            ):
                break
        else:
            raise RuntimeError("the Bradley-Terry fit found no step that decreases the objective")
        r, value, gradient = r + scale * step, new_value, new_gradient
    raise RuntimeError(f"the Bradley-Terry fit did not converge in {MAX_NEWTON_STEPS} Newton steps")


def _contrast_variances(problem: _Problem, r: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """(N,) variances (logits^2) of r_i - w @ r, for (N,) reference weights w summing to 1.

    With M = H + 1 1^T / n the objective's Hessian (H 1 = 0; the gauge term is 1 1^T / n), a contrast
    c = e_i - w sums to 0, so its variance c^T M^-1 c = c^T H^+ c does not depend on the gauge. It
    is M^-1_ii - 2 (M^-1 w)_i + w^T M^-1 w. With M = L L^T, M^-1 = L^-T L^-1, so M^-1_ii is the sum
    of squares of column i of L^-1 and M^-1 w = L^-T (L^-1 w).
    """
    lower = scipy.linalg.cholesky(problem.hessian(r), lower=True)
    lower_inverse, info = scipy.linalg.lapack.dtrtri(lower, lower=1)
    if info:
        raise RuntimeError(f"the Hessian's Cholesky factor could not be inverted (LAPACK info {info})")
    inverse_diagonal = np.einsum("ki,ki->i", lower_inverse, lower_inverse)
    inverse_w = lower_inverse.T @ (lower_inverse @ reference)
    return np.maximum(inverse_diagonal - 2.0 * inverse_w + reference @ inverse_w, 0.0)


def _table(
    bots: tuple[str, ...],
    record: np.ndarray,
    rated: np.ndarray,
    ratings: np.ndarray,
    variances: np.ndarray,
    anchor_weights: np.ndarray,
    reference_weights: np.ndarray,
) -> RatingTable:
    """The table from the rated bots' (N,) anchored logits, contrast variances and weights."""
    fitted = {
        int(b): (float(r) * ELO_PER_LOGIT, Z_95 * math.sqrt(v) * ELO_PER_LOGIT, float(a), float(w))
        for b, r, v, a, w in zip(rated, ratings, variances, anchor_weights, reference_weights, strict=True)
    }
    rows = []
    for b, bot in enumerate(bots):
        rating, half_width, anchor_weight, reference_weight = fitted.get(b, (None, math.inf, 0.0, 0.0))
        wins, draws, losses = (int(x) for x in record[b])
        rows.append(
            BotRating(
                bot=bot,
                rating=rating,
                half_width=half_width,
                games=wins + draws + losses,
                wins=wins,
                draws=draws,
                losses=losses,
                anchor_weight=anchor_weight,
                reference_weight=reference_weight,
                provisional=half_width > PROVISIONAL_HALF_WIDTH,
            )
        )
    rows.sort(key=lambda row: (row.rating is None, -(row.rating or 0.0), row.bot))
    return RatingTable(rows=tuple(rows), anchors=tuple(sorted(row.bot for row in rows if row.is_anchor)))
