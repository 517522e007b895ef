"""`arena warm`: compiles the compiled core's kernels into Numba's cache (ARCHITECTURE §9, warm start)."""

from __future__ import annotations

import argparse
import time

from arena_games.registry import GAMES
from arena_platform.cli.common import UsageError


def add_commands(commands: argparse._SubParsersAction) -> None:
    warm = commands.add_parser(
        "warm",
        help="compile the games' kernels into Numba's cache (once after installing; `make` runs it)",
        description="Plays one move of every player of each game on the compiled core, so that Numba "
        "compiles their kernels and caches them beside the sources: later processes load them in a "
        "fraction of a second instead of compiling for seconds at their first move. Workers and the "
        "server warm up as they start; this makes their start quick on a fresh clone.",
    )
    warm.add_argument("games", nargs="*", metavar="GAME", help=f"the games (default all: {', '.join(GAMES)})")
    warm.set_defaults(run=_run_warm)


def _run_warm(args: argparse.Namespace) -> int:
    from arena_bots.core import selected_core
    from arena_bots.warm import warm_up  # Numba and the players: only this command needs them here

    try:
        core = selected_core()
    except ValueError as error:
        raise UsageError(str(error)) from None
    if core != "compiled":
        print("ARENA_CORE is reference: nothing to compile")
        return 0
    # One process, game after game: the games share compiled code (PCG64, the trees' selection and
    # backup) that processes of their own would each compile again. Cold, a process per core cost
    # 97 CPU-s against 81 and 221 s against 153 s of wall time (2 CPUs at load 8-12; ARCHITECTURE §9).
    for game in args.games or GAMES:
        started = time.process_time()
        warm_up([game])
        print(f"{game}: ready ({time.process_time() - started:.1f} CPU-s)", flush=True)
    return 0
