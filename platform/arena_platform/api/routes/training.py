"""/training-sessions: start, list, follow, pause, resume and cancel training on the platform.

A session is trained by workers of the `training` queue (`arena worker --queues training`, or the
embedded worker where the `train` extra is installed); its checkpoints enter the game's ladder as
versions of its bot. Starting and controlling a session needs its owner's token; one session is
readable by all, as its checkpoints' bots and ratings are.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Path
from pydantic import BaseModel, Field
from sqlmodel import Session

from arena_games.registry import UnknownGame, get_game
from arena_platform.api.deps import MAX_ID, CurrentUser, Limit, Offset, ServicesDep, SessionDep
from arena_platform.api.errors import ApiError, documented, not_found
from arena_platform.models import Bot, TrainingSession, User, utc_now
from arena_platform.queue import TRAIN_SESSION, TRAINING_QUEUE
from arena_platform.settings import Settings
from arena_platform.store import bots, training
from arena_platform.store.ladders import find_ladder
from arena_platform.store.training import KIT_GAMES, KITS, TrainingDetail, TrainingSummary

router = APIRouter(prefix="/training-sessions", tags=["training"])

SessionId = Annotated[int, Path(ge=1, le=MAX_ID, description="a training session's id")]
DEFAULT_GAMES_PER_GENERATION = 64
MAX_SIMULATIONS = 1_000  # per self-play move
MAX_GAMES_PER_GENERATION = 1_024
SEARCH_FIELDS = ("simulations", "games_per_generation")  # the alphazero kit's self-play; no other kit's
DEFAULT_NAME_BYTES = 4  # random bytes of a default bot name: a name nobody can predict and take first


class TrainingRequest(BaseModel):
    """What to train. The network's shape is a fine-tuned checkpoint's own when `base_bot_id` is
    given; the limits of `episodes`, `time_limit_seconds`, `blocks` and `filters` are the
    deployment's settings."""

    game: str = Field(max_length=32, description="the game, e.g. bobail")
    kit: str = Field("alphazero", max_length=32, description=f"the training kit: {', '.join(KITS)}")
    episodes: int = Field(ge=1, description="training games in all (dqn: races started)")
    time_limit_seconds: int = Field(ge=1, description="training time in all, over every worker")
    blocks: int = Field(4, ge=1, description="residual blocks (an MLP's or dqn Q-net's hidden layers)")
    filters: int = Field(
        32, ge=1, description="convolution filters (an MLP's or dqn Q-net's units per layer)"
    )
    seed: int = Field(0, ge=0, le=MAX_ID)
    base_bot_id: int | None = Field(None, ge=1, le=MAX_ID, description="a checkpoint of yours to fine-tune")
    bot_name: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        pattern=r"^\S(.*\S)?$",
        description="default: <kit>-<8 random hex digits>, a name nobody can take before you",
    )
    simulations: int | None = Field(
        None, ge=1, le=MAX_SIMULATIONS, description="MCTS simulations per self-play move (default: the kit's)"
    )
    games_per_generation: int | None = Field(
        None, ge=1, le=MAX_GAMES_PER_GENERATION, description="self-play games between two trainings"
    )
    checkpoint_every: int = Field(
        5, ge=1, le=100_000, description="generations (the actor-critic kit's segments) between checkpoints"
    )


