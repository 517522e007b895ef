"""/predict: which move would bot X play in this position, and what its search thought of it.

Open to all, and bounded three ways: requests per client (per address without a token, per token
owner with one; 429), the search budget (`Settings.predict_max_simulations`), and the compute
pool it shares with upload validation (a few computed at once, a few more waiting; 503 beyond).
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Depends
from fastapi import Request as HttpRequest
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from arena_bots.match import Request
from arena_games.api import BadConfig, BadStateDict, Game, GameError, IllegalAction
from arena_games.registry import get_game
from arena_platform.api.bot_moves import bot_decision, playable_bot
from arena_platform.api.deps import MAX_ID, OptionalUser, Services, ServicesDep, SessionDep
from arena_platform.api.errors import ApiError, documented
from arena_platform.api.limits import client_address
from arena_platform.models import Bot, Ladder
from arena_platform.settings import Settings

router = APIRouter(tags=["predict"])

ActionIndex = Annotated[int, Field(ge=0, le=MAX_ID)]
MAX_STEPS = 10_000  # of a position given as actions; every game's max_length is far below
MAX_SEED = 2**63 - 1
_POSITION_CODES: tuple[tuple[type[GameError], str], ...] = (
    (IllegalAction, "illegal_action"),
    (BadConfig, "bad_config"),
    (BadStateDict, "bad_state"),
)


class PredictRequest(BaseModel):
    """A bot and a position: either the joint actions played from `init(seed, config)` (none: the
    start), or a state as the game's `to_dict` writes it."""

    model_config = ConfigDict(extra="forbid", strict=True)  # strict: `true` is no bot id, `false` no seat

    bot_id: int = Field(ge=1, le=MAX_ID)
    actions: list[list[list[ActionIndex]]] | None = Field(
        default=None,
        max_length=MAX_STEPS,
        description="joint actions: per step, one action per acting player, one index per action head",
    )
    state: dict[str, Any] | None = Field(default=None, description="a state dict from the game's to_dict")
    seed: int = Field(default=0, ge=0, le=MAX_SEED, description="the game's seed; also seeds the bot's draws")
    config: dict[str, Any] | None = Field(default=None, description="overrides of the game's default config")
    player: int | None = Field(default=None, ge=0, le=15, description="the seat to move (default: the first)")
    simulations: int | None = Field(
        default=None,
        ge=1,
        le=MAX_ID,
        description="the search budget (network evaluations per move) of a search bot; default: its "
        "ladder's, lowered to the server's maximum; a larger request is refused (422 budget_too_large)",
    )


class Prediction(BaseModel):
    bot_id: int
    game: str
    player: int  # the seat the bot played
    simulations: int  # the search budget it played with (ignored by players that do not search)
    action: list[int]  # one index per action head
    insight: dict[str, Any] | None  # the search's view: root value, top moves with visit shares


async def count_prediction(http: HttpRequest, user: OptionalUser, services: ServicesDep) -> None:
    """429 once the token owner, or without a token the client address, has used its predictions
    of the minute (checked before the body is validated)."""
    if user is not None:
        await services.rates.predict_by_owner.check(user.id, what="predictions per minute per token owner")
    else:
        await services.rates.predict_by_address.check(
            client_address(http), what="predictions per minute from one address without a token"
        )


@router.post(
    "/predict",
    summary="The move a bot would play in a position",
    responses=documented(401, 404, 409, 422, 429, 503),
    dependencies=[Depends(count_prediction)],
)
async def predict(body: PredictRequest, session: SessionDep, services: ServicesDep) -> Prediction:
    """Rate-limited per client address, or per token owner when a bearer token is given."""
    bot, ladder = await run_in_threadpool(playable_bot, session, body.bot_id)
    game = get_game(ladder.game)
    simulations = _budget(services.settings, ladder, body.simulations)
    return await services.compute.run_or_refuse(_predict, services, bot, game, body, simulations)


def _budget(settings: Settings, ladder: Ladder, requested: int | None) -> int:
    """The request's budget, else the ladder's lowered to the maximum; 422 over the maximum."""
    if requested is None:
        return min(ladder.simulations, settings.predict_max_simulations)
    if requested > settings.predict_max_simulations:
        raise ApiError(
            422,
            "budget_too_large",
            f"predict searches at most {settings.predict_max_simulations} simulations per move, "
            f"not {requested}",
        )
    return requested


def _predict(services: Services, bot: Bot, game: Game, body: PredictRequest, simulations: int) -> Prediction:
    """The prediction itself, CPU-bound: in a thread of the compute pool."""
    state = _position(game, body)
    seat = _seat(game, state, body.player)
    request = Request(state, seat, np.random.default_rng(body.seed))
    decision = bot_decision(services, bot, game, request, simulations)
    if decision.action is None:
        raise ApiError(422, "model_fault", f"the bot could not choose a move: {decision.fault}")
    return Prediction(
        bot_id=bot.id,
        game=game.name,
        player=seat,
        simulations=simulations,
        action=list(decision.action),
        insight=decision.insight,
    )


def _position(game: Game, body: PredictRequest) -> Any:
    """The requested state; 422 with the engine's reason when it is not a position of the game."""
    try:
        if body.state is not None:
            if body.actions is not None:
                raise ApiError(422, "invalid_request", "give the position as actions or as a state, not both")
            return game.from_dict(body.state)
        state = game.init(body.seed, body.config)
        for joint in body.actions or ():
            state = game.step(state, tuple(tuple(action) for action in joint))
        return state
    except GameError as error:
        code = next((code for kind, code in _POSITION_CODES if isinstance(error, kind)), "bad_position")
        raise ApiError(422, code, str(error)) from None


def _seat(game: Game, state: Any, requested: int | None) -> int:
    to_move = game.to_move(state)
    if not to_move:
        raise ApiError(422, "game_over", f"the game is over: {game.end_reason(state)}")
    if requested is None:
        return to_move[0]
    if requested not in to_move:
        raise ApiError(422, "not_to_move", f"player {requested} is not to move; {list(to_move)} are")
    return requested
