"""Warm start (ARCHITECTURE §9, issue 24 item 6): every compiled function a game's players call,
compiled or loaded from Numba's cache once, before the first move needs it.

Numba compiles a kernel on its first call for each argument types and keeps the machine code in
`__pycache__` beside its source (keyed by the source file's path, time and size); a new process
loads it from there on its first call. So a fresh clone's first `uct` move compiles its game's
tree for seconds of CPU, and every new process pays the loading (about 0.05-0.7 s per game's
kernels) at its first move. `warm_up` moves both to a moment that pays: the set-up (`arena warm`,
run by the Makefile after the install), a worker process before it takes tasks, the API server
before it serves predict and games against people.

It plays one move of each of the game's players on its opening, on the compiled core: every house
bot that plays the game (`loading.HOUSE_KINDS`), and the AlphaZero player over a stand-in network
of zeros (a `NetworkEvaluator`, so the compiled PUCT takes it), on the states of the match loop's
engine (`core.match_engine`), and one turn of that engine with a network player's inputs; then
the game's compiled random playouts and batch encoder (`core.on_core`: self-play's). A compiled
function's types are those of the real calls (the same entry points on the same kinds of
arrays), so a later move of any position compiles and loads nothing (tests/bots/test_warm.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping

import numpy as np

from arena_bots.core import match_engine, on_core, selected_core
from arena_bots.evaluators import NetworkEvaluator, encode_batch
from arena_bots.loading import GAME_HOUSE_BOTS, HOUSE_KINDS, house_player
from arena_bots.manifest import VALUE_OUTPUT
from arena_bots.match import Request
from arena_bots.players import MctsPlayer
from arena_games.api import Game
from arena_games.registry import GAMES, get_game

log = logging.getLogger(__name__)

WARM_SIMULATIONS = 4  # per search: enough to expand, select, step and back up at least once
WARM_SEED = 0

_warmed: set[str] = set()  # the games warmed in this process
_lock = threading.Lock()  # one warm-up at a time (the API's and the embedded worker's may overlap)


def warm_up(games: Iterable[str] = GAMES) -> list[str]:
    """Compiles, or loads from Numba's cache, what the players of each named game run on the
    compiled core (the module's doc); the games warmed by this call, in order: those not warmed in
    this process before (a second call costs nothing). Nothing on the reference core (ARENA_CORE),
    which compiles nothing. UnknownGame for a name not registered."""
    if selected_core() != "compiled":
        return []
    warmed = []
    with _lock:
        for name in games:
            if name in _warmed:
                continue
            _play_each_path(get_game(name))
            _warmed.add(name)
            warmed.append(name)
    return warmed


def warm_up_or_log(games: Iterable[str] = GAMES) -> None:
    """`warm_up`, for a process starting (a worker, the server): a failure is logged, not raised;
    the moves that need the kernels then compile them, or fail, as they would have without it."""
    try:
        warm_up(games)
    except Exception:
        log.exception("the warm-up failed: the first moves will compile what they need")


def _play_each_path(game: Game) -> None:
    """One move of every house bot that plays `game` and of the AlphaZero player (the search players
    in a game of one head) on the states of the match loop's engine (`core.match_engine`: the
    kernel games of Coders Strike Back and Smash), one turn of that engine with its inputs for a
    network player, then one random playout and one batch encoding of the reference state
    (self-play's), from the opening."""
    engine = match_engine(game, "compiled")
    state = engine.game.init(WARM_SEED, None)
    player = engine.game.to_move(state)[0]

    def request() -> Request:
        return Request(state, player, np.random.default_rng(WARM_SEED))

    searchable = len(game.spec.heads) == 1  # tree search needs one action head (CSB has four)
    for kind in HOUSE_KINDS:
        if GAME_HOUSE_BOTS.get(kind, game.name) == game.name and (kind != "uct" or searchable):
            house_player(kind, simulations=WARM_SIMULATIONS, game=game.name).decide(engine.game, [request()])
    if searchable:
        evaluator = NetworkEvaluator(_ZeroNetwork(game), game)
        MctsPlayer(evaluator, simulations=WARM_SIMULATIONS).decide(engine.game, [request()])
    movers = engine.game.to_move(state)
    rng = np.random.default_rng(WARM_SEED)
    engine.game.returns(engine.game.step(state, [engine.game.random_action(state, p, rng) for p in movers]))
    encode_batch(engine.game, [state], [player])
    reference = engine.reference_state(state)
    compiled = on_core(game, "compiled")
    compiled.random_playouts([reference], [np.random.default_rng(WARM_SEED)])
    if compiled.encode_many is not None:
        compiled.encode_many([reference], [player])


class _ZeroNetwork:
    """A stand-in model of a one-head game: logits and value 0 for every position, float32 as ONNX
    Runtime returns them (the arrays the compiled PUCT then gets are the evaluator's, as in play)."""

    def __init__(self, game: Game) -> None:
        (self._actions,) = game.spec.heads.values()

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows = len(next(iter(inputs.values())))
        return {
            "policy": np.zeros((rows, self._actions), dtype=np.float32),
            VALUE_OUTPUT: np.zeros((rows, 1), dtype=np.float32),
        }