@router.post(
    "",
    status_code=202,
    summary="Start a training session",
    responses=documented(401, 409, 503),
)
def start_session(
    body: TrainingRequest, user: CurrentUser, session: SessionDep, services: ServicesDep
) -> TrainingDetail:
    """Queue a session for the training workers; its checkpoints enter the game's ladder as versions
    of its bot (without the SPRT an upload's new version plays: the ladder's ratings measure them).
    4xx: unknown game (`unknown_game`) or kit (`unknown_kit`), a game the kit cannot train
    (`unsupported_game`), an option the kit does not read (`not_for_kit`), a value beyond the
    limits (`out_of_range`), a base bot that is not a checkpoint of yours from the same kit
    (`bad_base_bot`), a name someone else has (`name_taken`) or another user's session holds
    (`name_reserved`: a session's name is its owner's until it finishes or is cancelled), too many
    sessions at once (`session_running`); 503 `no_training_workers` when no worker consumes the
    training queue."""
    settings = services.settings
    game = _trainable_game(body.game, body.kit)
    asked = _settings(body, settings) | _base(session, user, body)
    _check_limits(asked, settings)
    if training.live_sessions(session, owner_id=user.id) >= settings.training_sessions_per_user:
        raise ApiError(
            409,
            "session_running",
            f"you have {settings.training_sessions_per_user} training session(s) queued or running "
            "already: wait for it to end, or pause or cancel it",
        )
    since = utc_now() - timedelta(seconds=settings.lease_seconds)
    if training.training_workers(session, since=since) == 0:
        raise ApiError(
            503,
            "no_training_workers",
            f"no training worker is running: start one with `arena worker --queues {TRAINING_QUEUE}` "
            "(it needs the 'train' extra)",
        )
    bot_name = body.bot_name or f"{body.kit}-{secrets.token_hex(DEFAULT_NAME_BYTES)}"
    _check_name(session, user, game, bot_name, settings.ladder_simulations)
    row = training.create_session(
        session,
        owner_id=user.id,
        game=game,
        kit=body.kit,
        bot_name=bot_name,
        settings=asked,
        base_bot_id=body.base_bot_id,
    )
    session.commit()
    services.enqueue(TRAIN_SESSION, row.id)
    return _detail(session, row.id)


@router.get("", summary="Your training sessions, newest first", responses=documented(401))
def list_sessions(
    user: CurrentUser, session: SessionDep, limit: Limit = 100, offset: Offset = 0
) -> list[TrainingSummary]:
    return training.list_sessions(session, owner_id=user.id, limit=limit, offset=offset)


@router.get(
    "/{session_id}", summary="A training session, its progress and checkpoints", responses=documented(404)
)
def get_session(session_id: SessionId, session: SessionDep) -> TrainingDetail:
    """Status, counters, loss curve, and each checkpoint with its ladder rating (95% interval)."""
    return _detail(session, session_id)


@router.post(
    "/{session_id}/pause",
    summary="Pause a session after its generation",
    responses=documented(401, 403, 404, 409),
)
def pause_session(session_id: SessionId, user: CurrentUser, session: SessionDep) -> TrainingDetail:
    return _act(session, user, session_id, training.pause)


@router.post(
    "/{session_id}/cancel",
    summary="Cancel a session (its checkpoints stay)",
    responses=documented(401, 403, 404, 409),
)
def cancel_session(session_id: SessionId, user: CurrentUser, session: SessionDep) -> TrainingDetail:
    return _act(session, user, session_id, training.cancel)


@router.post(
    "/{session_id}/resume",
    status_code=202,
    summary="Resume a paused or failed session from its last generation",
    responses=documented(401, 403, 404, 409, 503),
)
def resume_session(
    session_id: SessionId, user: CurrentUser, session: SessionDep, services: ServicesDep
) -> TrainingDetail:
    settings = services.settings
    row = _owned(session, user, session_id)
    if row.status in (training.PAUSED, training.FAILED):
        live = training.live_sessions(session, owner_id=user.id)
        if live >= settings.training_sessions_per_user:
            raise ApiError(409, "session_running", "another of your training sessions is queued or running")
    detail = _act(session, user, session_id, training.resume)
    services.enqueue(TRAIN_SESSION, session_id)
    return detail


def _trainable_game(name: str, kit: str) -> str:
    """`name`, checked to be a game that `kit` trains."""
    try:
        game = get_game(name)
    except UnknownGame as error:
        raise ApiError(422, "unknown_game", str(error)) from None
    if kit not in KITS:
        raise ApiError(422, "unknown_kit", f"unknown kit {kit!r} (available kits: {', '.join(KITS)})")
    if name not in KIT_GAMES[kit]:
        trains = ", ".join(KIT_GAMES[kit])
        raise ApiError(422, "unsupported_game", f"the {kit} kit trains {trains}, not {name}")
    return game.name


