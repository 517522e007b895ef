"""Games against people: anyone may start a game against a bot and play it move by move.

No account is needed. Starting a game answers a key, shown once; moves and resignation need it
(header `X-Play-Key`); anyone may watch a game or replay it. The bot answers every move at its
ladder's budget with the player code the ladder runs, computed in the pool predict uses; a client
address may start `human_games_per_hour` games and play `human_moves_per_minute` moves. These
games are stored (replayable in the viewer) and never rated. The rules of such a game are
arena_platform.human_play's; this module is the HTTP around them.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Path
from fastapi import Request as HttpRequest
from pydantic import BaseModel, ConfigDict, Field
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from arena_bots.match import Decision, Request
from arena_games.api import Game
from arena_games.registry import get_game
from arena_games.replay import Replay, replay_states
from arena_platform import human_play
from arena_platform.api.bot_moves import bot_decision, human_playable_bot, playable_bot
from arena_platform.api.deps import MAX_ID, BotId, Limit, Services, ServicesDep, SessionDep
from arena_platform.api.errors import ApiError, documented, not_found
from arena_platform.api.limits import client_address
from arena_platform.api.routes.frames import Frame, GameFrames, PersonRef, Seat, frames_of, step_frame
from arena_platform.models import Bot, HumanGame
from arena_platform.store import bots, human_games
from arena_platform.store.reads import BotRef

router = APIRouter(tags=["games against people"])

MAX_SEED = 2**63 - 1
KEY_HEADER = "X-Play-Key"
PERSON = PersonRef()
HumanGameId = Annotated[int, Path(ge=1, le=MAX_ID, description="a game against a person's id")]
PlayKey = Annotated[
    str | None,
    Header(alias=KEY_HEADER, max_length=100, description="the key answered when the game was started"),
]


class HumanGameStart(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    seat: int = Field(default=0, ge=0, le=15, description="the seat you play: 0 moves first")
    seed: int | None = Field(
        default=None, ge=0, le=MAX_SEED, description="the game's seed (its map, its pieces); default: random"
    )


class HumanMove(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    action: list[Annotated[int, Field(ge=0, le=MAX_ID)]] = Field(
        min_length=1, max_length=16, description="your action: one index per action head of the game"
    )
    ply: int | None = Field(
        default=None,
        ge=0,
        le=MAX_ID,
        description="the position you moved in (steps played); a game that moved on since answers 409",
    )


class HumanGameView(BaseModel):
    """A game against a person as its board shows it."""

    id: int
    game: str
    title: str
    bot: BotRef
    ladder_id: int
    human_seat: int
    seats: list[Seat]  # who plays, by seat
    simulations: int  # the bot's search budget per move
    status: str  # playing | over
    ply: int  # steps played
    your_turn: bool
    legal: list[list[int]]  # per action head, the indices the person may play now
    view: dict[str, Any]  # the game's view of the position; its `moves` decode every legal action
    last: Frame | None  # the latest step: its position, the actions played and the bot's search
    returns: list[float]  # by seat; all 0 while playing
    end_reason: str
    forfeit_seat: int | None  # the seat that resigned, or forfeited with no legal move
    human_score: float | None  # once over: 1 the person won, 0.5 a draw, 0 the bot won
    created_at: datetime
    updated_at: datetime


class HumanGameStarted(HumanGameView):
    key: str  # send it as X-Play-Key to move or resign; shown only here


async def count_game(http: HttpRequest, services: ServicesDep) -> None:
    """Counts a game started against the client address's allowance (429 past it)."""
    allowance = "games against bots per hour from one address"
    await services.rates.human_games_by_address.check(client_address(http), what=allowance)


async def count_move(http: HttpRequest, services: ServicesDep) -> None:
    """Counts a move the bot answers against the client address's allowance (429 past it)."""
    allowance = "moves against bots per minute from one address"
    await services.rates.human_moves_by_address.check(client_address(http), what=allowance)


