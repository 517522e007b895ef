"""The match loop plays the same games on both cores (ARENA_CORE, `core.match_engine`): per game a
few seeded games from their openings, the players built for each core, compared replay by replay
(moves, insights, returns, end reasons) and by final state."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from arena_bots.core import CORES, match_engine
from arena_bots.match import Decision, MatchSetup, Player, play, play_many
from arena_bots.players import ChainPlayer, GardenerPlayer, GreedyPlayer, RacerPlayer, RandomPlayer, UctPlayer
from arena_bots.runtime import InProcessSession
from arena_games.api import Game
from arena_games.csb import kernel_game
from arena_games.registry import get_game

CSB_NET = Path(__file__).resolve().parents[2] / "bots" / "zoo" / "csb" / "dqn-csb-final.onnx"
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


def test_the_compiled_core_plays_coders_strike_back_on_its_kernels():
    csb = get_game("csb")
    assert match_engine(csb, "compiled").game is kernel_game.GAME
    assert match_engine(csb, "reference").game is csb
    variant = dataclasses.replace(csb, step=csb.step)  # a game of its own functions keeps them
    assert match_engine(variant, "compiled").game is variant
    assert match_engine(get_game("bobail"), "compiled").game is get_game("bobail")


class Repeating:
    """Plays one action every turn, legal or not (a broken bot's moves, for the forfeits)."""

    def __init__(self, action: tuple) -> None:
        self.name, self.action = f"always {action}", action

    def decide(self, game: Game, requests: list) -> list[Decision]:
        return [Decision(action=self.action) for _ in requests]


@pytest.mark.parametrize("action", [(18, 50, 18, 49), (18, 49, 18), (18, 52, 18, 49), (True, 49, 18, 49)])
def test_a_coders_strike_back_forfeit_is_the_same_on_both_cores(action):
    """A second BOOST, a malformed action, one out of range and a bool lose as on the reference."""
    csb = get_game("csb")
    results = [play(csb, [Repeating(action), RacerPlayer()], seed=5, core=core) for core in CORES]
    assert results[0].forfeit is not None
    assert results[1].replay.to_dict() == results[0].replay.to_dict()
