"""From a stored bot to a Player: the one place that turns a manifest into how a bot plays.

House bots need no model. Network bots get an inference backend (a `ModelHost` at match time,
since uploads are untrusted) and play as their manifest says; on a ladder, search bots use the
ladder's simulation budget so that every bot spends the same compute per move.
"""

from __future__ import annotations

from arena_bots.evaluators import NetworkEvaluator
from arena_bots.manifest import Manifest
from arena_bots.match import Player
from arena_bots.players import (
    ChainPlayer,
    GardenerPlayer,
    GreedyPlayer,
    LookaheadPlayer,
    MctsPlayer,
    RacerPlayer,
    RandomPlayer,
    SamplePlayer,
    ThreatsPlayer,
    UctPlayer,
)
from arena_bots.runtime import InferenceBackend
from arena_games.registry import get_game

HOUSE_KINDS = ("random", "uct", "racer", "chain", "lookahead", "gardener", "threats")
GAME_HOUSE_BOTS = {
    "racer": "csb",
    "chain": "smash",
    "lookahead": "smash",
    "gardener": "spring2021",
    "threats": "pente",
}  # house bots that play one game only


def house_player(kind: str, *, simulations: int, name: str | None = None, game: str | None = None) -> Player:
    """A house bot: `random` (uniform legal moves), `uct` (UCT with random rollouts; `simulations`
    is its budget), `racer` (Coders Strike Back's heuristic racer), `chain` (Smash the Code's
    greedy chain builder), `lookahead` (the chain builder looking one pair further), `gardener`
    (Spring 2021's fixed priorities) or `threats` (Pente's threat-space priorities). Given
    `game`, a bot that cannot play it is a ValueError."""
    if kind in GAME_HOUSE_BOTS and game not in (None, GAME_HOUSE_BOTS[kind]):
        raise ValueError(f"the house bot {kind} plays {GAME_HOUSE_BOTS[kind]} only, not {game}")
    if kind == "random":
        return RandomPlayer(name=name or kind)
    if kind == "racer":
        return RacerPlayer(name=name or kind)
    if kind == "uct":
        return UctPlayer(simulations=simulations, name=name or kind)
    if kind == "chain":
        return ChainPlayer(name=name or kind)
    if kind == "lookahead":
        return LookaheadPlayer(name=name or kind)
    if kind == "gardener":
        return GardenerPlayer(name=name or kind)
    if kind == "threats":
        return ThreatsPlayer(name=name or kind)
    raise ValueError(f"unknown house bot {kind!r} (known: {', '.join(HOUSE_KINDS)})")


def network_player(
    manifest: Manifest, backend: InferenceBackend, *, simulations: int | None = None, name: str | None = None
) -> Player:
    """The player `manifest` describes, over `backend`; `simulations` overrides the manifest's budget.

    Search plays the most visited move (temperature 0), as rated games require.
    """
    name = name or manifest.name
    if manifest.player == "mcts":
        evaluator = NetworkEvaluator(backend, get_game(manifest.game), value=manifest.value)
        budget = simulations or manifest.simulations
        return MctsPlayer(evaluator, simulations=budget, c_puct=manifest.c_puct, name=name)
    if manifest.player == "greedy":
        return GreedyPlayer(backend, head_kind=manifest.head, name=name)
    return SamplePlayer(backend, manifest.temperature, head_kind=manifest.head, name=name)
