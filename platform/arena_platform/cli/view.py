"""`arena view`: serves the replay viewer over local replay files on 127.0.0.1 (see local_view)."""

from __future__ import annotations

import argparse
import contextlib
import socket
from pathlib import Path

import uvicorn

from arena_platform.cli.common import UsageError

LOOPBACK = "127.0.0.1"  # local files are shown to this machine only


def add_commands(commands: argparse._SubParsersAction) -> None:
    view = commands.add_parser(
        "view",
        help="show replay files (as `arena play --out` writes them) in the replay viewer",
        description="Serves the replay viewer for local replay files on 127.0.0.1, with no account and "
        "no database, and prints each file's address. Ctrl-C stops it.",
    )
    view.add_argument("replays", nargs="+", type=Path, metavar="REPLAY", help="a replay file (JSON)")
    view.add_argument("--port", type=int, default=0, help="the port (default: any free one)")
    view.set_defaults(run=_run_view)


def _run_view(args: argparse.Namespace) -> int:
    from arena_platform.local_view import ReplayFileError, local_view_app

    try:
        app = local_view_app(args.replays)
    except ReplayFileError as error:
        raise UsageError(str(error)) from None
    listener = socket.socket()
    try:
        listener.bind((LOOPBACK, args.port))
    except OSError as error:
        raise UsageError(f"cannot listen on {LOOPBACK}:{args.port}: {error.strerror}") from None
    base = f"http://{LOOPBACK}:{listener.getsockname()[1]}"
    for number, path in enumerate(args.replays, start=1):
        print(f"{path}: {base}/games/{number}")
    print("Ctrl-C stops the viewer", flush=True)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn stops on Ctrl-C, then raises it again
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])
    return 0
