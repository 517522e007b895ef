"""Warm start (arena_bots.warm): after `warm_up`, a game's first real moves compile nothing and load
nothing from Numba's cache, whatever the position, for every player a worker or the API runs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from numba.core import event
from numba.core.dispatcher import Dispatcher

from arena_bots import warm
from arena_bots.core import match_engine, on_core
from arena_bots.evaluators import NetworkEvaluator
from arena_bots.loading import GAME_HOUSE_BOTS, HOUSE_KINDS, house_player
from arena_bots.match import Request
from arena_bots.players import GreedyPlayer, MctsPlayer
from arena_bots.runtime import InProcessSession
from arena_games.api import Game
from arena_games.registry import GAMES, UnknownGame, get_game

ZOO = Path(__file__).resolve().parents[2] / "bots" / "zoo"
ZOO_NETS = {  # a network per game the AlphaZero player searches (Smash's actor-critic: a policy and a value)
    "bobail": "az-bobail-final",
    "pente": "az-pente-final",
    "spring2021": "az-spring2021-final",
    "smash": "ac-smash-final",
}


def _dispatchers() -> list[Dispatcher]:
    """The compiled functions of Arena's loaded modules."""
    modules = [module for name, module in list(sys.modules.items()) if name.startswith("arena_")]
    return [value for module in modules for value in vars(module).values() if isinstance(value, Dispatcher)]


@contextmanager
def nothing_compiled_or_loaded() -> Iterator[None]:
    """Fails if the body compiles a function (Numba's compile event) or loads one from the cache
    (a new signature on a dispatcher of Arena's modules)."""
    before = {id(dispatcher): set(dispatcher.overloads) for dispatcher in _dispatchers()}
    with event.install_recorder("numba:compile") as recorder:
        yield
    compiled = [e.data["dispatcher"].py_func.__qualname__ for _, e in recorder.buffer if e.is_start]
    assert compiled == []
    loaded = [
        dispatcher.py_func.__qualname__
        for dispatcher in _dispatchers()
        if set(dispatcher.overloads) != before.get(id(dispatcher), set())
    ]
    assert loaded == []


def _midgame(game: Game, seed: int, plies: int) -> Request:
    """A position `plies` uniformly random moves from the opening of seed `seed` (fewer if the game
    ends first), with its mover's request."""
    rng = np.random.default_rng(seed)
    state = game.init(seed, None)
    for _ in range(plies):
        movers = game.to_move(state)
        if not movers:
            break
        previous = state
        state = game.step(state, [game.random_action(state, player, rng) for player in movers])
        if game.is_over(state):
            state = previous
            break
    return Request(state, game.to_move(state)[0], np.random.default_rng(seed))


@pytest.mark.parametrize("name", sorted(GAMES))
def test_after_warm_up_a_games_first_moves_compile_and_load_nothing(name):
    warm.warm_up([name])
    game = get_game(name)
    engine = match_engine(game, "compiled")  # the match loop's: its players get its states
    request = _midgame(engine.game, seed=7, plies=6)
    players = [
        house_player(kind, simulations=24, game=name)
        for kind in HOUSE_KINDS
        if GAME_HOUSE_BOTS.get(kind, name) == name and (kind != "uct" or len(game.spec.heads) == 1)
    ]
    sessions = []
    if name in ZOO_NETS:
        sessions.append(InProcessSession(ZOO / name / f"{ZOO_NETS[name]}.onnx"))
        players.append(MctsPlayer(NetworkEvaluator(sessions[0], game), simulations=24))
    if name == "csb":
        sessions.append(InProcessSession(ZOO / name / "dqn-csb-final.onnx"))
        players.append(GreedyPlayer(sessions[0], head_kind="q"))
    compiled = on_core(game, "compiled")
    reference = engine.reference_state(request.state)
    with nothing_compiled_or_loaded():
        for player in players:
            assert player.decide(engine.game, [request])[0].action is not None
        rng = request.rng
        engine.game.step(
            request.state,
            [engine.game.random_action(request.state, p, rng) for p in engine.game.to_move(request.state)],
        )
        compiled.random_playouts([reference] * 2, [np.random.default_rng(1), np.random.default_rng(2)])
        if compiled.encode_many is not None:
            compiled.encode_many([reference], [request.player])
    for session in sessions:
        session.close()


def test_a_second_warm_up_does_nothing_and_an_unknown_game_is_named():
    warm.warm_up(["bobail"])
    assert warm.warm_up(["bobail"]) == []
    with pytest.raises(UnknownGame, match="unknown game 'chess'"):
        warm.warm_up(["chess"])


def test_the_reference_core_warms_nothing(monkeypatch):
    monkeypatch.setattr(warm, "_warmed", set())
    monkeypatch.setenv("ARENA_CORE", "reference")
    assert warm.warm_up(["pente"]) == []
