"""`arena challenge BOT OPPONENT [--pairs N] [--rated]`: N seat-swapped pairs between your bot and
another active bot of its ladder, played by the server's workers; `arena challenge --show ID`: a
challenge's progress, W/D/L, Elo difference and games."""

from __future__ import annotations

import argparse
from typing import Any

from arena_platform.cli.common import UsageError, add_server_options, server_token


def add_commands(commands: argparse._SubParsersAction) -> None:
    challenge = commands.add_parser(
        "challenge",
        help="challenge a bot with one of yours (pairs of games with seats swapped), or --show one",
        description="Books N seat-swapped pairs between your bot and any other active bot of its "
        "ladder, played by the server's workers at the ladder's budget; unrated unless --rated.",
    )
    challenge.add_argument("bot", type=int, nargs="?", help="your bot's id")
    challenge.add_argument("opponent", type=int, nargs="?", help="the opponent's bot id")
    challenge.add_argument("--pairs", type=int, default=4, help="seat-swapped pairs of games (default 4)")
    challenge.add_argument("--rated", action="store_true", help="its games enter the ladder's ratings")
    challenge.add_argument("--show", type=int, metavar="ID", help="show challenge ID instead of starting one")
    add_server_options(challenge)
    challenge.set_defaults(run=_run_challenge)


def _run_challenge(args: argparse.Namespace) -> int:
    from arena_platform.client import ArenaClient, ArenaClientError, default_url

    if args.show is None and (args.bot is None or args.opponent is None):
        raise UsageError("name your bot and its opponent (arena challenge BOT OPPONENT), or --show ID")
    if args.show is not None and args.bot is not None:
        raise UsageError("--show ID shows a challenge: name no bots with it")
    try:
        if args.show is not None:
            with ArenaClient(args.url) as client:
                _print_challenge(client.challenge(args.show), args.url or default_url())
            return 0
        with ArenaClient(args.url, server_token(args, "challenging")) as client:
            made = client.challenge_bot(args.bot, args.opponent, pairs=args.pairs, rated=args.rated)
    except ArenaClientError as error:
        raise UsageError(str(error)) from None
    kind = "rated" if made["rated"] else "unrated"
    print(
        f"challenge {made['id']}: {_name(made['bot'])} against {_name(made['opponent'])}, "
        f"{made['pairs']} {kind} pairs on {made['ladder']} at {made['simulations']} simulations per move"
    )
    page = f"{args.url or default_url()}/challenges/{made['id']}"
    print(f"follow it with `arena challenge --show {made['id']}` or at {page}")
    return 0


def _print_challenge(challenge: dict[str, Any], url: str) -> None:
    progress = challenge["progress"]
    played = progress["done"] + progress["failed"]
    print(
        f"challenge {challenge['id']} {challenge['status']}: "
        f"{_name(challenge['bot'])} (by {challenge['user']}) against {_name(challenge['opponent'])} | "
        f"{played}/{challenge['pairs']} pairs | "
        f"W/D/L {challenge['wins']}/{challenge['draws']}/{challenge['losses']} | {_elo(challenge)}"
    )
    for game in challenge["game_list"]:
        result = {1.0: "1-0", 0.5: "1/2-1/2", 0.0: "0-1"}.get(game["score"], game["score"])
        print(
            f"  game {game['id']}: {_name(game['first'])} - {_name(game['second'])} {result} "
            f"({game['end_reason']}) {url}/games/{game['id']}"
        )


def _name(bot: dict[str, Any]) -> str:
    return f"{bot['name']} v{bot['version']}"


def _elo(challenge: dict[str, Any]) -> str:
    if challenge["elo"] is None:
        return "Elo: no pairs yet"
    return f"Elo {challenge['elo']:+.1f} (95%: {challenge['elo_low']:+.1f} to {challenge['elo_high']:+.1f})"
