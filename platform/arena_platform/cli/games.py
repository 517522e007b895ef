"""`arena bot check`: a bot file's validation report, offline."""

from __future__ import annotations

import argparse
from pathlib import Path

from arena_games.registry import GAMES, get_game
from arena_platform.cli.common import UsageError, add_manifest_options, manifest_overrides


def add_commands(commands: argparse._SubParsersAction) -> None:
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
