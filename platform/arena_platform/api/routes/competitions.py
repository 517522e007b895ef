"""/competitions: time-boxed contests on one game version, each rating its entrants on a ladder of
its own (store.competitions has the rules), and their entries: uploads or copies of your bots."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from arena_bots.validation import ValidationReport
from arena_platform.api.deps import MAX_ID, CurrentUser, Limit, Offset, Services, ServicesDep, SessionDep
from arena_platform.api.errors import ApiError, documented, not_found, refused
from arena_platform.api.routes.bots import (
    count_upload,
    entered,
    platform_caused,
    read_form,
    record_retrying,
    validated_model,
)
from arena_platform.db import session as open_session
from arena_platform.models import Entry, Ladder, User
from arena_platform.store import competitions, leagues, users
from arena_platform.store.competitions import CompetitionTerms, CompetitionView, EntrantView
from arena_platform.store.reads import BotDetail
from arena_platform.store.refusals import Refused
from arena_platform.store.sprt_tests import SprtParameters

_log = logging.getLogger(__name__)

router = APIRouter(prefix="/competitions", tags=["competitions"])

CompetitionId = Annotated[int, Path(ge=1, le=MAX_ID, description="a competition's id")]


class EntryCopy(BaseModel):
    bot_id: int = Field(ge=1, le=MAX_ID, description="one of your bots of the competition's game and version")


def _entry_document() -> dict[str, Any]:
    """The OpenAPI request body of an entry: the route reads it itself (a form or JSON)."""
    upload = {
        "type": "object",
        "properties": {"model": {"type": "string", "format": "binary"}, "name": {"type": "string"}},
        "required": ["model"],
        "description": "an upload, with the fields of POST /bots (game: the competition's)",
    }
    content = {
        "multipart/form-data": {"schema": upload},
        "application/json": {"schema": EntryCopy.model_json_schema()},
    }
    return {"requestBody": {"required": True, "content": content}}


@router.post(
    "",
    status_code=201,
    summary="Create a competition (organisers only)",
    responses=documented(401, 403),
)
def create_competition(
    terms: CompetitionTerms, user: CurrentUser, session: SessionDep, services: ServicesDep
) -> CompetitionView:
    """A competition on the current version of `game`, with its own ladder (the game's house bots
    anchor its ratings) at `simulations` per move. Refusals: 403 `not_organiser`, 422
    `unknown_game`, `out_of_range` (a limit or budget), `bad_schedule` (the deadline is not after
    the opening, or has passed), `invalid_final`, `invalid_leagues`. With `hidden_ranking`, its
    ladder's leaderboard answers 403 `ranking_hidden` to everyone, the organiser too."""
    now = services.clock()
    with _answering_refusals(session):
        competition = competitions.create_competition(
            session,
            organiser=user,
            terms=terms,
            default_simulations=services.settings.ladder_simulations,
            now=now,
        )
    session.commit()
    return _view(session, competition.id, now)


@router.get("", summary="Competitions, newest first")
def list_competitions(
    session: SessionDep, services: ServicesDep, limit: Limit = 100, offset: Offset = 0
) -> list[CompetitionView]:
    return competitions.list_competitions(session, now=services.clock(), limit=limit, offset=offset)


@router.get(
    "/{competition_id}", summary="A competition: its terms, phase and entrants", responses=documented(404)
)
def get_competition(
    competition_id: CompetitionId, session: SessionDep, services: ServicesDep
) -> CompetitionView:
    return _view(session, competition_id, services.clock())


@router.get(
    "/{competition_id}/entries",
    summary="A competition's entered bots, in the order their entries started",
    responses=documented(404),
)
def list_entrants(competition_id: CompetitionId, session: SessionDep) -> list[EntrantView]:
    """Every bot entered (each version an entry), with its author and the time its entry's request
    arrived, which the deadline was read by."""
    with _answering_refusals(session):
        competitions.competition_ladder(session, competition_id=competition_id)  # 404 when there is none
    return competitions.list_entrants(session, competition_id=competition_id)


@router.get(
    "/{competition_id}/leagues",
    summary="A competition's leagues: each boss, its members and the promotions out of it",
    responses=documented(404),
)
def get_leagues(competition_id: CompetitionId, session: SessionDep) -> leagues.LeaguesView:
    """Every league, lowest first, with its boss and members (ratings on the competition's ladder)
    and the promotions out of it, newest first (store.leagues has the rules). 404 `not_found` for a
    competition that does not exist, `no_leagues` for one without leagues."""
    with _answering_refusals(session):
        competition, ladder = competitions.competition_ladder(session, competition_id=competition_id)
    view = leagues.leagues_view(session, competition=competition, ladder=ladder)
    if view is None:
        raise ApiError(404, "no_leagues", f"competition {competition_id} has no leagues")
    return view


def _view(session: Session, competition_id: int, now: datetime) -> CompetitionView:
    view = competitions.get_competition(session, competition_id=competition_id, now=now)
    if view is None:
        raise not_found(f"competition {competition_id}")
    return view


