"""Smash the Code engine benchmark: placements simulated per second, batched NumPy against a plain loop.

Usage: .venv/bin/python bench/smash.py [--quick]

Random games from the start of seeded games (uniformly random legal placements, both players),
measured in this run, single-threaded, about `seconds` of wall time each (a measurement always
finishes the games it started). A placement is one player's pair placed and its chain resolved, so
a turn counts two. Rows:
  loop      `rules.step` in a Python loop, one game at a time, actions from the legal masks (what a
            tree search steps)
  batched   `playouts.finish` on BATCH games at once (every turn of every game in one set of NumPy
            calls), and on one game
and the ratios batched / loop (N games vs 1: what a batch of searches' rollouts gains) and
1 game / loop (like for like: the cost of NumPy's per-call overhead on one game).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from arena_games.smash import GAME
from arena_games.smash import playouts as batched_engine

BATCH = 1024  # games per batched call (--quick: QUICK_BATCH)
QUICK_BATCH = 128


def placements_per_second(play: Callable[[], int], seconds: float) -> float:
    """Calls `play` (which returns the placements it made) until `seconds` have passed; per second."""
    placements, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        placements += play()
    return placements / elapsed


def looped(seeds, rng: np.random.Generator) -> int:
    """One random game by `GAME.step` in a Python loop; the placements made."""
    state, turns = GAME.init(next(seeds), None), 0
    while players := GAME.to_move(state):
        state = GAME.step(state, [GAME.random_action(state, p, rng) for p in players])
        turns += 1
    return 2 * turns


def batched(seeds, rng: np.random.Generator, games: int) -> int:
    """`games` random games from their starts, all at once; the placements made."""
    batch = batched_engine.pack([GAME.init(next(seeds), None) for _ in range(games)])
    batched_engine.finish(batch, rng.spawn(games))
    return 2 * int(batch.turns.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"0.3 s per measurement, {QUICK_BATCH} games/call"
    )
    quick = parser.parse_args().quick
    seconds, batch = (0.3, QUICK_BATCH) if quick else (3.0, BATCH)
    seeds, rng = iter(range(1 << 62)), np.random.default_rng(0)
    loop = placements_per_second(lambda: looped(seeds, rng), seconds)
    many = placements_per_second(lambda: batched(seeds, rng, batch), seconds)
    one = placements_per_second(lambda: batched(seeds, rng, 1), seconds)
    rows = (
        ("loop (rules.step, 1 game)", loop),
        (f"batched ({batch} games/call)", many),
        ("batched (1 game/call)", one),
    )
    print("Smash the Code: random placements per second (one core)")
    for label, rate in rows:
        print(f"  {label:<30}{rate:>12,.0f}")
    print(f"batched/loop (N games vs 1: not like for like): {many / loop:.1f}x")
    print(f"1 game batched/loop (like for like): {one / loop:.2f}x")


if __name__ == "__main__":
    main()
