"""Ratings: the refit's speed, and the accuracy of its ratings and intervals on simulated ladders.

Speed: a Bradley-Terry refit of 1,000 bots and 1,000,000 games, target under 1 s. The refit starts
from pair counts (the store keeps them); building the counts from the games' arrays is timed on its
own line. Games are drawn between uniformly random bots with true ratings spread like a real
ladder's, outcomes from the Bradley-Terry model with draws. Prints the median of REPEATS runs, as
seconds and as a ratio to the target (below 1 meets it).

Accuracy (the project's rating-accuracy method): ladders of bots of known strength played through
the production scheduler (`next_pairings`) and fit, refitted after every round as the platform
does, the scheduler reading each refit. The ladder is a Bobail-like one of NEWCOMER_LADDER bots:
the house bots `random` (it loses every game) and `uct`, older uploads, and a newcomer that joins
after NEWCOMER_JOINS rounds. Prints the 95% intervals' coverage (every refit, every bot but
`random`, against the truth measured as the interval is: relative to the table's reference, see
`arena_platform.ratings`) with its targets, and the newcomer's half-width after 128 games and the
games it needs to reach PROVISIONAL_HALF_WIDTH, against NEWCOMER_GAMES_TARGET.

BLAS runs on one thread unless OPENBLAS_NUM_THREADS says otherwise, as in a worker process (one
single-threaded process per core): on 2 cores that other processes kept busy, OpenBLAS's default
threads made the same refit up to 7 times slower, its threads waiting on each other for the cores.

Run: .venv/bin/python bench/ratings.py [--quick]
(--quick: 100,000 games, one run each; QUICK_LADDERS simulated ladders instead of LADDERS)
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # read when NumPy loads OpenBLAS, so set first

import argparse
import math
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from arena_platform.ratings import (
    ELO_PER_LOGIT,
    PROVISIONAL_HALF_WIDTH,
    GameResult,
    RatingTable,
    count_pair_arrays,
    fit_pair_counts,
)
from arena_platform.scheduling import LadderBot, LadderState, next_pairings

BOTS = 1_000
GAMES = 1_000_000
QUICK_GAMES = 100_000
HOUSE_BOTS = 3
REFIT_TARGET_S = 1.0  # for GAMES games
REPEATS = 5

DRAW_RATE = 0.3  # the draw probability of an even game; 4 p (1 - p) of it in general
LADDERS = 200
QUICK_LADDERS = 10
NEWCOMER_LADDER = 9  # bots, `random` and the newcomer included
NEWCOMER_JOINS = 20  # rounds the older bots play before the newcomer joins
PAIRINGS_PER_ROUND = 18  # each round books up to this many pairings, plays them all, then refits
NEWCOMER_GAMES = 600  # the simulation ends once the newcomer has played this many games
NEWCOMER_GAMES_TARGET = 600  # the newcomer's half-width must reach PROVISIONAL_HALF_WIDTH by then
COVERAGE_TARGET = (0.93, 0.97)  # of the 95% intervals
NEWCOMER = "newcomer"


def simulated_games(rng: np.random.Generator, games: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(G,) first bot, (G,) second bot and (G,) first bot's score of `games` games."""
    elo = rng.normal(0.0, 250.0, BOTS)
    first = rng.integers(0, BOTS, games)
    second = (first + rng.integers(1, BOTS, games)) % BOTS
    return first, second, drawn_scores(rng, elo[first], elo[second])


def drawn_scores(rng: np.random.Generator, first_elo: np.ndarray, second_elo: np.ndarray) -> np.ndarray:
    """(G,) the first bot's score in {0, 0.5, 1} of games between bots of these (G,) true Elo ratings
    (-inf: a bot that loses every game), from the Bradley-Terry model with DRAW_RATE draws."""
    p = expit((first_elo - second_elo) / ELO_PER_LOGIT)
    draw = DRAW_RATE * 4.0 * p * (1.0 - p)
    u = rng.random(p.shape)
    return np.where(u < p - draw / 2, 1.0, np.where(u < p + draw / 2, 0.5, 0.0))


