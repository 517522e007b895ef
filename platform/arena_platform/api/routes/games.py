"""/games: finished games with filters, one game with its replay, and the replay alone."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from sqlmodel import Session

from arena_platform.api.deps import MAX_ID, NO_NUL, GameId, Limit, Offset, Services, ServicesDep, SessionDep
from arena_platform.api.errors import ApiError, documented, not_found
from arena_platform.blobs import BlobNotFound
from arena_platform.store import reads
from arena_platform.store.reads import GameResult, GameSummary

router = APIRouter(prefix="/games", tags=["games"])


class GameDetail(GameSummary):
    replay: dict[str, Any]  # the replay JSON (schema: arena_games/replay.schema.json)


@router.get("", summary="Finished games, newest first", responses=documented(422))
def list_games(
    session: SessionDep,
    limit: Limit = 100,
    offset: Offset = 0,
    ladder: Annotated[int | None, Query(ge=1, le=MAX_ID, description="only this ladder's games")] = None,
    bot: Annotated[int | None, Query(ge=1, le=MAX_ID, description="only games this bot played")] = None,
    result: Annotated[
        GameResult | None, Query(description="from `bot`'s point of view; win and loss need `bot`")
    ] = None,
    reason: Annotated[
        str | None, Query(max_length=200, pattern=NO_NUL, description="end reason contains")
    ] = None,
) -> list[GameSummary]:
    try:
        return reads.list_games(
            session, ladder_id=ladder, bot_id=bot, result=result, reason=reason, limit=limit, offset=offset
        )
    except ValueError as error:
        raise ApiError(422, "invalid_request", str(error)) from None


@router.get("/{game_id}", summary="A game with its replay", responses=documented(404))
def get_game(game_id: GameId, session: SessionDep, services: ServicesDep) -> GameDetail:
    game = _existing(session, game_id)
    replay = json.loads(_replay_bytes(services, game))
    return GameDetail(**game.model_dump(), replay=replay)


@router.get(
    "/{game_id}/replay",
    summary="A game's replay JSON",
    response_class=Response,
    responses={200: {"content": {"application/json": {}}}, **documented(404)},
)
def get_replay(game_id: GameId, session: SessionDep, services: ServicesDep) -> Response:
    game = _existing(session, game_id)
    return Response(_replay_bytes(services, game), media_type="application/json")


def _existing(session: Session, game_id: int) -> GameSummary:
    game = reads.get_game(session, game_id=game_id)
    if game is None:
        raise not_found(f"game {game_id}")
    return game


def _replay_bytes(services: Services, game: GameSummary) -> bytes:
    try:
        return services.blobs.get(game.replay_sha256)
    except BlobNotFound:
        raise ApiError(
            404, "replay_missing", f"the replay of game {game.id} is not in the blob store"
        ) from None
