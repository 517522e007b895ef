"""/me: what the caller owns, in one read: their bots with every version's state, their training
sessions, and the games people played against their bots (the "My bots" page draws it)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from arena_platform.api.deps import CurrentUser, SessionDep
from arena_platform.api.errors import documented
from arena_platform.api.routes.human_games import HumanGameSummary
from arena_platform.store import owned, training
from arena_platform.store.owned import OwnedBot
from arena_platform.store.reads import BotRef
from arena_platform.store.training import TrainingSummary

RECENT_HUMAN_GAMES = 20  # games against people listed, the latest
RECENT_TRAINING_SESSIONS = 50  # training sessions listed, the latest

router = APIRouter(prefix="/me", tags=["accounts"])


class HumanGameOfYours(HumanGameSummary):
    """A game a person played against one of your bots."""

    bot: BotRef


class YourBots(BaseModel):
    user: str
    bots: list[OwnedBot]  # by ladder, then name; each with its versions, newest first
    training_sessions: list[TrainingSummary]  # the latest RECENT_TRAINING_SESSIONS, newest first
    human_games: list[HumanGameOfYours]  # the latest RECENT_HUMAN_GAMES, newest first


@router.get(
    "/bots",
    summary="Your bots, their versions, SPRTs, training sessions and games against people",
    responses=documented(401),
)
def my_bots(user: CurrentUser, session: SessionDep) -> YourBots:
    """Every bot you uploaded or trained, with each version's state: active or retired, its rating,
    its SPRT against the previous version, its pairings running and queued (a bot's page says when
    they play); your latest training sessions; the latest games people played against your bots."""
    games = owned.human_games_against(session, owner_id=user.id, limit=RECENT_HUMAN_GAMES)
    return YourBots(
        user=user.name,
        bots=owned.owned_bots(session, owner_id=user.id),
        training_sessions=training.list_sessions(session, owner_id=user.id, limit=RECENT_TRAINING_SESSIONS),
        human_games=[
            HumanGameOfYours(
                **HumanGameSummary.model_validate(game, from_attributes=True).model_dump(),
                bot=BotRef(id=bot.id, name=bot.name, version=bot.version),
            )
            for game, bot in games
        ],
    )