@router.post(
    "/bots/{bot_id}/human-games",
    status_code=201,
    summary="Start a game against a bot",
    responses=documented(404, 409, 422, 429, 503),
    dependencies=[Depends(count_game), Depends(count_move)],  # the bot may open: starting costs a move
)
async def start_game(
    bot_id: BotId,
    body: HumanGameStart,
    session: SessionDep,
    services: ServicesDep,
) -> HumanGameStarted:
    """The new game (after the bot's first moves when it starts) and its key. 409 `bot_retired`, 422
    `not_offered` for a game people do not play (CSB), 503 `platform_fault` when the bot's model
    host fails by no doing of the bot's (nothing is played)."""
    bot, ladder = await run_in_threadpool(human_playable_bot, session, bot_id)
    game = get_game(ladder.game)
    seed = body.seed if body.seed is not None else secrets.randbelow(2**31)
    names = _names(bot, body.seat, game.spec.num_players)
    move = _bot_move(services, bot, game, ladder.simulations)
    try:
        replay = await services.compute.run_or_refuse(
            human_play.new_game, game, seed=seed, human_seat=body.seat, names=names, bot_move=move
        )
    except human_play.MoveRefused as refused:
        raise ApiError(422, refused.code, str(refused)) from None
    key = secrets.token_urlsafe(24)
    row = await run_in_threadpool(
        human_games.record_new_game,
        session,
        bot_id=bot.id,
        ladder_id=ladder.id,
        human_seat=body.seat,
        simulations=ladder.simulations,
        key=key,
        replay=replay,
    )
    view = await run_in_threadpool(human_game_view, session, row)
    return HumanGameStarted(**view.model_dump(), key=key)


class HumanGameSummary(BaseModel):
    """One game of a bot against a person, for lists."""

    id: int
    human_seat: int
    status: str  # playing | over
    ply: int
    human_score: float | None  # once over: 1 the person won, 0.5 a draw, 0 the bot won
    created_at: datetime
    updated_at: datetime


@router.get(
    "/bots/{bot_id}/human-games",
    summary="A bot's games against people, newest first",
    responses=documented(404, 422),
)
def list_human_games(bot_id: BotId, session: SessionDep, limit: Limit = 20) -> list[HumanGameSummary]:
    if bots.get_bot(session, bot_id=bot_id) is None:
        raise not_found(f"bot {bot_id}")
    return human_game_summaries(session, bot_id=bot_id, limit=limit)


def human_game_summaries(session: Session, *, bot_id: int, limit: int) -> list[HumanGameSummary]:
    """The bot's latest games against people (the bot page lists these too)."""
    rows = human_games.recent_games(session, bot_id=bot_id, limit=limit)
    return [HumanGameSummary.model_validate(row, from_attributes=True) for row in rows]


@router.get(
    "/human-games/{game_id}",
    summary="A game against a person, as its board shows it",
    responses=documented(404),
)
def get_human_game(game_id: HumanGameId, session: SessionDep) -> HumanGameView:
    return human_game_view(session, _existing(session, game_id))


@router.post(
    "/human-games/{game_id}/moves",
    summary="Play your move; the bot answers",
    responses=documented(401, 403, 404, 409, 422, 429, 503),
    dependencies=[Depends(count_move)],
)
async def play_move(
    game_id: HumanGameId,
    body: HumanMove,
    session: SessionDep,
    services: ServicesDep,
    key: PlayKey = None,
) -> HumanGameView:
    """The game after your move and the bot's answer. 422 `illegal_action` for a move the rules
    forbid, 409 `game_over`, `not_your_turn` or `moved_on` (the game changed since `ply`), 503
    `platform_fault` when the bot's model host fails by no doing of the bot's (nothing is played:
    move again). A game started before its bot retired may be played to its end."""
    row = await run_in_threadpool(_held, session, game_id, key)
    if body.ply is not None and body.ply != row.ply:
        raise _moved_on(row)
    bot, game = await run_in_threadpool(_bot_and_game, session, row)
    replay = Replay.from_dict(row.replay)
    move = _bot_move(services, bot, game, row.simulations)
    try:
        after = await services.compute.run_or_refuse(
            human_play.human_move,
            game,
            replay,
            human_seat=row.human_seat,
            action=tuple(body.action),
            bot_move=move,
        )
    except human_play.MoveRefused as refused:
        raise ApiError(422 if refused.code == "illegal_action" else 409, refused.code, str(refused)) from None
    return await run_in_threadpool(_saved, session, row, after)


