"""A bot's move in one position, as the API computes it (predict, games against people): the bot's
own player code at a given budget, a network bot in a cached model host (`api.hosts`)."""

from __future__ import annotations

from sqlmodel import Session

from arena_bots.host import ModelFault
from arena_bots.loading import house_player, network_player
from arena_bots.manifest import Manifest
from arena_bots.match import Decision, Request
from arena_games.api import Game
from arena_games.registry import get_game
from arena_platform.api.deps import Services
from arena_platform.api.errors import ApiError, not_found
from arena_platform.models import Bot, Ladder
from arena_platform.store import bots, ladders


def playable_bot(session: Session, bot_id: int) -> tuple[Bot, Ladder]:
    """The bot and its ladder; 404 for no such bot, 409 `game_version_retired` when its ladder's
    game version is no longer the engine's."""
    bot = bots.get_bot(session, bot_id=bot_id)
    if bot is None:
        raise not_found(f"bot {bot_id}")
    ladder = ladders.get_ladder(session, ladder_id=bot.ladder_id)
    assert ladder is not None  # a foreign key
    if ladder.game_version != get_game(ladder.game).spec.version:
        played = f"{ladder.game} v{ladder.game_version}"
        raise ApiError(409, "game_version_retired", f"bot {bot.id} plays {played}, no longer played")
    return bot, ladder


def bot_decision(services: Services, bot: Bot, game: Game, request: Request, simulations: int) -> Decision:
    """The bot's decision at this budget (CPU-bound: call it in the compute pool). A model that does
    not start is a 422 `model_fault`; a decision without an action (the model faulted mid-search)
    is returned as it is, its host discarded so that the next request starts a fresh one."""
    if bot.kind == "house":
        return house_player(bot.player, simulations=simulations).decide(game, [request])[0]
    assert bot.model_sha256 is not None  # network bots have a model
    manifest = Manifest(**bot.manifest)
    try:
        with services.hosts.lease(bot.model_sha256) as host:
            player = network_player(manifest, host, simulations=simulations)
            decision = player.decide(game, [request])[0]
    except ModelFault as fault:  # the host did not start
        services.hosts.discard(bot.model_sha256)
        raise ApiError(422, "model_fault", f"the bot's model could not be started: {fault.message}") from None
    if decision.action is None:  # the model faulted: its host is dead or suspect
        services.hosts.discard(bot.model_sha256)
    return decision
