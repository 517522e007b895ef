"""`arena competition create|list|show|leagues|enter|results`: time-boxed contests on a server
(organisers create them; anyone with a token enters a bot: an ONNX file, or one of their bots copied
in; anyone reads a final's progress and ranking, and saves its CSV, JSON and replay zip)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from arena_games.registry import GAMES
from arena_platform.cli.common import (
    UsageError,
    add_manifest_options,
    add_server_options,
    manifest_overrides,
    server_token,
)


def add_commands(commands: argparse._SubParsersAction) -> None:
    competition = commands.add_parser(
        "competition", help="create, list, show and enter competitions on a server"
    ).add_subparsers(required=True, metavar="ACTION")

    create = competition.add_parser("create", help="create a competition (organisers only)")
    create.add_argument("--game", required=True, help=f"one of: {', '.join(sorted(GAMES))}")
    create.add_argument("--title", required=True)
    create.add_argument("--description", default="")
    create.add_argument(
        "--opens", required=True, help="when entries open: ISO 8601 with a zone, 2026-12-01T12:00Z"
    )
    create.add_argument("--deadline", required=True, help="when entries close: ISO 8601 with a zone")
    create.add_argument("--max-active-bots", type=int, default=3, help="bot names a user may have active")
    create.add_argument("--uploads-per-day", type=int, default=5, help="entries a user may start per day")
    create.add_argument("--simulations", type=int, help="the ladder's budget per move (the server's default)")
    final = create.add_mutually_exclusive_group()
    final.add_argument("--final-pairs", type=int, help="the final: pairs per pair of entrants (default 4)")
    final.add_argument("--final-seconds", type=int, help="the final: a time budget instead")
    create.add_argument("--final-stop", choices=("budget", "settled"), help="a timed final's stopping rule")
    create.add_argument("--final-confidence", type=float, help="with --final-stop settled, e.g. 0.95")
    create.add_argument(
        "--hidden-ranking", action="store_true", help="show its ladder's ratings to nobody until the final"
    )
    create.add_argument(
        "--league",
        action="append",
        metavar="NAME=BOSS",
        help="a league and its boss (a house bot), the lowest first; repeat for each league",
    )
    add_server_options(create)
    create.set_defaults(run=_run_create)

    listing = competition.add_parser("list", help="list competitions, newest first")
    add_server_options(listing)
    listing.set_defaults(run=_run_list)

    show = competition.add_parser("show", help="show a competition's terms, phase and entrants")
    show.add_argument("id", type=int)
    add_server_options(show)
    show.set_defaults(run=_run_show)

    leagues = competition.add_parser("leagues", help="show a competition's leagues, bosses and promotions")
    leagues.add_argument("id", type=int)
    add_server_options(leagues)
    leagues.set_defaults(run=_run_leagues)

    enter = competition.add_parser("enter", help="enter an ONNX file, or --bot one of your bots, copied in")
    enter.add_argument("id", type=int, help="the competition's id")
    enter.add_argument("file", type=Path, nargs="?", help="the ONNX file to upload into it")
    enter.add_argument("--bot", type=int, help="your bot's id, entered without an upload")
    add_manifest_options(enter)
    add_server_options(enter)
    enter.set_defaults(run=_run_enter)

    results = competition.add_parser("results", help="show a competition's final: progress and ranking")
    results.add_argument("id", type=int, help="the competition's id")
    results.add_argument("--csv", type=Path, metavar="FILE", help="write the ranking as CSV to FILE")
    results.add_argument("--json", type=Path, metavar="FILE", help="write the ranking as JSON to FILE")
    results.add_argument("--zip", type=Path, metavar="FILE", help="write every final game's replay to FILE")
    add_server_options(results)
    results.set_defaults(run=_run_results)


def _run_create(args: argparse.Namespace) -> int:
    terms = {
        "game": args.game,
        "title": args.title,
        "description": args.description,
        "opens_at": args.opens,
        "deadline": args.deadline,
        "max_active_bots": args.max_active_bots,
        "uploads_per_day": args.uploads_per_day,
        "simulations": args.simulations,
        "final": _final(args),
        "hidden_ranking": args.hidden_ranking,
        "leagues": _leagues(args.league),
    }
    made = _ask(args, "creating a competition", lambda client: client.create_competition(**terms))
    print(
        f"competition {made['id']} created: {made['title']} ({made['phase']}); its ladder is {made['ladder']}"
    )
    return 0


def _final(args: argparse.Namespace) -> dict[str, Any]:
    if args.final_seconds is None:
        if args.final_stop is not None or args.final_confidence is not None:
            raise UsageError("--final-stop and --final-confidence go with --final-seconds")
        return {"pairs": 4 if args.final_pairs is None else args.final_pairs}
    return {"seconds": args.final_seconds, "stop": args.final_stop, "confidence": args.final_confidence}


def _leagues(given: list[str] | None) -> list[dict[str, str]] | None:
    """The --league NAME=BOSS options as the API's leagues; None without any."""
    if given is None:
        return None
    leagues = []
    for league in given:
        name, equals, boss = league.partition("=")
        if not (equals and name and boss):
            raise UsageError(f"--league {league!r}: write NAME=BOSS, e.g. wood=random")
        leagues.append({"name": name, "boss": boss})
    return leagues


def _run_list(args: argparse.Namespace) -> int:
    found = _ask(args, None, lambda client: client.competitions())
    if not found:
        print("no competitions yet")
    for competition in found:
        print(_line(competition))
    return 0


