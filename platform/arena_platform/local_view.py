"""`arena view`: the replay viewer over local replay files, with no account and no database.

The same pages and modules as the server's replay viewer: `/games/{n}` renders `replay.html`, whose
player fetches `/api/v1/games/{n}/frames`, answered by the frames endpoint's own `replay_frames`.
Game n is the n-th file given (from 1); `/` shows the first. The files are read, checked against
the replay schema (arena_games/replay.schema.json) and re-played when the app is made, so a bad
file, crafted ones included, is reported by name before anything is served.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from arena_bots.pairs import first_seat_score
from arena_games.api import GameError
from arena_games.replay import BadReplay, Replay, json_schema, parse_json
from arena_platform.api.errors import install_error_handlers, not_found
from arena_platform.api.pages import install_frontend, not_found_page, render
from arena_platform.api.routes.frames import GameFrames, frames_of
from arena_platform.store.reads import BotRef, GameSummary

LOCAL = 0  # the ladder and bot ids of local games: there is no ladder page nor bot page to link
SHOWN_CHARS = 200  # of a schema error's message, which quotes the offending value whole


class ReplayFileError(Exception):
    """A replay file that cannot be read or re-played; the message names the file and the reason."""


@dataclass(frozen=True)
class LocalGame:
    summary: GameSummary  # what the page header and the end-of-game line show
    frames: GameFrames


def local_view_app(paths: Sequence[str | os.PathLike[str]]) -> FastAPI:
    """The viewer over the replay files `paths`; ReplayFileError for a file it cannot show."""
    games = {number: load_game(number, Path(path)) for number, path in enumerate(paths, start=1)}
    app = FastAPI(title="Arena replays", docs_url=None, redoc_url=None, openapi_url=None)
    install_error_handlers(app, not_found_page=not_found_page)
    install_frontend(app, site_nav=False)  # no leaderboard, games list, upload nor API here

    def find(number: int) -> LocalGame:
        if number not in games:
            raise not_found(f"game {number}")
        return games[number]

    @app.get("/", include_in_schema=False)
    def first() -> RedirectResponse:
        return RedirectResponse("/games/1")

    @app.get("/games/{number}", response_class=HTMLResponse)
    def replay_page(number: int, request: Request) -> HTMLResponse:
        game = find(number).summary
        data = {"game": game, "frames_url": f"/api/v1/games/{number}/frames"}
        return render(request, "replay.html", game=game, ladder=None, page_data=data)

    @app.get("/api/v1/games/{number}/frames")
    def frames(number: int) -> GameFrames:
        return find(number).frames

    return app


def load_game(number: int, path: Path) -> LocalGame:
    """The replay file at `path` as local game `number`; ReplayFileError if it cannot be shown."""
    try:
        text = path.read_text(encoding="utf-8")
        modified = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except (OSError, UnicodeDecodeError) as error:
        raise ReplayFileError(f"cannot read {path}: {error}") from None
    try:
        replay = Replay.from_dict(_schema_checked(parse_json(text)))
        seats = [BotRef(id=LOCAL, name=name, version=1) for name in replay.players]
        frames = frames_of(replay, game_id=number, seats=seats)
    except GameError as error:  # no JSON, off the schema, an unknown game or version, an illegal step
        raise ReplayFileError(f"{path} cannot be re-played: {error}") from None
    index = int(replay.meta.get("index", 0))  # the schema made it integral (1e3 is an integer too)
    summary = GameSummary(
        id=number,
        ladder_id=LOCAL,
        pairing_id=index // 2 + 1,  # local games come in seat-swapped pairs, numbered from 1
        index=index % 2,
        first=seats[0],
        second=seats[1],
        score=first_seat_score(replay.returns),
        end_reason=replay.end_reason,
        forfeit_seat=None if replay.forfeit is None else replay.forfeit.player,
        steps=len(replay.steps),
        replay_sha256="",
        created_at=modified,
    )
    return LocalGame(summary, frames)


def _schema_checked(data: Any) -> Any:
    """`data`, a replay file's JSON, when it follows the replay schema; BadReplay names the first fault
    otherwise (a file from elsewhere is not trusted to be what `arena play` wrote)."""
    error = jsonschema.exceptions.best_match(_replay_validator().iter_errors(data))
    if error is None:
        return data
    where = "/".join(str(part) for part in error.absolute_path) or "the top level"
    message = error.message if len(error.message) <= SHOWN_CHARS else error.message[:SHOWN_CHARS] + "..."
    raise BadReplay(f"it does not follow the replay schema: at {where}: {message}")


@functools.cache
def _replay_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json_schema())
