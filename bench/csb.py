"""CSB engine benchmark: many races at once against one race at a time, in one run.

Usage: .venv/bin/python bench/csb.py [--quick]

Every race is played from a seeded start to its end by the house racer in both seats (so the turns
have the real mix of collisions, checkpoint passes and boosts). Prints simulated turns per second
(one turn = 4 pods moved, bounced and judged) of:
  batched   `playouts.play_races` on RACES races at once (NumPy over the batch);
  one race  the same engine given one race per call, race after race (the naive loop);
  step      the public contract (`Game.step` on immutable states, the racer deciding each turn),
            one race at a time, as the match loop and a search use it;
and the ratios batched / one race and batched / step. Single-threaded, measured in this run.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import moves_per_second

from arena_games.csb import GAME, rules
from arena_games.csb.playouts import play_races, racer_actions

RACES = 1024  # races per batched call (--quick: QUICK_RACES)
QUICK_RACES = 64


def batched(seeds: range) -> int:
    """The races of `seeds`, all at once; the turns simulated."""
    races = play_races(rules.to_races([GAME.init(seed) for seed in seeds]), (racer_actions, racer_actions))
    return int(races.turn.sum())


def stepped(seed: int) -> int:
    """One race through `Game.step`, the racer choosing from a one-race batch each turn; the turns."""
    state = GAME.init(seed)
    while not state.is_over:
        races = rules.to_races([state])
        state = GAME.step(state, [tuple(racer_actions(races, player)[0].tolist()) for player in (0, 1)])
    return state.turn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"0.5 s per measurement, {QUICK_RACES} races per batch"
    )
    quick = parser.parse_args().quick
    seconds, size = (0.5, QUICK_RACES) if quick else (5.0, RACES)
    seeds = iter(range(1 << 62))  # every race a fresh seed

    def next_seeds(count: int) -> range:
        first = next(seeds)
        for _ in range(count - 1):
            next(seeds)
        return range(first, first + count)

    many = moves_per_second(lambda: batched(next_seeds(size)), seconds)
    one = moves_per_second(lambda: batched(next_seeds(1)), seconds)
    step = moves_per_second(lambda: stepped(next(seeds)), seconds)
    print(
        f"csb turns/s  batched ({size} races/call): {many:,.0f}  one race/call: {one:,.0f}  step: {step:,.0f}"
    )
    print(f"batched/one race: {many / one:.1f}x  batched/step: {many / step:.1f}x", end="  ")
    print(f"one race/step: {one / step:.2f}x")
    print(f"per turn: batched {1e6 / many:.1f} us, one race {1e6 / one:.0f} us, step {1e6 / step:.0f} us")


if __name__ == "__main__":
    np.seterr(all="raise")  # the engine silences the 0/0 it expects; anything else is a bug
    main()
