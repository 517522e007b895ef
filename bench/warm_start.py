"""Warm start (issue 24 item 6): the CPU a worker's or the API's first move costs with an empty
Numba cache, with a warm one, and after `arena_bots.warm.warm_up`.

Usage: .venv/bin/python bench/warm_start.py [--quick] [--rounds N]

Each cell is a fresh process (what is measured is a process's first call), CPU-timed
(`time.process_time`: the process's own CPU, so the machine's load skews it little), after its
imports (NumPy, Numba, ONNX Runtime, the players) and after its players are built (the zoo net's
ONNX Runtime session included), so that only compiling and loading kernels is in it. The first move
is one decision of each of the game's players that run compiled code, from the seeded opening: the
`uct` house bot at the ladders' 100 simulations, the AlphaZero player with the game's zoo net at
100 (Bobail, Pente, Spring 2021; predict and games against people play it), Smash's `chain` and
`lookahead`. Columns:
- cold: the first move with an empty cache (NUMBA_CACHE_DIR a new folder): it compiles.
- cache: the first move with the cache the cold process wrote (its move, then a warm-up, as
  `arena warm` fills it), no warm-up: it loads.
- warm_up: `warm_up([game])` from that cache; after it, the first move (same process), and the first
  move of a process forked from it (a Celery pool's, which `arena worker` forks after its warm-up).
- later: the same move again in that process: neither compiles nor loads.
--quick: Bobail only, one round, no cold cell (the cache is the source tree's, which the test suite
has warm), so that tests/bench runs it in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GAMES = ("bobail", "pente", "spring2021", "smash")
SIMULATIONS = 100  # the ladders' budget (Settings.ladder_simulations)
ZOO = Path(__file__).resolve().parents[1] / "bots" / "zoo"
ZOO_NETS = {"bobail": "az-bobail-final", "pente": "az-pente-final", "spring2021": "az-spring2021-final"}
SEED = 3


def _players(name: str) -> list:
    """The game's players that run compiled code, built (a zoo net's session opened)."""
    from arena_bots.evaluators import NetworkEvaluator
    from arena_bots.loading import house_player
    from arena_bots.players import MctsPlayer
    from arena_bots.runtime import InProcessSession
    from arena_games.registry import get_game

    players = [house_player("uct", simulations=SIMULATIONS)]
    if name == "smash":
        players += [house_player(kind, simulations=SIMULATIONS) for kind in ("chain", "lookahead")]
    if name in ZOO_NETS:
        session = InProcessSession(ZOO / name / f"{ZOO_NETS[name]}.onnx")
        players.append(MctsPlayer(NetworkEvaluator(session, get_game(name)), simulations=SIMULATIONS))
    return players


def _move(name: str, players: list) -> float:
    """CPU seconds of one decision of each player from the seeded opening."""
    import numpy as np

    from arena_bots.match import Request
    from arena_games.registry import get_game

    game = get_game(name)
    state = game.init(SEED, None)
    started = time.process_time()
    for player in players:
        player.decide(game, [Request(state, game.to_move(state)[0], np.random.default_rng(SEED))])
    return time.process_time() - started


def _forked_move(name: str, players: list) -> float:
    """`_move` in a child forked from this process: its CPU seconds, as the child measures them."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.write(write, repr(_move(name, players)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        seconds = float(pipe.read())
    os.waitpid(pid, 0)
    return seconds


def child(name: str, warm: bool, fill: bool = False) -> dict[str, float]:
    """One process's cells (the module's doc): without warm-up its first move, else the warm-up, the
    first move of a forked process and its own; then a later move. `fill`: then, untimed, a warm-up,
    so that the cache holds all the game's compiled code for the next processes."""
    import numba  # noqa: F401  (imported before the clock starts, as in a worker)

    from arena_bots.warm import warm_up

    players = _players(name)
    cells = {}
    if warm:
        started = time.process_time()
        warm_up([name])
        cells["warm_up"] = time.process_time() - started
        cells["forked first"] = _forked_move(name, players)
    cells["first"] = _move(name, players)
    cells["later"] = _move(name, players)
    if fill:
        warm_up([name])  # what the move did not compile (self-play's encoder, ...), as `arena warm` would
    return cells


def run_child(name: str, warm: bool, cache: str | None, fill: bool = False) -> dict[str, float]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "ORT_DISABLE_TELEMETRY": "1"}
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    args = (
        [sys.executable, __file__, "--child", name]
        + (["--warm"] if warm else [])
        + (["--fill"] if fill else [])
    )
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench child failed for {name}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Bobail, one round, no cold cell")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per game (default %(default)s)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--fill", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.warm, args.fill)))
        return
    games, rounds = (("bobail",), 1) if args.quick else (GAMES, args.rounds)
    print(f"Warm start: CPU-s of a process's first move (each compiled player of the game once), {_load()}")
    print("game        round  cold    cache   warm_up  first after  forked first  later")
    for name in games:
        for round_ in range(rounds):
            with tempfile.TemporaryDirectory() as folder:
                cache = None if args.quick else folder
                cold = None if args.quick else run_child(name, False, cache, fill=True)["first"]
                plain = run_child(name, False, cache)
                warmed = run_child(name, True, cache)
            cold_cell = "-" if cold is None else f"{cold:.2f}"
            print(
                f"{name:<11} {round_:>5}  {cold_cell:>5}  {plain['first']:>6.3f}  {warmed['warm_up']:>7.3f}"
                f"  {warmed['first']:>11.3f}  {warmed['forked first']:>12.3f}  {warmed['later']:>5.3f}",
                flush=True,
            )
            after = max(warmed["first"], 1e-3)
            if cold is not None:
                print(f"{name}, first move cold/after warm-up: {cold / after:.0f}x")
            print(f"{name}, first move from the cache/after warm-up: {plain['first'] / after:.1f}x")
    print(f"({_load()})")


if __name__ == "__main__":
    main()
