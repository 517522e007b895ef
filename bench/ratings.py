"""Bradley-Terry refit benchmark: 1,000 bots and 1,000,000 games, target under 1 s.

The refit starts from pair counts (the store keeps them); building the counts from the games'
arrays is timed on its own line. Games are drawn between uniformly random bots with true ratings
spread like a real ladder's, outcomes from the Bradley-Terry model with draws. Prints the median of
REPEATS runs, as seconds and as a ratio to the target (below 1 meets it).

BLAS runs on one thread unless OPENBLAS_NUM_THREADS says otherwise, as in a worker process (one
single-threaded process per core): on 2 cores that other processes kept busy, OpenBLAS's default
threads made the same refit up to 7 times slower, its threads waiting on each other for the cores.

Run: .venv/bin/python bench/ratings.py [--quick]   (--quick: 100,000 games, one run each)
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # read when NumPy loads OpenBLAS, so set first

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from arena_platform.ratings import ELO_PER_LOGIT, count_pair_arrays, fit_pair_counts

BOTS = 1_000
GAMES = 1_000_000
QUICK_GAMES = 100_000
HOUSE_BOTS = 3
REFIT_TARGET_S = 1.0  # for GAMES games
REPEATS = 5


def simulated_games(rng: np.random.Generator, games: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(G,) first bot, (G,) second bot and (G,) first bot's score of `games` games."""
    elo = rng.normal(0.0, 250.0, BOTS)
    first = rng.integers(0, BOTS, games)
    second = (first + rng.integers(1, BOTS, games)) % BOTS
    p = 1.0 / (1.0 + np.exp(-(elo[first] - elo[second]) / ELO_PER_LOGIT))
    draw = 0.3 * 4.0 * p * (1.0 - p)
    u = rng.random(games)
    score = np.where(u < p - draw / 2, 1.0, np.where(u < p + draw / 2, 0.5, 0.0))
    return first, second, score


def median_seconds(work: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_GAMES:,} games, one run each")
    games, repeats = (QUICK_GAMES, 1) if parser.parse_args().quick else (GAMES, REPEATS)
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


if __name__ == "__main__":
    main()
