"""A bot's move in one position, as the API computes it (predict, games against people): the bot's
own player code at a given budget, a network bot in a cached model host (`api.hosts`).

Only a fault traced to the model costs the bot (a decision without an action: a game against a
person is then its forfeit), by the rule the workers follow (arena_bots.host.second_loss_verdict): a
host that fails otherwise is replaced and the position tried once more; a crash of unknown cause
on the fresh host too is the model's, anything else is the platform's (503, nothing played).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from sqlmodel import Session

from arena_bots.host import ModelFault, ModelHost, second_loss_verdict
from arena_bots.loading import house_player, network_player
from arena_bots.manifest import Manifest
from arena_bots.match import Decision, PlatformFault, Request
from arena_games.api import Game
from arena_games.registry import get_game
from arena_platform.api.deps import Services
from arena_platform.api.errors import ApiError, not_found
from arena_platform.models import Bot, Ladder
from arena_platform.store import bots, ladders
from arena_platform.store.sprt_tests import RETIRED

log = logging.getLogger(__name__)


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


def human_playable_bot(session: Session, bot_id: int) -> tuple[Bot, Ladder]:
    """playable_bot, for a new game against a person: also 409 `bot_retired` for a retired bot,
    and 422 `not_offered` for a game people cannot play (see offered_to_people)."""
    bot, ladder = playable_bot(session, bot_id)
    if bot.status == RETIRED:
        raise ApiError(409, "bot_retired", f"bot {bot.id} is retired: it plays no more games")
    if not offered_to_people(get_game(ladder.game)):
        raise ApiError(
            422,
            "not_offered",
            f"{ladder.game} is not offered to people: a turn is one action per head of "
            f"{', '.join(get_game(ladder.game).spec.heads)}, which its board does not take",
        )
    return bot, ladder


def offered_to_people(game: Game) -> bool:
    """Whether people may play `game` against bots: its board offers one action a turn (one
    action head; a CSB turn is four)."""
    return len(game.spec.heads) == 1


def bot_decision(services: Services, bot: Bot, game: Game, request: Request, simulations: int) -> Decision:
    """The bot's decision at this budget (CPU-bound: call it in the compute pool). A decision
    without an action (a fault traced to the model) is returned as it is, its host discarded so
    that the next request starts a fresh one; a model that cannot start is a 422 `model_fault`; a
    host that fails for the platform (twice, see the module's doc) a 503 `platform_fault`."""
    if bot.kind == "house":
        return house_player(bot.player, simulations=simulations).decide(game, [request])[0]
    try:
        return _network_decision(services, bot, game, request, simulations)
    except _HostLost as lost:
        first = lost.fault
        log.warning("bot %s lost its model host (%s); trying a fresh one", bot.id, first)
    try:
        return _network_decision(services, bot, game, request, simulations)
    except _HostLost as lost:
        if (verdict := second_loss_verdict(first, lost.fault)) is not None:
            return Decision(action=None, fault=str(verdict))
        raise ApiError(
            503,
            "platform_fault",
            f"the bot's model host failed, not by the bot's doing ({lost.fault}): try again",
        ) from None


class _HostLost(PlatformFault):
    """The model's host failed for a reason not traced to the model: `fault`, blamed on the platform
    or unknown. A PlatformFault, which the players' fault handling lets through."""

    def __init__(self, fault: ModelFault) -> None:
        super().__init__(str(fault))
        self.fault = fault


@dataclass(frozen=True)
class _JudgedHost:
    """A leased host as a player's backend: a fault traced to the model is raised as it is (the
    player turns it into a decision without an action), any other as _HostLost."""

    host: ModelHost

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        try:
            return self.host.run(inputs)
        except ModelFault as fault:
            if fault.blame == "model":
                raise
            raise _HostLost(fault) from fault


def _network_decision(
    services: Services, bot: Bot, game: Game, request: Request, simulations: int
) -> Decision:
    """One decision on the bot's cached host. A host that failed is discarded; _HostLost when not by
    the model's doing, 422 `model_fault` when the model kept its host from starting."""
    assert bot.model_sha256 is not None  # network bots have a model
    manifest = Manifest(**bot.manifest)
    try:
        with services.hosts.lease(bot.model_sha256) as host:
            player = network_player(manifest, _JudgedHost(host), simulations=simulations)
            decision = player.decide(game, [request])[0]
    except ModelFault as fault:  # the host did not start
        services.hosts.discard(bot.model_sha256)
        if fault.blame != "model":
            raise _HostLost(fault) from None
        raise ApiError(422, "model_fault", f"the bot's model could not be started: {fault.message}") from None
    except _HostLost:
        services.hosts.discard(bot.model_sha256)
        raise
    if decision.action is None:  # the model faulted: its host is dead or suspect
        services.hosts.discard(bot.model_sha256)
    return decision
