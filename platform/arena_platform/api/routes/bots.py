"""/bots: upload (validate, store, schedule), list, describe, retire, and a bot's games, record and SPRT."""

from __future__ import annotations

import logging
import math
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, File, Form, Query, UploadFile
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from arena_bots.validation import ValidationReport, validate
from arena_games.api import Game
from arena_games.registry import UnknownGame, get_game
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
from arena_platform.models import User, utc_now
from arena_platform.queue import SCHEDULE_LADDER
from arena_platform.settings import Settings
from arena_platform.store import bots, reads, users
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.reads import (
    BotDetail,
    BotSummary,
    GameResult,
    GameSummary,
    OpponentResult,
    RatingPoint,
    SprtView,
)
from arena_platform.store.sprt_tests import SprtParameters

_log = logging.getLogger(__name__)

# The window of the upload rate limit (`Settings.uploads_per_hour` attempts per user).
RATE_WINDOW = timedelta(hours=1)

router = APIRouter(prefix="/bots", tags=["bots"])


class RejectedUpload(InvalidRequest):
    """An upload refused as unprocessable. A model that failed validation has `report` (and `code`
    is the report's, `detail` its sentence); a malformed form has `errors` (code
    `invalid_request`); an unknown game has neither."""

    report: dict[str, Any] | None = None


def counted_upload(user: CurrentUser, session: SessionDep, services: ServicesDep) -> User:
    """The uploader, once this upload is counted against their rate limit (429 when it is spent).

    A dependency, so it runs before the form is checked: the attempt is recorded and committed
    before anything can refuse the upload, and a rejected upload costs as much as an accepted one.
    """
    _check_upload_rate(session, user, services.settings)
    users.record_upload_attempt(session, user_id=user.id)
    session.commit()
    return user


@router.post(
    "",
    status_code=201,
    summary="Upload a bot",
    responses={**documented(401, 409, 413, 429), 422: {"model": RejectedUpload}},
)
async def upload_bot(
    model: Annotated[UploadFile, File(description="the ONNX file")],
    game: Annotated[str, Form(description="the game it plays, e.g. bobail (its ladder's)")],
    user: Annotated[User, Depends(counted_upload)],
    session: SessionDep,
    services: ServicesDep,
    name: Annotated[str | None, Form(description="overrides the file's arena.name")] = None,
    player: Annotated[str | None, Form(description="mcts | greedy | sample")] = None,
    simulations: Annotated[
        int | None, Form(description="the bot's own MCTS budget (ladders impose theirs)")
    ] = None,
    c_puct: Annotated[float | None, Form(description="PUCT exploration weight")] = None,
    temperature: Annotated[float | None, Form(description="softmax temperature of a sample player")] = None,
    value: Annotated[str | None, Form(description="the value output's convention: tanh | sigmoid")] = None,
    head: Annotated[str | None, Form(description="policy (logits) | q (action values)")] = None,
) -> BotDetail:
    """Validate the model in the sandbox; when it passes, store it, enter it on its game's ladder
    and schedule its games. The manifest fields given here override the file's `arena.*` metadata;
    `game` (at its current version) fills in only where the file names no game. A name you already
    use makes its next version, which first plays an SPRT against the previous one (that one keeps
    playing until the verdict; see `GET /bots/{id}/sprt`)."""
    played = _game(game)
    model_bytes = await model.read()
    given = {
        "name": name,
        "player": player,
        "simulations": simulations,
        "c_puct": c_puct,
        "temperature": temperature,
        "value": value,
        "head": head,
    }
    simulations_per_move = services.settings.ladder_simulations  # what a move costs on the ladder
    report = await services.compute.run(
        validate, model_bytes, played, given, simulations=simulations_per_move
    )
    if not report.ok:
        raise ApiError(422, report.code, report.message, extra={"report": report.to_dict()})
    model_sha256 = await run_in_threadpool(services.blobs.put, report.model_bytes)
    bot_id, ladder_id = await run_in_threadpool(
        _record_upload, session, user, report, model_sha256, simulations_per_move, services.settings
    )
    services.leaderboards.invalidate(ladder_id)  # the uploader sees the new bot at once
    await run_in_threadpool(_schedule, services, ladder_id)
    return await run_in_threadpool(_described, session, bot_id)


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


@router.get("/{bot_id}/history", summary="A bot's rating after each refit", responses=documented(404))
def bot_history(bot_id: BotId, session: SessionDep) -> list[RatingPoint]:
    _existing(session, bot_id)
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


def _check_upload_rate(session: Session, user: User, settings: Settings) -> None:
    """429 when the user's upload attempts of the last hour (accepted or not) reach the limit;
    Retry-After says when one frees."""
    now = utc_now()
    recent = users.upload_attempts_since(session, user_id=user.id, since=now - RATE_WINDOW)
    if len(recent) < settings.uploads_per_hour:
        return
    frees_at: datetime = recent[len(recent) - settings.uploads_per_hour] + RATE_WINDOW
    wait = max(1, math.ceil((frees_at - now).total_seconds()))
    raise ApiError(
        429,
        "rate_limited",
        f"at most {settings.uploads_per_hour} uploads per hour are allowed; try again in {wait} s",
        headers={"Retry-After": str(wait)},
    )


def _record_upload(
    session: Session,
    user: User,
    report: ValidationReport,
    model_sha256: str,
    simulations: int,
    settings: Settings,
) -> tuple[int, int]:
    """Record the accepted upload; (bot id, ladder id). A concurrent upload can win the race for a
    new ladder or the next version number (a unique constraint fails): one retry settles it."""
    try:
        return _insert_bot(session, user, report, model_sha256, simulations, settings)
    except IntegrityError:
        session.rollback()
    try:
        return _insert_bot(session, user, report, model_sha256, simulations, settings)
    except IntegrityError:
        session.rollback()
        raise ApiError(409, "conflict", "a simultaneous upload got in the way; upload again") from None


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
    """Ask the workers to book the ladder's next pairings. The bot is recorded already, so a broker
    failure is logged, not reported: the ladder's next scheduling run picks the bot up."""
    try:
        services.enqueue(SCHEDULE_LADDER, ladder_id)
    except Exception:
        _log.exception("could not enqueue %s for ladder %d", SCHEDULE_LADDER, ladder_id)


def _described(session: Session, bot_id: int) -> BotDetail:
    bot = bots.describe_bot(session, bot_id=bot_id)
    if bot is None:
        raise not_found(f"bot {bot_id}")
    return bot


def _existing(session: Session, bot_id: int) -> None:
    if bots.get_bot(session, bot_id=bot_id) is None:
        raise not_found(f"bot {bot_id}")