def _run_show(args: argparse.Namespace) -> int:
    from arena_platform.store.competitions import FinalTerms

    competition = _ask(args, None, lambda client: client.competition(args.id))
    print(_line(competition))
    if competition["description"]:
        print(f"  {competition['description']}")
    print(f"  organiser: {competition['organiser']}")
    print(f"  opens {competition['opens_at']}, deadline {competition['deadline']}")
    print(
        f"  per user: {competition['max_active_bots']} active bots, {competition['uploads_per_day']} entries "
        f"a day | ladder {competition['ladder']} at {competition['simulations']} simulations per move"
    )
    print(f"  final: {FinalTerms.model_validate(competition['final']).summary()}")
    if competition["ranking_hidden"]:
        print("  ranking: hidden until the final is finished")
    elif competition["hidden_ranking"]:
        print("  ranking: out, the final is finished (hidden until then)")
    print(f"  {competition['entrants']} entrants, {competition['bots']} bots entered")
    if competition["leagues"]:
        sizes = zip(competition["leagues"], competition["league_sizes"], strict=True)
        print("  leagues: " + ", ".join(f"{league['name']} (members: {size})" for league, size in sizes))
    return 0


def _run_leagues(args: argparse.Namespace) -> int:
    view = _ask(args, None, lambda client: client.competition_leagues(args.id))
    hidden = view["ranking_hidden"]
    for league in reversed(view["leagues"]):  # the highest first
        boss = league["boss"]
        members = len(league["members"])
        print(f"{league['name']}: boss {boss['name']} ({_rating(boss, hidden)}), members: {members}")
        for place, member in enumerate(league["members"], start=1):
            print(
                f"  {place:>3}. {member['name']} v{member['version']} "
                f"by {member['author']}  {_rating(member, hidden)}"
            )
        for promotion in league["promotions"]:
            evidence = "" if hidden else f"P(stronger than {boss['name']}) {promotion['probability']:.3f} "
            print(
                f"  promoted {promotion['at']}: {promotion['name']} to {promotion['to_league']}, "
                f"{evidence}after {promotion['games']} games"
            )
    return 0


def _rating(bot: dict[str, Any], hidden: bool) -> str:
    if hidden:  # the competition hides its ranking
        return "rating hidden"
    return "unrated" if bot["rating"] is None else f"{bot['rating']:+.0f} Elo"


def _line(competition: dict[str, Any]) -> str:
    return (
        f"{competition['id']:>4}  {competition['title']}  [{competition['phase']}]  {competition['game']} "
        f"v{competition['game_version']}  deadline {competition['deadline']}"
    )


def _run_enter(args: argparse.Namespace) -> int:
    if (args.file is None) == (args.bot is None):
        raise UsageError("enter an ONNX file or --bot ID (one of your bots), not both nor neither")
    if args.bot is not None and manifest_overrides(args):
        raise UsageError("manifest options go with a file: a copied bot keeps its manifest")
    bot = _ask(
        args,
        "entering a competition",
        lambda client: client.enter_competition(
            args.id, path=args.file, bot_id=args.bot, **manifest_overrides(args)
        ),
    )
    print(
        f"entered {bot['name']!r} version {bot['version']} as bot {bot['id']} on ladder {bot['ladder']} "
        f"of competition {args.id}"
    )
    return 0


# A final's files: the CLI's option, the server's file name.
RESULT_FILES = (("csv", "results.csv"), ("json", "results.json"), ("zip", "final.zip"))


def _run_results(args: argparse.Namespace) -> int:
    results = _ask(args, None, lambda client: client.competition_results(args.id))
    progress = results["progress"]
    print(f"competition {args.id}: {results['phase']}")
    if results["started_at"] is not None:
        ended = f", finished {results['finished_at']}" if results["finished_at"] else ""
        print(
            f"  final of {len(results['entrants'])} entrants, started {results['started_at']}{ended}, "
            f"seed {results['seed']}"
        )
        print(
            f"  pairings: {progress['booked']} booked in {progress['rounds']} rounds, {progress['done']} "
            f"done, {progress['failed']} failed, {progress['in_flight']} in flight"
        )
    if results["ranking"] is not None:
        print("  provisional ranking:" if results["provisional"] else "  final ranking:")
        for row in results["ranking"]:
            print(_ranking_line(row))
    for option, name in RESULT_FILES:
        target = getattr(args, option)
        if target is not None:
            content = _ask(args, None, lambda client, name=name: client.competition_file(args.id, name))
            try:
                target.write_bytes(content)
            except OSError as error:
                raise UsageError(f"cannot write {target}: {error.strerror}") from None
            print(f"wrote {name} to {target}")
    return 0


def _ranking_line(row: dict[str, Any]) -> str:
    rank = f"{row['rank']}{'=' if row['tied'] else ''}"
    if row["rating"] is None:
        rating = "unrated"
    else:
        rating = f"{row['rating']:+7.1f} [{row['interval_low']:+.1f}, {row['interval_high']:+.1f}]"
    return (
        f"  {rank:>4}  {row['name']}  {rating}  {row['games']} games "
        f"{row['wins']}/{row['draws']}/{row['losses']}"
    )


def _ask(args: argparse.Namespace, doing: str | None, call: Any) -> Any:
    """What `call(client)` returns from the server; a request that needs a token says `doing`."""
    from arena_platform.client import ArenaClient, ArenaClientError

    token = server_token(args, doing) if doing else None
    try:
        with ArenaClient(args.url, token) as client:
            return call(client)
    except ArenaClientError as error:
        raise UsageError(str(error)) from None