@router.post(
    "/{competition_id}/entries",
    status_code=201,
    summary="Enter a bot: an upload, or a copy of one of your bots",
    responses=documented(401, 403, 404, 409, 413, 429),
    openapi_extra=_entry_document(),
)
async def enter(
    competition_id: CompetitionId,
    http: Request,
    user: CurrentUser,
    session: SessionDep,
    services: ServicesDep,
) -> BotDetail:
    """A multipart form (as POST /bots; `game` defaults to the competition's) validated at the
    competition's budget and entered on its ladder, or JSON `{"bot_id": N}`: one of your bots of
    the same game and version, copied in (the same model; its validation stands when it was made at
    the competition's budget or more). The request's arrival decides the time rules, however long
    the validation takes: 409 `not_open` before the opening, 409 `deadline_passed` from the
    deadline on. Other refusals: 404 (no such competition or bot), 403 `not_owner`, 422
    `wrong_game`, `wrong_version`, `budget_not_validated` or the validation's code, 409
    `active_bots_reached` or `name_taken`, 429 `uploads_per_day_reached` (the competition's
    entries per day) or `rate_limited` (your uploads per hour)."""
    started = services.clock()  # the entry's start, recorded before any validation
    if http.headers.get("content-type", "").startswith("multipart/form-data"):
        bot_id, ladder_id = await _enter_upload(http, competition_id, user, session, services, started)
    else:
        copy = await _copy_request(http, services.settings.max_json_bytes)
        bot_id, ladder_id = await run_in_threadpool(
            record_retrying,
            session,
            lambda: _enter_copy(session, services, competition_id, user, copy.bot_id, started),
        )
    return await entered(services, session, bot_id=bot_id, ladder_id=ladder_id)


async def _copy_request(http: Request, max_bytes: int) -> EntryCopy:
    body = await http.body()
    if len(body) > max_bytes:
        raise ApiError(413, "payload_too_large", f"a copy's JSON body is at most {max_bytes} bytes")
    try:
        return EntryCopy.model_validate_json(body)
    except ValidationError as error:
        problems = [{**problem, "loc": ("body", *problem["loc"])} for problem in error.errors()]
        raise RequestValidationError(problems) from None


def _enter_copy(
    session: Session, services: Services, competition_id: int, user: User, bot_id: int, started: datetime
) -> tuple[int, int]:
    """The copy's bot and ladder ids, entered and committed in one transaction (a refusal counts
    nothing)."""
    with _answering_refusals(session):
        competition, ladder = competitions.competition_ladder(session, competition_id=competition_id)
        entry = competitions.begin_entry(
            session, competition=competition, user_id=user.id, kind=competitions.COPY, now=started
        )
        bot = competitions.copy_bot(
            session,
            entry=entry,
            competition=competition,
            ladder=ladder,
            bot_id=bot_id,
            sprt=SprtParameters.from_settings(services.settings),
        )
    session.commit()
    return bot.id, ladder.id


async def _enter_upload(
    http: Request, competition_id: int, user: User, session: Session, services: Services, started: datetime
) -> tuple[int, int]:
    """The upload's bot and ladder ids: its entry counted (committed before the body is read), its
    model validated at the competition's budget, its bot recorded. A failure of the platform's
    uncounts it (the entry and the upload per hour), as for POST /bots."""
    attempt_id, entry_id, ladder = await run_in_threadpool(
        _begin_upload, session, services, competition_id, user, started
    )
    try:
        model_bytes, form = await read_form(http, game=ladder.game)
        if form.game != ladder.game:
            raise ApiError(422, "wrong_game", f"this competition plays {ladder.game}, not {form.game}")
        report, model_sha256 = await validated_model(services, model_bytes, form, ladder.simulations)
        bot_id = await run_in_threadpool(
            record_retrying, session, lambda: _record_entry(session, services, entry_id, report, model_sha256)
        )
    except Exception as error:
        if platform_caused(error):
            await run_in_threadpool(_uncount, services, attempt_id, entry_id)
        raise
    return bot_id, ladder.id


def _begin_upload(
    session: Session, services: Services, competition_id: int, user: User, started: datetime
) -> tuple[int, int, Ladder]:
    """(upload attempt id, entry id, the competition's ladder), committed; the refusal otherwise."""
    with _answering_refusals(session):
        competition, ladder = competitions.competition_ladder(session, competition_id=competition_id)
        entry = competitions.begin_entry(
            session, competition=competition, user_id=user.id, kind=competitions.UPLOAD, now=started
        )
    attempt_id = count_upload(session, user, services.settings)
    session.commit()
    return attempt_id, entry.id, ladder


def _record_entry(
    session: Session, services: Services, entry_id: int, report: ValidationReport, model_sha256: str
) -> int:
    """The accepted upload's bot on the competition's ladder, committed; its id."""
    entry = session.get(Entry, entry_id)
    competition, ladder = competitions.competition_ladder(session, competition_id=entry.competition_id)
    assert report.manifest is not None  # an accepted report has one
    with _answering_refusals(session):
        bot = competitions.enter_bot(
            session,
            entry=entry,
            competition=competition,
            ladder=ladder,
            manifest=report.manifest,
            report=report.to_dict(),
            model_sha256=model_sha256,
            sprt=SprtParameters.from_settings(services.settings),
        )
    session.commit()
    return bot.id


@contextmanager
def _answering_refusals(session: Session) -> Iterator[None]:
    """Answers a refusal of the store's (rolled back) with its status and code."""
    try:
        yield
    except Refused as refusal:
        session.rollback()
        raise refused(refusal) from None


def _uncount(services: Services, attempt_id: int, entry_id: int) -> None:
    """Uncount the upload the platform failed, in a session of its own (the request's may be
    broken). A failure is logged, and the counts stay."""
    try:
        with open_session(services.engine) as db:
            users.refund_upload_attempt(db, attempt_id=attempt_id)
            competitions.forget_entry(db, entry_id=entry_id)
            db.commit()
    except SQLAlchemyError:
        _log.exception("could not uncount upload attempt %d and entry %d", attempt_id, entry_id)
