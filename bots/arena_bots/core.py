"""Which core runs the games and searches that have compiled kernels (ARCHITECTURE "Compiled core").

`ARENA_CORE=reference|compiled` (default compiled), read here and nowhere else: "reference" runs
the readable Python rules and the NumPy tree, "compiled" the Numba kernels where a game has them
(the same games from the same seeds: the differential tests hold them to it). `arena_games` never
reads the environment; the players ask `selected_core()` when they are built, and `on_core` gives
them the game whose random playouts run on that core.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from arena_bots.evaluators import encode_batch
from arena_games.api import Game

CORES = ("reference", "compiled")
DEFAULT_CORE = "compiled"
CORE_VARIABLE = "ARENA_CORE"
# What the kernels raise, before any draw, for a state their arrays cannot hold: ValueError (a
# Spring log entry the codes do not hold, a mover the request does not name) or OverflowError (a
# number beyond int64, such as a config in a crafted predict request). Such a state stays on the
# reference, which holds any Python int.
UNHELD_STATE = (ValueError, OverflowError)


def selected_core(choice: str | None = None) -> str:
    """`choice`, else the core ARENA_CORE names, else DEFAULT_CORE; ValueError naming the cores if
    it is none of them."""
    core = choice or os.environ.get(CORE_VARIABLE, DEFAULT_CORE)
    if core not in CORES:
        raise ValueError(f"the core ({CORE_VARIABLE}) must be one of {', '.join(CORES)}, got {core!r}")
    return core


# The kernels whose `playouts(states, rngs)` finish games as `Game.random_playouts` does, draw for
# draw, given distinct PCG64 generators (tests/games/test_*_kernels.py); per game family (Smash's
# wells of other widths are "smash<width>").
PLAYOUT_KERNELS = {
    "pente": "arena_games.pente.kernels",
    "bobail": "arena_games.bobail.kernels",
    "csb": "arena_games.csb.kernels",
    "smash": "arena_games.smash.kernels",
    "spring2021": "arena_games.spring2021.kernels",
}


def on_core(game: Game, core: str) -> Game:
    """`game` as `core` plays it: on "compiled", a game with kernels (PLAYOUT_KERNELS) finishes its
    random playouts on them, except for calls the kernels cannot reproduce (a generator other than
    PCG64, one shared by several states, or a state their arrays cannot hold: the kernels' playouts
    refuse it with ValueError before drawing), which stay on the reference; where its kernels have
    an `encode_many` (Pente, Bobail, Spring 2021: bit-equal to `encode`), the game's `encode_many` is theirs
    (a batch they cannot hold is encoded state by state by the reference); its other functions
    are the reference's. The same game otherwise, and a kernel game (`match_engine`'s: all of it on
    the kernels already). Loads the kernels (Numba) on first use."""
    family = next((name for name in PLAYOUT_KERNELS if game.name.startswith(name)), None)
    if core != "compiled" or family is None or is_kernel_game(game):
        return game
    kernels = importlib.import_module(PLAYOUT_KERNELS[family])
    from arena_games import kernel_batches  # compiled, as the kernels: loaded with them

    reference = game.random_playouts

    def playouts(states: Sequence[Any], rngs: Sequence[np.random.Generator]) -> np.ndarray:
        if kernel_batches.distinct_pcg64(rngs):
            try:
                return kernels.playouts(states, rngs)
            except UNHELD_STATE:
                pass
        return reference(states, rngs)

    kernel_encode_many = getattr(kernels, "encode_many", None)
    if kernel_encode_many is None:
        return dataclasses.replace(game, playouts=playouts)

    def encode_many(states: Sequence[Any], players: Sequence[int]) -> dict[str, np.ndarray]:
        try:
            return kernel_encode_many(states, players)
        except UNHELD_STATE:
            return encode_batch(game, states, players)

    return dataclasses.replace(game, playouts=playouts, encode_many=encode_many)


# The games whose match loop runs on their kernels on the compiled core: per game the module whose
# `GAME` is the game over the kernels' states (its `REFERENCE`, the registered game, with every
# function on the kernels, bit for bit) and whose `to_reference` turns such a state back.
MATCH_GAMES = {
    "bobail": "arena_games.bobail.kernel_game",
    "csb": "arena_games.csb.kernel_game",
    "pente": "arena_games.pente.kernel_game",
    "smash": "arena_games.smash.kernel_game",
    "spring2021": "arena_games.spring2021.kernel_game",
}


@dataclasses.dataclass(frozen=True)
class MatchEngine:
    """What the match loop plays on: `game`, whose states it steps, checks and hands to the players,
    and `reference_state`, which turns one of them into the reference game's (a result's final state)."""

    game: Game
    reference_state: Callable[[Any], Any]


def match_engine(game: Game, core: str) -> MatchEngine:
    """The engine of `game` on `core`: on "compiled", a registered game of MATCH_GAMES is played on
    its kernel game (the same games: each of its functions is the reference's on the kernels);
    otherwise, and for a game built otherwise (a variant with functions of its own), `game` itself.
    Loads the kernels (Numba) on first use."""
    if core == "compiled" and game.name in MATCH_GAMES:
        kernel_game = importlib.import_module(MATCH_GAMES[game.name])
        if game is kernel_game.REFERENCE:
            return MatchEngine(kernel_game.GAME, kernel_game.to_reference)
    return MatchEngine(game, _same)


def is_kernel_game(game: Game) -> bool:
    """Whether `game` is the kernel game of MATCH_GAMES (whose states are the kernels' arrays)."""
    module = MATCH_GAMES.get(game.name)
    return module is not None and game is importlib.import_module(module).GAME


def _same(state: Any) -> Any:
    return state
