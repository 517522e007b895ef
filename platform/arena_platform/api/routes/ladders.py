"""/ladders: the ladders (one game version at one compute budget) and their leaderboards."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel
from pydantic_core import to_json
from sqlmodel import Session

from arena_platform.api.cache import Body
from arena_platform.api.deps import LadderId, Services, ServicesDep, SessionDep
from arena_platform.api.errors import documented, not_found, refused
from arena_platform.db import session as open_session
from arena_platform.models import Ladder
from arena_platform.store import bookings, competitions, ladders, reads
from arena_platform.store.reads import LadderPace, LeaderboardEntry, PairingProgress, UtcDatetime

router = APIRouter(prefix="/ladders", tags=["ladders"])


class LadderOut(BaseModel):
    id: int
    name: str
    game: str
    game_version: int
    simulations: int  # network evaluations per move for every search bot
    competition_id: int | None  # the competition it rates; None: the open ladder uploads join
    created_at: UtcDatetime


class Leaderboard(BaseModel):
    ladder: LadderOut
    progress: PairingProgress  # pairings by state
    pace: LadderPace  # pairings finished per minute lately: the time left is what is in flight over it
    entries: list[LeaderboardEntry]  # best first; unrated bots last


@router.get("", summary="All ladders: the open ones, then the competitions'")
def list_ladders(session: SessionDep) -> list[LadderOut]:
    return [
        LadderOut.model_validate(ladder, from_attributes=True) for ladder in ladders.list_ladders(session)
    ]


@router.get(
    "/{ladder_id}/leaderboard",
    summary="A ladder's ratings and progress",
    response_model=Leaderboard,
    responses={
        304: {"description": "Not modified: the If-None-Match tag is current"},
        **documented(403, 404),
    },
)
async def leaderboard(ladder_id: LadderId, request: Request, services: ServicesDep) -> Response:
    """At most `leaderboard_cache_seconds` old: served from the API process's short-lived cache,
    gzip-compressed when the client accepts it, with an ETag for conditional requests. The ladder
    of a competition whose ranking is hidden answers 403 `ranking_hidden`."""

    body = await services.leaderboards.get_async(ladder_id, _leaderboard_json(services, ladder_id))
    return body.response(request.headers)


def cached_leaderboard(services: Services, ladder_id: int) -> Body:
    """What the leaderboard endpoint answers now, from the same cache. Blocks while a missing entry
    is computed: for sync routes (worker threads) such as the web page's."""
    return services.leaderboards.get(ladder_id, _leaderboard_json(services, ladder_id))


def _leaderboard_json(services: Services, ladder_id: int) -> Callable[[], bytes]:
    def compute() -> bytes:  # in a worker thread
        with open_session(services.engine) as session:
            return leaderboard_document(ladder_id, session)

    return compute


def leaderboard_document(ladder_id: int, session: Session) -> bytes:
    """The ladder's leaderboard (a `Leaderboard`) as JSON, read from the database now; 404 when
    the ladder is unknown, 403 when it is a competition's whose ranking is hidden. The entries go
    out as the dicts the store reads: the same bytes as the model's JSON, without validating a
    model per bot."""
    ladder = ladders.get_ladder(session, ladder_id=ladder_id)
    if ladder is None:
        raise not_found(f"ladder {ladder_id}")
    require_ranking_shown(session, ladder)
    document = {  # Leaderboard's fields, in its order
        "ladder": LadderOut.model_validate(ladder, from_attributes=True),
        "progress": reads.pairing_progress(session, ladder_id=ladder_id),
        "pace": bookings.ladder_pace(session, ladder=ladder),
        "entries": reads.leaderboard_entries(session, ladder_id=ladder_id),
    }
    return to_json(document)


def require_ranking_shown(session: Session, ladder: Ladder) -> None:
    """403 `ranking_hidden` when `ladder` is a competition's whose ranking is hidden until the final
    (store.competitions.check_ranking_shown): for every read of its ratings."""
    try:
        competitions.check_ranking_shown(session, ladder=ladder)
    except competitions.RankingHidden as hidden:
        raise refused(hidden) from None
