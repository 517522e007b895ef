"""Smash the Code engine benchmark: placements simulated per second, batched NumPy against a plain loop.

Usage: .venv/bin/python bench/smash.py [--quick] [--only engine|house]

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

Then the house bots on each core (ARENA_CORE: `compiled_smash_bots` against the players' NumPy
reference), per CPU second of this process (time.process_time, so load slows the wall clock, not
the figure), the cores interleaved round by round:
  decisions   `decide` on one request per call (a ladder game's move), `chain` and `lookahead`,
              from the positions of seeded games between them (HOUSE_POSITIONS);
  ladder      whole games between the ladder's heuristic house bots (random, chain, lookahead:
              every pair, both seatings, one seed per round, in lockstep as a worker's block),
              as games per CPU-hour. The `uct` house bot, the ladder's fourth, is left out: on the
              reference core one of its games costs minutes (bench/compiled_core.py --only house
              measures its moves).
"""

from __future__ import annotations

import argparse
import itertools
import os
import time
from collections.abc import Callable

import numpy as np
from timing import CpuMeter

from arena_bots.loading import house_player
from arena_bots.match import MatchSetup, Request, play_many
from arena_bots.players import ChainPlayer, LookaheadPlayer
from arena_games.smash import GAME
from arena_games.smash import playouts as batched_engine

BATCH = 1024  # games per batched call (--quick: QUICK_BATCH)
QUICK_BATCH = 128
CORES = ("reference", "compiled")
HOUSE_POSITIONS = 200  # positions of chain-lookahead games for the decision rows (--quick: 20)
LADDER_BOTS = ("random", "chain", "lookahead")


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


def house_positions(count: int) -> list:
    """`count` (state, seat) positions of seeded games of the chain bot against the lookahead bot
    (seats swapped game by game), every turn of each game from its start."""
    bots, positions, seed = (ChainPlayer(), LookaheadPlayer()), [], 0
    while len(positions) < count:
        seats = bots if seed % 2 == 0 else bots[::-1]
        state = GAME.init(seed, None)
        while not state.is_over and len(positions) < count:
            requests = [Request(state, seat, np.random.default_rng(0)) for seat in (0, 1)]
            positions += [(state, 0), (state, 1)]
            joint = [seats[seat].decide(GAME, [requests[seat]])[0].action for seat in (0, 1)]
            state = GAME.step(state, joint)
        seed += 1
    return positions[:count]


def decision_meter(kind: str, core: str, positions: list, per_call: int) -> CpuMeter:
    """`per_call` decisions per call, one request each, of the `kind` house bot on `core`."""
    player = ChainPlayer(core=core) if kind == "chain" else LookaheadPlayer(core=core)
    requests = [Request(state, seat, np.random.default_rng(0)) for state, seat in positions]

    def decide(call: int) -> int:
        for index in range(call * per_call, (call + 1) * per_call):
            player.decide(GAME, [requests[index % len(requests)]])
        return per_call

    return CpuMeter(decide)


def ladder_meter(core: str) -> CpuMeter:
    """Per call, one round of the ladder's heuristic house bots on `core`: each pair in both
    seatings, seeded by the call, in one lockstep `play_many`; the games played."""
    previous = os.environ.get("ARENA_CORE")
    os.environ["ARENA_CORE"] = core  # read by the players as they are made
    bots = [house_player(kind, simulations=1, game="smash") for kind in LADDER_BOTS]
    if previous is None:
        del os.environ["ARENA_CORE"]
    else:
        os.environ["ARENA_CORE"] = previous

    def round_of_games(call: int) -> int:
        setups = [MatchSetup(players=pair, seed=call) for pair in itertools.permutations(bots, 2)]
        return len(play_many(GAME, setups))

    return CpuMeter(round_of_games)


def house_rows(quick: bool) -> None:
    """The house bots' decisions and ladder games per CPU time on each core (the module's doc)."""
    positions = house_positions(20 if quick else HOUSE_POSITIONS)
    rounds = 1 if quick else 4
    decisions = {
        (kind, core): decision_meter(kind, core, positions, per_call)
        for kind, per_call in (("chain", len(positions) // 4), ("lookahead", len(positions) // 20))
        for core in CORES
    }
    ladder = {core: ladder_meter(core) for core in CORES}
    for meter in [decisions["chain", "compiled"], decisions["lookahead", "compiled"], ladder["compiled"]]:
        meter.work(0)  # compiles (or loads the cache), untimed
    for _ in range(rounds):
        for meter in [*decisions.values(), *ladder.values()]:
            meter.run()
    load = os.getloadavg()
    print(f"\nSmash house bots per CPU second of this process, {rounds} interleaved rounds")
    print(f"machine load (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    print(f"  {'':<52}{'reference':>12}{'compiled':>12}{'ratio':>8}")
    for kind in ("chain", "lookahead"):
        reference, compiled = decisions[kind, "reference"].rate, decisions[kind, "compiled"].rate
        label = f"{kind}: decisions per CPU-s"
        print(f"  {label:<52}{reference:>12,.1f}{compiled:>12,.1f}{compiled / reference:>7.1f}x")
    reference, compiled = (3600 * ladder[core].rate for core in CORES)
    label = f"ladder games per CPU-hour ({', '.join(LADDER_BOTS)})"
    print(f"  {label:<52}{reference:>12,.0f}{compiled:>12,.0f}{compiled / reference:>7.1f}x")
    print(f"    ({ladder['compiled'].done} games per core; target >= 4x, issue 24)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"0.3 s per measurement, {QUICK_BATCH} games/call, 1 house round"
    )
    parser.add_argument("--only", choices=("engine", "house"), help="run only these rows")
    arguments = parser.parse_args()
    quick = arguments.quick
    if arguments.only != "engine":
        house_rows(quick)
    if arguments.only == "house":
        return
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
