"""The `arena` command line: the one place that wires games, bots, workers and the service together.

One module per family of commands, each with `add_commands(subparsers)`. Every failure a user can
cause (an unknown game, a missing file, bad settings, a rejected model) prints one sentence naming
the problem on stderr and exits with status 2; nothing ends in a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from arena_games.api import GameError
from arena_platform.cli import (
    accounts,
    challenge,
    competition,
    games,
    play,
    serve,
    train,
    view,
    warm,
    workers,
)
from arena_platform.cli.common import UsageError


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except (UsageError, GameError) as error:
        print(f"arena: {error}", file=sys.stderr)
        return 2


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="arena", description="Arena: a tournament platform for neural bots.")
    commands = root.add_subparsers(required=True, metavar="COMMAND")
    for module in (serve, play, view, games, accounts, challenge, competition, workers, train, warm):
        module.add_commands(commands)
    return root
