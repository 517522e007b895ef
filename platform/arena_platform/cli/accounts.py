"""`arena user create`, `arena user organiser`, `arena user tokens` and `arena upload`."""

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
    user = commands.add_parser("user", help="manage Arena users").add_subparsers(
        required=True, metavar="ACTION"
    )
    create = user.add_parser("create", help="create a user in the database and print their API token")
    create.add_argument("name")
    create.add_argument("--organiser", action="store_true", help="who may create competitions")
    create.set_defaults(run=_run_user_create)
    organiser = user.add_parser(
        "organiser", help="let a user create competitions (in the database: the administrator's command)"
    )
    organiser.add_argument("name")
    organiser.add_argument("--revoke", action="store_true", help="take the organiser role back instead")
    organiser.set_defaults(run=_run_user_organiser)
    tokens = user.add_parser("tokens", help="list your active API tokens (never the tokens themselves)")
    add_server_options(tokens)
    tokens.set_defaults(run=_run_user_tokens)

    upload = commands.add_parser("upload", help="upload an ONNX bot to an Arena server")
    upload.add_argument("file", type=Path)
    upload.add_argument("--game", required=True, help=f"one of: {', '.join(sorted(GAMES))}")
    add_server_options(upload)
    add_manifest_options(upload)
    upload.set_defaults(run=_run_upload)


def _run_user_create(args: argparse.Namespace) -> int:
    from arena_platform.store import users

    _, token = _in_database(lambda db: users.create_user(db, name=args.name, organiser=args.organiser))
    print(token)
    return 0


def _run_user_organiser(args: argparse.Namespace) -> int:
    from arena_platform.store import users

    user = _in_database(lambda db: users.set_organiser(db, name=args.name, organiser=not args.revoke))
    print(f"{user.name} {'is' if user.organiser else 'is no longer'} an organiser")
    return 0


def _in_database(change: Any) -> Any:
    """What `change(session)` returns, committed, on the settings' database (migrated first); a
    UsageError naming the problem when the store refuses it or the database is out of reach."""
    from sqlalchemy.exc import OperationalError

    from arena_platform.db import make_engine, migrate, session
    from arena_platform.settings import SettingsError, load_settings
    from arena_platform.store import users

    try:
        settings = load_settings()
        engine = make_engine(settings.resolved_database_url)
        migrate(engine)
        with session(engine) as db:
            result = change(db)
            db.commit()
    except (SettingsError, users.InvalidName, users.NameTaken, users.UnknownUser) as error:
        raise UsageError(str(error)) from None
    except OperationalError as error:
        raise UsageError(f"cannot use the database: {error.orig}") from None
    return result


def _run_user_tokens(args: argparse.Namespace) -> int:
    from arena_platform.client import ArenaClient, ArenaClientError

    try:
        with ArenaClient(args.url, server_token(args, "listing tokens")) as client:
            tokens = client.tokens()
    except ArenaClientError as error:
        raise UsageError(str(error)) from None
    print(f"{'id':>6}  {'created':<20}  {'last used':<20}  name")
    for token in tokens:
        created, used = (_minute(token[key]) for key in ("created_at", "last_used_at"))
        print(f"{token['token_id']:>6}  {created:<20}  {used:<20}  {token['name'] or ''}")
    return 0


def _minute(moment: str | None) -> str:
    """An API time (ISO 8601, UTC) to the minute, or "never"."""
    return moment[:16].replace("T", " ") + " UTC" if moment else "never"


def _run_upload(args: argparse.Namespace) -> int:
    from arena_platform.client import ArenaClient, ArenaClientError

    token = server_token(args, "uploading")
    try:
        with ArenaClient(args.url, token) as client:
            bot = client.upload(args.file, args.game, **manifest_overrides(args))
    except ArenaClientError as error:
        raise UsageError(str(error)) from None
    print(f"uploaded {bot['name']!r} version {bot['version']} as bot {bot['id']} on ladder {bot['ladder']}")
    if test := bot.get("sprt"):
        old = test["old_bot"]
        print(
            f"an SPRT against version {old['version']} (bot {old['id']}) has started: "
            f"the bot's page, or GET /api/v1/bots/{bot['id']}/sprt, follows it"
        )
    return 0
