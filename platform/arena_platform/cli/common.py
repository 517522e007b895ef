"""What every command module shares."""

from __future__ import annotations

import argparse
import os
from typing import Any

from arena_bots.manifest import HEAD_KINDS, PLAYER_KINDS, VALUE_KINDS

# The manifest fields that a bot's upload may set, as the upload form (POST /api/v1/bots) takes
# them: field -> (type, choices or None, help). The game and its version come from --game.
MANIFEST_OPTIONS: dict[str, tuple[type, tuple[str, ...] | None, str]] = {
    "name": (str, None, "the bot's name"),
    "player": (str, PLAYER_KINDS, "how it plays"),
    "simulations": (int, None, "the bot's MCTS budget outside ladders, which impose theirs"),
    "c_puct": (float, None, "PUCT exploration weight"),
    "temperature": (float, None, "softmax temperature of a sample player"),
    "value": (str, VALUE_KINDS, "the value output's convention"),
    "head": (str, HEAD_KINDS, "policy for logits, q for action values"),
}


class UsageError(Exception):
    """A problem with what the user asked for; its message is shown as is, with exit status 2."""


def add_manifest_options(parser: argparse.ArgumentParser, *, leave_out: tuple[str, ...] = ()) -> None:
    """--name, --player, --simulations, --c-puct, ...: each overrides the file's `arena.<field>`;
    the fields in `leave_out` get no option (the command sets them otherwise)."""
    for field, (kind, choices, meaning) in MANIFEST_OPTIONS.items():
        if field in leave_out:
            continue
        parser.add_argument(
            f"--{field.replace('_', '-')}",
            type=kind,
            choices=choices,
            help=f"{meaning}; overrides the file's arena.{field}",
        )


def manifest_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The manifest options given on the command line, by field (those not given are left out)."""
    return {field: value for field in MANIFEST_OPTIONS if (value := getattr(args, field, None)) is not None}


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """--url and --token: the Arena server a command talks to, and the caller's API token."""
    parser.add_argument(
        "--url", help="the server (default: http://ARENA_HOST:ARENA_PORT, where `arena serve` listens)"
    )
    parser.add_argument("--token", help="an API token (default: the ARENA_TOKEN environment variable)")


def server_token(args: argparse.Namespace, doing: str) -> str:
    """The API token of --token or ARENA_TOKEN; a UsageError saying that `doing` needs one otherwise."""
    token = args.token or os.environ.get("ARENA_TOKEN")
    if not token:
        raise UsageError(
            f"{doing} needs an API token: pass --token or set ARENA_TOKEN (see `arena user create`)"
        )
    return token