def paired_games(rng: np.random.Generator, pairs: np.ndarray, truth: np.ndarray) -> list[GameResult]:
    """Two games for each row of the (P, 2) bot indices `pairs`, the second with seats swapped,
    drawn as `drawn_scores` draws them from the (B,) true Elo ratings `truth`: results naming the
    bots str(index), with game ids numbered in order."""
    seats = np.repeat(np.asarray(pairs, dtype=np.int64).reshape(-1, 2), 2, axis=0)
    seats[1::2] = seats[1::2, ::-1]
    scores = drawn_scores(rng, truth[seats[:, 0]], truth[seats[:, 1]])
    return [
        GameResult(str(k), str(first), str(second), float(score))
        for k, ((first, second), score) in enumerate(zip(seats, scores, strict=True))
    ]


def median_seconds(work: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_refit(quick: bool) -> None:
    games, repeats = (QUICK_GAMES, 1) if quick else (GAMES, REPEATS)
    bots = tuple(f"bot{k:04d}" for k in range(BOTS))
    anchors = bots[:HOUSE_BOTS]
    first, second, score = simulated_games(np.random.default_rng(0), games)
    pairs = count_pair_arrays(bots, first, second, score)

    counting = median_seconds(lambda: count_pair_arrays(bots, first, second, score), repeats)
    refit = median_seconds(lambda: fit_pair_counts(pairs, anchors), repeats)
    print(f"pair counts from {games:,} games: {counting:.3f} s ({len(pairs.low):,} pairs)")
    print(
        f"BT refit, {BOTS:,} bots, {games:,} games: {refit:.3f} s, "
        f"ratio to the {REFIT_TARGET_S:g} s target (set for {GAMES:,} games) {refit / REFIT_TARGET_S:.2f} "
        f"(OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']})"
    )


# --- Accuracy ---


@dataclass(frozen=True)
class SimulatedLadder:
    """Bots of known strength: true Elo per bot (-inf: loses every game), the house bots, and the
    round each bot joins (absent: from the start). Bot names must sort as the bots were created."""

    truth: Mapping[str, float]
    house: frozenset[str]
    joins: Mapping[str, int]


def play_ladder(ladder: SimulatedLadder, rounds: int, rng: np.random.Generator) -> Iterator[RatingTable]:
    """The table after each of `rounds` rounds; a round books up to PAIRINGS_PER_ROUND pairings
    between the bots that have joined (the scheduler reading the previous table), plays each as two
    games with seats swapped, and refits on every game so far."""
    names = tuple(sorted(ladder.truth))
    truth = np.array([ladder.truth[name] for name in names])
    created = {name: k for k, name in enumerate(names)}
    played: Counter[tuple[str, str]] = Counter()
    first: list[int] = []
    second: list[int] = []
    scores: list[float] = []
    estimates: dict[str, tuple[float, float]] = {}
    for round_ in range(rounds):
        bots = tuple(
            LadderBot(name, is_house=name in ladder.house, created=created[name])
            for name in names
            if ladder.joins.get(name, 0) <= round_
        )
        state = LadderState(bots=bots, played=played, in_flight={}, ratings=estimates)
        pairings = next_pairings(state, PAIRINGS_PER_ROUND, rng)
        booked = np.array([(created[p.first], created[p.second]) for p in pairings], dtype=np.int64)
        booked = booked.reshape(-1, 2)  # (pairings, 2): first and second bot, even when none was booked
        seats = np.concatenate([booked, booked[:, ::-1]]).reshape(-1, 2)  # each pairing, seats swapped
        played.update((p.first, p.second) for p in pairings)
        first.extend(seats[:, 0])
        second.extend(seats[:, 1])
        scores.extend(drawn_scores(rng, truth[seats[:, 0]], truth[seats[:, 1]]))
        table = fit_pair_counts(count_pair_arrays(names, first, second, scores), ladder.house)
        estimates = table.estimates()
        yield table


def reference_offset(table: RatingTable, truth: Mapping[str, float]) -> float | None:
    """How far the table's scale sits from the truth's, measured at the table's reference (Elo): its
    ratings minus the true ones, weighted as the reference weighs them. None while the reference
    holds a bot that loses every game (early on, when no bot's rating is determined yet): the truth
    has no finite level there."""
    members = [row for row in table.rows if row.reference_weight > 0]
    if not all(math.isfinite(truth[row.bot]) for row in members):
        return None
    return sum(row.reference_weight * (row.rating - truth[row.bot]) for row in members)


def covered(table: RatingTable, truth: Mapping[str, float]) -> list[bool]:
    """Per rated bot of finite truth: whether its interval holds its true rating measured as the
    interval measures (relative to the table's reference, drawn on the table's scale)."""
    offset = reference_offset(table, truth)
    if offset is None:
        return []
    return [
        row.interval_low <= truth[row.bot] + offset <= row.interval_high
        for row in table.rows
        if row.rating is not None and math.isfinite(truth[row.bot])
    ]


def newcomer_ladder(rng: np.random.Generator) -> SimulatedLadder:
    """`random` (loses every game), `uct` at 0 Elo, older uploads and a newcomer from -200 to +600."""
    uploads = [f"upload{k}" for k in range(NEWCOMER_LADDER - 3)] + [NEWCOMER]
    truth = {"random": -math.inf, "uct": 0.0} | dict(
        zip(uploads, rng.uniform(-200.0, 600.0, len(uploads)), strict=True)
    )
    # Names sort as created: house bots, then uploads, the newcomer last.
    return SimulatedLadder(truth=truth, house=frozenset({"random", "uct"}), joins={NEWCOMER: NEWCOMER_JOINS})


@dataclass(frozen=True)
class NewcomerRun:
    coverage: list[bool]  # one per bot and refit
    path: list[tuple[int, float]]  # the newcomer's games and half-width (Elo) at each refit once rated
    final_error: float  # its rating minus its truth measured as the interval does, Elo

    def half_width_after(self, games: int) -> float:
        """The newcomer's half-width at its first refit with at least `games` games."""
        return next(half_width for played, half_width in self.path if played >= games)

    def games_to_settle(self) -> float:
        """The newcomer's games at its first refit within PROVISIONAL_HALF_WIDTH (inf: never)."""
        return next(
            (played for played, half_width in self.path if half_width <= PROVISIONAL_HALF_WIDTH), math.inf
        )


def run_newcomer_ladder(seed: int) -> NewcomerRun:
    """One newcomer ladder, played until the newcomer has NEWCOMER_GAMES games."""
    rng = np.random.default_rng(seed)
    ladder = newcomer_ladder(rng)
    coverage: list[bool] = []
    path: list[tuple[int, float]] = []
    for table in play_ladder(ladder, rounds=10_000, rng=rng):
        coverage.extend(covered(table, ladder.truth))
        newcomer = table[NEWCOMER]
        if newcomer.rating is not None:
            path.append((newcomer.games, newcomer.half_width))
        if newcomer.games >= NEWCOMER_GAMES:
            break
    error = newcomer.rating - ladder.truth[NEWCOMER] - reference_offset(table, ladder.truth)
    return NewcomerRun(coverage, path, error)


def bench_accuracy(quick: bool) -> None:
    ladders = QUICK_LADDERS if quick else LADDERS
    runs = [run_newcomer_ladder(seed) for seed in range(ladders)]
    coverage = float(np.mean([hit for run in runs for hit in run.coverage]))
    low, high = COVERAGE_TARGET
    print(
        f"95% interval coverage, {ladders} simulated {NEWCOMER_LADDER}-bot ladders with `random`, "
        f"every bot but `random` at every refit: {coverage:.3f} (target {low}-{high})"
    )
    early, late = (
        np.median([run.half_width_after(games) for run in runs]) for games in (128, NEWCOMER_GAMES)
    )
    settle = np.array([run.games_to_settle() for run in runs])
    print(
        f"newcomer's half-width, median: {early:.0f} Elo after 128 games, {late:.0f} after {NEWCOMER_GAMES}; "
        f"games to within ±{PROVISIONAL_HALF_WIDTH:g}: median {np.median(settle):.0f}, "
        f"90th percentile {np.percentile(settle, 90):.0f}, by {NEWCOMER_GAMES_TARGET} on "
        f"{np.sum(settle <= NEWCOMER_GAMES_TARGET)} of {ladders} ladders"
    )
    print(
        f"newcomer's error after {NEWCOMER_GAMES} games: "
        f"RMS {math.sqrt(np.mean([run.final_error**2 for run in runs])):.0f} Elo"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small runs (seconds)")
    quick = parser.parse_args().quick
    bench_refit(quick)
    bench_accuracy(quick)


if __name__ == "__main__":
    main()
