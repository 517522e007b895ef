"""The match loop plays the same games on both cores (ARENA_CORE, `core.match_engine`): per game a
few seeded games from their openings, the players built for each core, compared replay by replay
(moves, insights, returns, end reasons) and by final state."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from arena_bots.core import CORES, MATCH_GAMES, match_engine, on_core
from arena_bots.evaluators import NetworkEvaluator
from arena_bots.loading import GAME_HOUSE_BOTS, HOUSE_KINDS, house_player
from arena_bots.match import Decision, MatchSetup, Player, Request, play, play_many
from arena_bots.players import (
    ChainPlayer,
    GardenerPlayer,
    GreedyPlayer,
    MctsPlayer,
    RacerPlayer,
    RandomPlayer,
    UctPlayer,
)
from arena_bots.runtime import InProcessSession
from arena_games.api import Game
from arena_games.registry import get_game

ZOO = Path(__file__).resolve().parents[2] / "bots" / "zoo"
CSB_NET = ZOO / "csb" / "dqn-csb-final.onnx"
AZ_NETS = {name: ZOO / name / f"az-{name}-final.onnx" for name in ("bobail", "pente", "spring2021")}
SEEDS = (3, 4)  # each game's openings; both seatings of each

# Per game, the players of a pairing on a core: its house bots, Coders Strike Back's zoo DQN net.
PAIRS: dict[str, Callable[[str], tuple[Player, Player]]] = {
    "csb": lambda core: (GreedyPlayer(InProcessSession(CSB_NET), head_kind="q", name="dqn"), RacerPlayer()),
    "bobail": lambda core: (UctPlayer(simulations=20, core=core), RandomPlayer()),
    "pente": lambda core: (RandomPlayer(), RandomPlayer("random 2")),
    "spring2021": lambda core: (GardenerPlayer(), RandomPlayer()),
    "smash": lambda core: (ChainPlayer(core=core), RandomPlayer()),
}


def played(game: Game, core: str) -> list[tuple[dict, dict]]:
    """Each game's replay and final state (as dicts) from SEEDS' openings, both seatings, on `core`."""
    first, second = PAIRS[game.name](core)
    setups = [
        MatchSetup(players=players, seed=seed, opening=game.opening(seed, None))
        for seed in SEEDS
        for players in ((first, second), (second, first))
    ]
    return [
        (result.replay.to_dict(), game.to_dict(result.final_state))
        for result in play_many(game, setups, core=core)
    ]


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_the_same_games_on_both_cores(name):
    game = get_game(name)
    reference, compiled = (played(game, core) for core in CORES)
    assert compiled == reference
    assert all(replay["result"]["end_reason"] for replay, _ in reference)  # every game ran to its end


@pytest.mark.parametrize("name", sorted(MATCH_GAMES))
def test_the_compiled_core_plays_a_match_game_on_its_kernels(name):
    game, kernel_game = get_game(name), importlib.import_module(MATCH_GAMES[name])
    assert match_engine(game, "compiled").game is kernel_game.GAME
    assert match_engine(game, "reference").game is game
    assert on_core(kernel_game.GAME, "compiled") is kernel_game.GAME  # all on the kernels already
    variant = dataclasses.replace(game, step=game.step)  # a game of its own functions keeps them
    assert match_engine(variant, "compiled").game is variant


@pytest.mark.parametrize("name", sorted(MATCH_GAMES))
def test_the_house_bots_decide_alike_on_kernel_and_reference_states(name):
    """Every house bot of the game (searches included, on the compiled core) takes the kernel game's
    states as it takes the reference's: the same moves and insights, the same draws."""
    game, engine = get_game(name), match_engine(get_game(name), "compiled")
    state = engine.game.init(6, None)
    for joint in game.opening(6, None):
        state = engine.game.step(state, joint)
    movers = engine.game.to_move(state)
    players = [
        house_player(kind, simulations=30, game=name)
        for kind in HOUSE_KINDS
        if GAME_HOUSE_BOTS.get(kind, name) == name and (kind != "uct" or len(game.spec.heads) == 1)
    ]
    if name in AZ_NETS:  # the compiled PUCT's too, over the zoo's network
        players.append(MctsPlayer(NetworkEvaluator(InProcessSession(AZ_NETS[name]), game), simulations=30))
    for player in players:
        decisions = [
            player.decide(on, [Request(position, seat, np.random.default_rng(seat)) for seat in movers])
            for on, position in ((engine.game, state), (game, engine.reference_state(state)))
        ]
        assert decisions[0] == decisions[1], player.name


class Repeating:
    """Plays one action every turn, legal or not (a broken bot's moves, for the forfeits)."""

    def __init__(self, action: tuple) -> None:
        self.name, self.action = f"always {action}", action

    def decide(self, game: Game, requests: list) -> list[Decision]:
        return [Decision(action=self.action) for _ in requests]


# Per game, a broken bot's actions and the opponent it forfeits against: CSB's second BOOST, malformed
# action, one out of range and a bool; Smash's placement off the board, malformed action and bool.
FORFEITS = [
    ("csb", action, RacerPlayer)
    for action in [(18, 50, 18, 49), (18, 49, 18), (18, 52, 18, 49), (True, 49, 18, 49)]
] + [("smash", action, RandomPlayer) for action in [(22,), (1, 2), (True,)]]


@pytest.mark.parametrize(("name", "action", "opponent"), FORFEITS)
def test_a_forfeit_is_the_same_on_both_cores(name, action, opponent):
    game = get_game(name)
    results = [play(game, [Repeating(action), opponent()], seed=5, core=core) for core in CORES]
    assert results[0].forfeit is not None
    assert results[1].replay.to_dict() == results[0].replay.to_dict()