@router.post(
    "/human-games/{game_id}/resign",
    summary="Resign a game against a bot",
    responses=documented(401, 403, 404, 409),
)
def resign(game_id: HumanGameId, session: SessionDep, key: PlayKey = None) -> HumanGameView:
    row = _held(session, game_id, key)
    replay = Replay.from_dict(row.replay)
    try:
        after = human_play.resign(get_game(replay.game), replay, human_seat=row.human_seat)
    except human_play.MoveRefused as refused:
        raise ApiError(409, refused.code, str(refused)) from None
    return _saved(session, row, after)


@router.get(
    "/human-games/{game_id}/frames",
    summary="A game against a person, re-played for the viewer",
    responses=documented(404),
)
def human_game_frames(game_id: HumanGameId, session: SessionDep) -> GameFrames:
    row = _existing(session, game_id)
    bot = bots.get_bot(session, bot_id=row.bot_id)
    assert bot is not None  # a foreign key
    replay = Replay.from_dict(row.replay)
    seats = _seats(bot, row.human_seat, len(replay.players))
    return frames_of(replay, game_id=row.id, seats=seats)


def _bot_and_game(session: Session, row: HumanGame) -> tuple[Bot, Game]:
    bot, ladder = playable_bot(session, row.bot_id)
    return bot, get_game(ladder.game)


def _bot_move(services: Services, bot: Bot, game: Game, simulations: int) -> human_play.BotMove:
    def move(request: Request) -> Decision:
        return bot_decision(services, bot, game, request, simulations)

    return move


def _existing(session: Session, game_id: int) -> HumanGame:
    row = human_games.get_game(session, game_id=game_id)
    if row is None:
        raise not_found(f"game against a person {game_id}")
    return row


def _held(session: Session, game_id: int, key: str | None) -> HumanGame:
    """The game, if `key` is its key: 401 without a key, 403 with another one."""
    row = _existing(session, game_id)
    if key is None:
        raise ApiError(
            401, "key_required", f"moving in a game needs the key it was started with ({KEY_HEADER})"
        )
    if not secrets.compare_digest(human_games.key_digest(key), row.key_sha256):
        raise ApiError(403, "wrong_key", f"this is not the key of game {game_id}")
    return row


def _saved(session: Session, row: HumanGame, after: Replay) -> HumanGameView:
    """Writes the game's new state under the ply guard; 409 `moved_on` if another request won."""
    if not human_games.record_move(session, game=row, replay=after):
        raise _moved_on(row)
    session.refresh(row)
    return human_game_view(session, row)


def _moved_on(row: HumanGame) -> ApiError:
    return ApiError(409, "moved_on", f"game {row.id} moved on since ply {row.ply}: reload it and move again")


def _names(bot: Bot, human_seat: int, num_players: int) -> list[str]:
    bot_name = f"{bot.name} v{bot.version}"
    return [PERSON.name if seat == human_seat else bot_name for seat in range(num_players)]


def _seats(bot: Bot, human_seat: int, num_players: int) -> list[Seat]:
    ref = BotRef(id=bot.id, name=bot.name, version=bot.version)
    return [PERSON if seat == human_seat else ref for seat in range(num_players)]


def human_game_view(session: Session, row: HumanGame) -> HumanGameView:
    """The game as its board shows it (the play page embeds this too)."""
    bot = bots.get_bot(session, bot_id=row.bot_id)
    assert bot is not None  # a foreign key
    replay = Replay.from_dict(row.replay)
    game = get_game(replay.game)
    states = replay_states(game, replay)
    state = states[-1]
    playing = not replay.end_reason
    last = step_frame(game, len(states) - 2, states[-2], replay.steps[-1]) if replay.steps else None
    return HumanGameView(
        id=row.id,
        game=game.name,
        title=game.spec.title,
        bot=BotRef(id=bot.id, name=bot.name, version=bot.version),
        ladder_id=row.ladder_id,
        human_seat=row.human_seat,
        seats=_seats(bot, row.human_seat, game.spec.num_players),
        simulations=row.simulations,
        status=row.status,
        ply=row.ply,
        your_turn=playing and row.human_seat in game.to_move(state),
        legal=human_play.legal_actions(game, state, row.human_seat)
        if playing
        else [[] for _ in game.spec.heads],
        view=game.view(state),
        last=last,
        returns=list(replay.returns),
        end_reason=replay.end_reason,
        forfeit_seat=None if replay.forfeit is None else replay.forfeit.player,
        human_score=row.human_score,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