def _settings(body: TrainingRequest, settings: Settings) -> dict[str, Any]:
    """The session's settings as the worker reads them (arena_workers.training.open_run); the
    self-play fields only for the alphazero kit, which another kit refuses (`not_for_kit`)."""
    asked = {
        "episodes": body.episodes,
        "time_limit_seconds": body.time_limit_seconds,
        "blocks": body.blocks,
        "filters": body.filters,
        "seed": body.seed,
        "checkpoint_every": body.checkpoint_every,
    }
    if body.kit == "alphazero":
        games = body.games_per_generation or min(body.episodes, DEFAULT_GAMES_PER_GENERATION)
        return asked | {"simulations": body.simulations, "games_per_generation": games}
    given = [field for field in SEARCH_FIELDS if getattr(body, field) is not None]
    if given:
        options = ", ".join(given)
        raise ApiError(
            422, "not_for_kit", f"{options}: alphazero options, the {body.kit} kit plays no self-play search"
        )
    return asked


def _base(session: Session, user: User, body: TrainingRequest) -> dict[str, Any]:
    """A fine-tune's network: the base checkpoint's weights and shape ({} without a base bot)."""
    if body.base_bot_id is None:
        return {}
    checkpoint = training.checkpoint_of_bot(session, bot_id=body.base_bot_id)
    bot = session.get(Bot, body.base_bot_id)
    base = None if checkpoint is None else session.get(TrainingSession, checkpoint.session_id)
    if base is None or bot.owner_id != user.id or base.game != body.game or base.kit != body.kit:
        raise ApiError(
            422,
            "bad_base_bot",
            f"bot {body.base_bot_id} is not a {body.game} checkpoint of your {body.kit} sessions: a session "
            "fine-tunes the checkpoints of your own sessions of its kit (an uploaded ONNX file has no "
            "weights to train, and another kit's network has another shape)",
        )
    shape = {key: base.settings[key] for key in ("blocks", "filters")}
    return shape | {"base_network_sha256": checkpoint.network_sha256}


def _check_limits(asked: dict[str, Any], settings: Settings) -> None:
    limits = {
        "episodes": settings.training_max_episodes,
        "time_limit_seconds": settings.training_max_seconds,
        "blocks": settings.training_max_blocks,
        "filters": settings.training_max_filters,
    }
    for field, limit in limits.items():
        if asked[field] > limit:
            raise ApiError(422, "out_of_range", f"{field} is at most {limit} here, got {asked[field]}")


def _check_name(session: Session, user: User, game: str, name: str, simulations: int) -> None:
    """409 when the bot name is not the user's to take on the ladder the checkpoints enter: a bot
    of someone else's has it (`name_taken`), or another user's session (`name_reserved`)."""
    ladder = find_ladder(session, game=game, simulations=simulations)
    try:
        bots.check_name(
            session, game=game, ladder_id=None if ladder is None else ladder.id, name=name, owner_id=user.id
        )
    except bots.NameTaken as error:
        raise ApiError(409, error.code, f"{error}: choose another name") from None


def _owned(session: Session, user: User, session_id: int) -> TrainingSession:
    row = training.get_session(session, session_id=session_id)
    if row is None:
        raise not_found(f"training session {session_id}")
    if row.owner_id != user.id:
        raise ApiError(403, "not_owner", f"training session {session_id} belongs to someone else")
    return row


def _act(session: Session, user: User, session_id: int, action: Any) -> TrainingDetail:
    row = _owned(session, user, session_id)
    try:
        action(session, row=row)
    except training.SessionStateError as error:
        raise ApiError(409, "bad_state", str(error)) from None
    return _detail(session, session_id)


def _detail(session: Session, session_id: int) -> TrainingDetail:
    detail = training.describe_session(session, session_id=session_id)
    if detail is None:
        raise not_found(f"training session {session_id}")
    return detail
