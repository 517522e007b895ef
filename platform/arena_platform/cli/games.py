"""`arena play` (a seeded game between house bots) and `arena bot check` (a bot's validation report)."""

from __future__ import annotations

import argparse
from pathlib import Path

from arena_bots.loading import HOUSE_KINDS, house_player
from arena_bots.match import play
from arena_games.registry import GAMES, get_game
from arena_platform.cli.common import UsageError, add_manifest_options, manifest_overrides


def add_commands(commands: argparse._SubParsersAction) -> None:
    game = commands.add_parser("play", help="play one seeded game between house bots and print it")
    game.add_argument("--game", required=True, help=f"one of: {', '.join(sorted(GAMES))}")
    game.add_argument("--players", nargs=2, default=["uct", "random"], choices=HOUSE_KINDS, metavar="BOT")
    game.add_argument("--seed", type=int, default=1)
    game.add_argument("--simulations", type=int, default=200, help="UCT simulations per move")
    game.add_argument("--opening", action="store_true", help="start from the game's seeded opening")
    game.add_argument("--every-position", action="store_true", help="print every position, not only the last")
    game.set_defaults(run=run_play)

    bot = commands.add_parser("bot", help="work with bot files").add_subparsers(
        required=True, metavar="ACTION"
    )
    check = bot.add_parser(
        "check",
        help="validate an ONNX bot as an upload would and print the report",
        description="Validates a bot file as `arena upload` would, at the ladder's simulation budget "
        "(ARENA_LADDER_SIMULATIONS). The options set the manifest fields the file's arena.* metadata "
        "lacks or override them, as on upload.",
    )
    check.add_argument("file", type=Path)
    check.add_argument("--game", required=True, help=f"one of: {', '.join(sorted(GAMES))}")
    add_manifest_options(check)
    check.set_defaults(run=_run_bot_check)


def run_play(args: argparse.Namespace) -> int:
    if args.simulations < 1:
        raise UsageError(f"--simulations must be at least 1, got {args.simulations}")
    game = get_game(args.game)
    players = [house_player(kind, simulations=args.simulations) for kind in args.players]
    opening = game.opening(args.seed, None) if args.opening else ()
    result = play(game, players, args.seed, opening=opening)
    state = game.init(args.seed, None)
    for number, step in enumerate(result.replay.steps, start=1):
        state = game.step(state, step.actions)
        if args.every_position:
            print(f"step {number}: {[list(action) for action in step.actions]}\n{game.render(state)}\n")
    if not args.every_position:
        print(game.render(state))
    names = " vs ".join(f"{name} (player {seat + 1})" for seat, name in enumerate(result.replay.players))
    print(f"\n{game.spec.title}, seed {args.seed}: {names}")
    print(f"{len(result.replay.steps)} steps; {result.end_reason}; returns {list(result.returns)}")
    return 0


def _run_bot_check(args: argparse.Namespace) -> int:
    from arena_bots.validation import validate_file  # onnx is heavy: only this command needs it
    from arena_platform.settings import SettingsError, load_settings

    game = get_game(args.game)
    try:
        ladder_simulations = load_settings().ladder_simulations
    except SettingsError as error:
        raise UsageError(str(error)) from None
    try:  # checks the size before reading
        report = validate_file(args.file, game, manifest_overrides(args), simulations=ladder_simulations)
    except OSError as error:
        raise UsageError(f"cannot read {args.file}: {error.strerror}") from None
    print(report.format_text())
    return 0 if report.ok else 1
