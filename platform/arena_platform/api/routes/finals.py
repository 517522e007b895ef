"""/competitions/{id}/results and final.zip: a competition's final as it stands (store.finals has
the rules): its progress and ranking, the ranking as CSV and JSON, every final game's replay."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from typing import IO

from fastapi import APIRouter, Response
from fastapi.responses import StreamingResponse
from sqlalchemy import Engine
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from arena_platform.api.deps import ServicesDep, SessionDep
from arena_platform.api.errors import ApiError, documented, refused
from arena_platform.api.routes.competitions import CompetitionId
from arena_platform.blobs import BlobNotFound, BlobStore
from arena_platform.db import session as open_session
from arena_platform.finals.export import ranking_csv, ranking_json, write_replay_zip
from arena_platform.finals.ranking import FinalRanking
from arena_platform.models import Competition
from arena_platform.store import competitions, finals
from arena_platform.store.finals import FinalResults

router = APIRouter(prefix="/competitions", tags=["competitions"])

ZIP_CHUNK_BYTES = 1 << 16


@router.get(
    "/{competition_id}/results",
    summary="A competition's phase, its final's progress and its ranking",
    responses=documented(404),
)
def get_results(competition_id: CompetitionId, session: SessionDep, services: ServicesDep) -> FinalResults:
    """The phase (upcoming, open, closed, final, finished), the final's entrants, seed and
    progress (pairings booked, done, failed, in flight; rounds), and the ranking (the CSV's
    columns) once a final game exists, `provisional` until the final is finished; none while the
    competition hides its ranking and its final is not finished (`ranking_hidden`)."""
    return finals.results(session, competition=_competition(session, competition_id), now=services.clock())


@router.get(
    "/{competition_id}/results.csv",
    summary="The final's ranking as CSV",
    response_class=Response,
    responses={200: {"content": {"text/csv": {}}}, **documented(403, 404, 409)},
)
def get_results_csv(competition_id: CompetitionId, session: SessionDep) -> Response:
    """finals.export's columns, best first; 409 `no_final_games` before the final's first game, 403
    `ranking_hidden` while a hidden ranking's final is not finished."""
    ranking, names = _ranking(session, competition_id)
    return Response(ranking_csv(ranking, names), media_type="text/csv")


@router.get(
    "/{competition_id}/results.json",
    summary="The final's ranking as JSON",
    response_class=Response,
    responses={200: {"content": {"application/json": {}}}, **documented(403, 404, 409)},
)
def get_results_json(competition_id: CompetitionId, session: SessionDep) -> Response:
    """{"format", "tie_level", "entrants": rows}; 409 `no_final_games` before the final's first
    game, 403 `ranking_hidden` while a hidden ranking's final is not finished."""
    ranking, names = _ranking(session, competition_id)
    return Response(ranking_json(ranking, names), media_type="application/json")


@router.get(
    "/{competition_id}/final.zip",
    summary="Every game of the final as replay files",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/zip": {}}}, **documented(404, 409)},
)
async def get_final_zip(competition_id: CompetitionId, services: ServicesDep) -> StreamingResponse:
    """A zip of one replay JSON per final game, named in schedule order
    (`000041-7-vs-12-game1.json`), which `arena view` opens; built in a temporary file, replay by
    replay, then streamed. 409 `no_final_games` before the final's first game."""
    archive = await run_in_threadpool(_write_zip, services.engine, services.blobs, competition_id)
    headers = {"Content-Disposition": f'attachment; filename="competition-{competition_id}-final.zip"'}
    return StreamingResponse(_chunks(archive), media_type="application/zip", headers=headers)


def _write_zip(engine: Engine, blobs: BlobStore, competition_id: int) -> IO[bytes]:
    """The final's zip in a temporary file, rewound; the caller closes it (its stream does)."""
    with contextlib.ExitStack() as on_failure:
        archive = on_failure.enter_context(tempfile.TemporaryFile())
        with open_session(engine) as session:
            _competition(session, competition_id)
            replays = finals.final_replays(session, blobs, competition_id=competition_id)
            try:
                written = write_replay_zip(archive, replays)
            except BlobNotFound as error:
                raise ApiError(404, "replay_missing", f"a replay of the final is missing: {error}") from None
        if written == 0:
            raise _no_games(competition_id)
        archive.seek(0)
        on_failure.pop_all()
        return archive


def _chunks(archive: IO[bytes]) -> Iterator[bytes]:
    with archive:
        while chunk := archive.read(ZIP_CHUNK_BYTES):
            yield chunk


def _competition(session: Session, competition_id: int) -> Competition:
    try:
        competition, _ = competitions.competition_ladder(session, competition_id=competition_id)
    except competitions.CompetitionNotFound as refusal:
        raise refused(refusal) from None
    return competition


def _ranking(session: Session, competition_id: int) -> tuple[FinalRanking, dict[int, str]]:
    """The final's ranking and names; the refusal while the competition hides it (403
    `ranking_hidden`), 409 `no_final_games` before its first game."""
    try:
        _, ladder = competitions.competition_ladder(session, competition_id=competition_id)
        competitions.check_ranking_shown(session, ladder=ladder)
    except competitions.CompetitionRefused as refusal:
        raise refused(refusal) from None
    ranked = finals.final_ranking(session, competition_id=competition_id)
    if ranked is None:
        raise _no_games(competition_id)
    return ranked


def _no_games(competition_id: int) -> ApiError:
    return ApiError(409, "no_final_games", f"competition {competition_id}'s final has no games yet")
