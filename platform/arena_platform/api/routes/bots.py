"""/bots: upload (validate, store, schedule), list, describe, retire, and a bot's games, record and SPRT."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException
from starlette.requests import ClientDisconnect

from arena_bots.validation import ValidationReport, validate
from arena_games.api import Game
from arena_games.registry import UnknownGame, get_game
from arena_platform.api.body_limit import BodyTooLarge
from arena_platform.api.deps import (
    MAX_ID,
    NO_NUL,
    BotId,
    CurrentUser,
    Limit,
    Offset,
    Services,
    ServicesDep,
    SessionDep,
)
from arena_platform.api.errors import ApiError, InvalidRequest, documented, not_found
from arena_platform.api.routes.ladders import require_ranking_shown
from arena_platform.db import session as open_session
from arena_platform.models import User, utc_now
from arena_platform.settings import Settings
from arena_platform.store import bots, reads, users
from arena_platform.store.ladders import ensure_ladder, get_ladder
from arena_platform.store.reads import (
    BotDetail,
    BotSummary,
    GameResult,
    GameSummary,
    OpponentResult,
    RatingPoint,
    SprtView,
)
from arena_platform.store.scheduling import book_rounds
from arena_platform.store.sprt_tests import SprtParameters

_log = logging.getLogger(__name__)

# The window of the upload rate limit (`Settings.uploads_per_hour` attempts per user).
RATE_WINDOW = timedelta(hours=1)

router = APIRouter(prefix="/bots", tags=["bots"])
Recorded = TypeVar("Recorded")


class RejectedUpload(InvalidRequest):
    """An upload refused as unprocessable. A model that failed validation has `report` (and `code`
    is the report's, `detail` its sentence); a malformed form has `errors` (code
    `invalid_request`); an unknown game has neither."""

    report: dict[str, Any] | None = None


class PlatformRefusal(ApiError):
    """A refusal of an upload that is the platform's doing, not a verdict on the uploader's model or
    form (validation's `platform_fault`, a race with another upload): it costs no upload."""


class UploadForm(BaseModel):
    """The upload form's fields besides the file (`model`). The manifest fields override the file's
    `arena.*` metadata; `game` fills in only where the file names no game."""

    game: str = Field(description="the game it plays, e.g. bobail (its ladder's)")
    name: str | None = Field(default=None, description="overrides the file's arena.name")
    player: str | None = Field(default=None, description="mcts | greedy | sample")
    simulations: int | None = Field(
        default=None, description="the bot's own MCTS budget (ladders impose theirs)"
    )
    c_puct: float | None = Field(default=None, description="PUCT exploration weight")
    temperature: float | None = Field(default=None, description="softmax temperature of a sample player")
    value: str | None = Field(default=None, description="the value output's convention: tanh | sigmoid")
    head: str | None = Field(default=None, description="policy (logits) | q (action values)")


def _form_document() -> dict[str, Any]:
    """The OpenAPI request body of an upload: the route reads its form itself (see `upload_bot`)."""
    fields = UploadForm.model_json_schema()
    model = {"type": "string", "format": "binary", "description": "the ONNX file"}
    schema = {
        "type": "object",
        "properties": {"model": model, **fields["properties"]},
        "required": ["model", *fields["required"]],
    }
    return {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": schema}}}}


@dataclass(frozen=True)
class CountedUpload:
    user: User  # the uploader
    attempt_id: int  # their UploadAttempt row: refunded when the platform fails the upload


def counted_upload(user: CurrentUser, session: SessionDep, services: ServicesDep) -> CountedUpload:
    """The uploader, once this upload is counted against their rate limit (429 when it is spent).

    A dependency, so it runs once the token is checked and before a byte of the body is read: the
    attempt is committed before anything can refuse the upload, and a model the validation refuses
    or a malformed form costs as much as an accepted bot. Refusals the platform caused are refunded
    (`upload_bot`).
    """
    attempt_id = count_upload(session, user, services.settings)
    session.commit()
    return CountedUpload(user, attempt_id)


def count_upload(session: Session, user: User, settings: Settings) -> int:
    """Counts one upload of the user against their uploads per hour; its attempt id (to refund it).
    429 `rate_limited` (rolled back) when they are spent. The caller commits."""
    limit = settings.uploads_per_hour
    try:
        return users.count_upload_attempt(session, user_id=user.id, limit=limit, window=RATE_WINDOW)
    except users.UploadLimitReached as reached:
        session.rollback()
        wait = max(1, math.ceil((reached.frees_at - utc_now()).total_seconds()))
        raise ApiError(
            429,
            "rate_limited",
            f"at most {limit} uploads per hour are allowed; try again in {wait} s",
            headers={"Retry-After": str(wait)},
        ) from None


@router.post(
    "",
    status_code=201,
    summary="Upload a bot",
    responses={**documented(401, 409, 413, 429), 422: {"model": RejectedUpload}},
    openapi_extra=_form_document(),
)
async def upload_bot(
    http: Request,
    counted: Annotated[CountedUpload, Depends(counted_upload)],
    session: SessionDep,
    services: ServicesDep,
) -> BotDetail:
    """Validate the model in the sandbox; when it passes, store it, enter it on its game's ladder
    and schedule its games. The form (multipart) holds the ONNX file as `model`, the `game` (at its
    current version) and manifest fields, which override the file's `arena.*` metadata; it is read
    only once the token is checked and the upload counted. A name you already use makes its next
    version, which first plays an SPRT against the previous one (that one keeps playing until the
    verdict; see `GET /bots/{id}/sprt`). An upload the platform failed (a refusal marked
    `platform_fault` in its report, a 409 `conflict`, a 5xx) does not count against your uploads
    per hour."""
    try:
        return await _upload(http, counted.user, session, services)
    except Exception as error:
        if platform_caused(error):
            await run_in_threadpool(refund, services, counted.attempt_id)
        raise


async def _upload(http: Request, user: User, session: Session, services: Services) -> BotDetail:
    model_bytes, form = await read_form(http)
    simulations_per_move = services.settings.ladder_simulations  # what a move costs on the ladder
    report, model_sha256 = await validated_model(services, model_bytes, form, simulations_per_move)
    bot_id, ladder_id = await run_in_threadpool(
        record_retrying,
        session,
        lambda: _insert_bot(session, user, report, model_sha256, simulations_per_move, services.settings),
    )
    return await entered(services, session, bot_id=bot_id, ladder_id=ladder_id)


async def validated_model(
    services: Services, model_bytes: bytes, form: UploadForm, simulations: int
) -> tuple[ValidationReport, str]:
    """The accepted model's validation report (its moves timed at `simulations` per move) and its
    blob key, once stored; 422 with the report's code when the validation refuses it (a
    PlatformRefusal when the platform is at fault)."""
    played = _game(form.game)
    given = form.model_dump(exclude={"game"})
    report = await services.compute.run(validate, model_bytes, played, given, simulations=simulations)
    if not report.ok:
        refusal = PlatformRefusal if report.platform_fault else ApiError
        raise refusal(422, report.code, report.message, extra={"report": report.to_dict()})
    return report, await run_in_threadpool(services.blobs.put, report.model_bytes)


async def entered(services: Services, session: Session, *, bot_id: int, ladder_id: int) -> BotDetail:
    """The recorded bot, once its ladder's leaderboard shows it and its games are booked."""
    services.leaderboards.invalidate(ladder_id)  # the uploader sees the new bot at once
    await run_in_threadpool(_schedule, services, ladder_id)
    return await run_in_threadpool(_described, session, bot_id)


async def read_form(http: Request, *, game: str | None = None) -> tuple[bytes, UploadForm]:
    """The model file's bytes and the form's other fields (empty ones are absent; `game`, when
    given, fills in a missing one); 422 `invalid_request` naming what is wrong with a malformed form."""
    try:
        async with http.form(max_files=1, max_fields=len(UploadForm.model_fields)) as form:
            model = form.get("model")
            fields = {"game": game} if game is not None else {}
            fields |= {
                key: value for key, value in form.items() if key in UploadForm.model_fields and value != ""
            }
            problems = [] if isinstance(model, UploadFile) else [_MISSING_FILE]
            try:
                parsed = UploadForm.model_validate(fields)
            except ValidationError as error:
                problems += [{**problem, "loc": ("body", *problem["loc"])} for problem in error.errors()]
            if problems:
                raise RequestValidationError(problems)
            assert isinstance(model, UploadFile)
            return await model.read(), parsed
    except MultiPartException as error:
        raise ApiError(
            422, "invalid_request", f"the upload is not a well-formed form: {error.message}"
        ) from None


_MISSING_FILE = {
    "type": "missing",
    "loc": ("body", "model"),
    "msg": "the ONNX file is missing (a file part named model)",
}


def platform_caused(error: Exception) -> bool:
    """Whether the upload failed through Arena (a bug, an outage, a PlatformRefusal) rather than the
    uploader (a refused model or name, a malformed form, a body over the cap, a hang-up)."""
    if isinstance(error, ApiError):
        return isinstance(error, PlatformRefusal) or error.status_code >= 500
    return not isinstance(error, RequestValidationError | BodyTooLarge | ClientDisconnect)


def refund(services: Services, attempt_id: int) -> None:
    """Uncount the attempt, in a session of its own (the request's may be broken). A refund that
    fails is logged, and the attempt stays counted."""
    try:
        with open_session(services.engine) as db:
            users.refund_upload_attempt(db, attempt_id=attempt_id)
            db.commit()
    except SQLAlchemyError:
        _log.exception("could not refund upload attempt %d", attempt_id)


@router.get("", summary="List bots, newest first")
def list_bots(
    session: SessionDep,
    limit: Limit = 100,
    offset: Offset = 0,
    ladder: Annotated[int | None, Query(ge=1, le=MAX_ID, description="only this ladder's bots")] = None,
    owner: Annotated[str | None, Query(max_length=64, pattern=NO_NUL, description="a user name")] = None,
    status: Literal["active", "retired"] | None = None,
) -> list[BotSummary]:
    return bots.list_bots(session, ladder_id=ladder, owner=owner, status=status, limit=limit, offset=offset)


@router.get(
    "/{bot_id}", summary="A bot with its manifest, validation report and rating", responses=documented(404)
)
def get_bot(bot_id: BotId, session: SessionDep) -> BotDetail:
    return _described(session, bot_id)


@router.delete("/{bot_id}", summary="Retire a bot (its owner only)", responses=documented(401, 403, 404))
def retire_bot(bot_id: BotId, user: CurrentUser, session: SessionDep, services: ServicesDep) -> BotDetail:
    """A retired bot plays no more games; its games, rating history and replays stay."""
    bot = bots.get_bot(session, bot_id=bot_id)
    if bot is None:
        raise not_found(f"bot {bot_id}")
    try:
        bots.retire_bot(session, bot=bot, user_id=user.id)
    except bots.NotOwner as error:
        raise ApiError(403, "not_owner", f"{error}: only its owner may retire it") from None
    session.commit()
    services.leaderboards.invalidate(bot.ladder_id)
    return _described(session, bot_id)


@router.get("/{bot_id}/games", summary="A bot's games, newest first", responses=documented(404))
def bot_games(
    bot_id: BotId,
    session: SessionDep,
    limit: Limit = 100,
    offset: Offset = 0,
    result: Annotated[GameResult | None, Query(description="from this bot's point of view")] = None,
    reason: Annotated[
        str | None, Query(max_length=200, pattern=NO_NUL, description="end reason contains")
    ] = None,
) -> list[GameSummary]:
    _existing(session, bot_id)
    return reads.list_games(session, bot_id=bot_id, result=result, reason=reason, limit=limit, offset=offset)


@router.get("/{bot_id}/opponents", summary="A bot's record against each opponent", responses=documented(404))
def bot_opponents(bot_id: BotId, session: SessionDep) -> list[OpponentResult]:
    _existing(session, bot_id)
    return reads.results_by_opponent(session, bot_id=bot_id)


@router.get("/{bot_id}/history", summary="A bot's rating after each refit", responses=documented(403, 404))
def bot_history(bot_id: BotId, session: SessionDep) -> list[RatingPoint]:
    """403 `ranking_hidden` for a bot of a competition whose ranking is hidden until the final."""
    bot = bots.get_bot(session, bot_id=bot_id)
    if bot is None:
        raise not_found(f"bot {bot_id}")
    require_ranking_shown(session, get_ladder(session, ladder_id=bot.ladder_id))
    return reads.rating_history(session, bot_id=bot_id)


@router.get(
    "/{bot_id}/sprt",
    summary="The SPRT of a new version against its previous version",
    responses=documented(404),
)
def bot_sprt(bot_id: BotId, session: SessionDep) -> SprtView:
    """The pentanomial SPRT where this bot is the new version: LLR with its bounds, the pair counts,
    the verdict (H1: better, H0: not better) and the Elo difference with its 95% interval. 404 with
    code `no_sprt` for a bot that has no test (a first version, a house bot)."""
    _existing(session, bot_id)
    test = reads.sprt_test(session, bot_id=bot_id)
    if test is None:
        raise ApiError(404, "no_sprt", f"bot {bot_id} has no SPRT: only a new version of a bot has one")
    return test


def _game(name: str) -> Game:
    try:
        return get_game(name)
    except UnknownGame as error:
        raise ApiError(422, "unknown_game", str(error)) from None


def record_retrying(session: Session, insert: Callable[[], Recorded]) -> Recorded:
    """What `insert` returns once it recorded an accepted upload and committed. A concurrent upload
    can win the race for a new ladder or the next version number (a unique constraint fails): one
    retry settles it."""
    try:
        return insert()
    except IntegrityError:
        session.rollback()
    try:
        return insert()
    except IntegrityError:
        session.rollback()
        raise PlatformRefusal(409, "conflict", "a simultaneous upload got in the way; upload again") from None


def _insert_bot(
    session: Session,
    user: User,
    report: ValidationReport,
    model_sha256: str,
    simulations: int,
    settings: Settings,
) -> tuple[int, int]:
    """The new bot on its game's ladder at `simulations` per move (created with its house bots if
    need be), committed; a new version of an active bot starts its SPRT with the settings'
    parameters."""
    assert report.manifest is not None  # an accepted report has one
    ladder = ensure_ladder(session, game=report.manifest.game, simulations=simulations)
    try:
        bot = bots.create_network_bot(
            session,
            ladder_id=ladder.id,
            owner_id=user.id,
            manifest=report.manifest,
            report=report.to_dict(),
            model_sha256=model_sha256,
            sprt=SprtParameters.from_settings(settings),
        )
    except bots.NameTaken as error:  # or NameReserved, a training session's
        session.rollback()
        raise ApiError(409, error.code, f"{error}: choose another name") from None
    session.commit()
    return bot.id, ladder.id


def _schedule(services: Services, ladder_id: int) -> None:
    """Books the ladder's next round at once and sends it: the new bot's pairings are urgent, played
    by the next task a worker takes (store.scheduling). The bot is recorded already, so a failure
    is logged, not reported: what was booked but not sent is sent by a sweep, and the ladder's next
    round picks the bot up otherwise."""
    try:
        book_rounds(
            services.engine,
            services.enqueue,
            [ladder_id],
            redelivery_seconds=services.settings.lease_seconds,
            now=services.clock(),
        )
    except Exception:
        _log.exception("could not book and send a round of ladder %d", ladder_id)


def _described(session: Session, bot_id: int) -> BotDetail:
    bot = bots.describe_bot(session, bot_id=bot_id)
    if bot is None:
        raise not_found(f"bot {bot_id}")
    return bot


def _existing(session: Session, bot_id: int) -> None:
    if bots.get_bot(session, bot_id=bot_id) is None:
        raise not_found(f"bot {bot_id}")
