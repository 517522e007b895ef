"""Coders Strike Back as a `Game` whose states are the kernels' arrays (`Race`): the engine the match
loop plays on the compiled core (ARCHITECTURE "Compiled core"), so a turn costs a few microseconds
of compiled code instead of the reference's NumPy physics on one race (about 250 µs).

Every function is the reference's (`rules`, `encoding`) on `kernels`, bit for bit
(tests/games/test_csb_kernel_game.py): the same masks, steps, returns, end reasons, network inputs
and playouts, and the same IllegalAction for a bad joint action (`rules.checked_actions`). What is
shown or stored (render, view, to_dict, end_reason) goes through the reference state (`to_reference`),
once per call: those are not per move.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from collections.abc import Sequence

import numpy as np

from arena_games.api import Game, GameError
from arena_games.csb import GAME as REFERENCE
from arena_games.csb import kernels, rules
from arena_games.csb.kernels import BOOSTED, FIELDS, MOTION, PODS, WINNER
from arena_games.csb.rules import MAX_CHECKPOINTS
from arena_games.kernel_games import distinct_playouts, kernel_game

# Each head's part of kernels.legal_mask's array (the heads' masks end to end, in head order).
_HEAD_ENDS = np.cumsum([0, *rules.HEADS.values()]).tolist()
_HEAD_PARTS = tuple(slice(start, end) for start, end in itertools.pairwise(_HEAD_ENDS))


@dataclasses.dataclass(frozen=True, eq=False)
class Race:
    """A race between turns as the kernels hold it; its arrays are never changed once made.
    motion float64 (4, MOTION), checkpoints float64 (MAX_CHECKPOINTS, 2) (shared by every position
    of one race), info int64 (FIELDS,): the layout of `kernels`' module doc."""

    motion: np.ndarray
    checkpoints: np.ndarray
    info: np.ndarray


def from_reference(state: rules.CsbState) -> Race:
    """The race of a reference state."""
    motions, checkpoints, infos = kernels.pack([state])
    return Race(motions[0], checkpoints[0], infos[0])


def to_reference(race: Race) -> rules.CsbState:
    """The reference state of a race."""
    return kernels.to_state(race.motion, race.checkpoints, race.info)


def stack(races: Sequence[Race]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The races as a batch of new arrays: motions (n, 4, MOTION), checkpoints (n, MAX_CHECKPOINTS,
    2), infos (n, FIELDS)."""
    if not races:
        return np.empty((0, PODS, MOTION)), np.empty((0, MAX_CHECKPOINTS, 2)), np.empty((0, FIELDS), np.int64)
    return (
        np.stack([race.motion for race in races]),
        np.stack([race.checkpoints for race in races]),
        np.stack([race.info for race in races]),
    )


def racer_actions(races: Sequence[Race], players: Sequence[int]) -> np.ndarray:
    """int (n, 4): the house racer's head indices (`playouts.racer_actions`) in races[i] for players[i]."""
    return kernels.racer_batch(*stack(races), np.array(players, dtype=np.int64))


def to_move(race: Race) -> tuple[int, ...]:
    return () if race.info[WINNER] >= 0 else (0, 1)


def legal_masks(race: Race, player: int) -> tuple[np.ndarray, ...]:
    """`rules.legal_masks`: angle0, thrust0, angle1, thrust1 (views of one array); none for a player
    who is not seated."""
    if player not in (0, 1):
        return ()
    masks = kernels.legal_mask_batch(race.info[None], np.array([player]))[0]
    return tuple(masks[part] for part in _HEAD_PARTS)


def step(race: Race, joint: Sequence[Sequence[int]]) -> Race:
    """`rules.step` on a copy of the race's arrays."""
    over, boosted = race.info[WINNER] >= 0, race.info[BOOSTED : BOOSTED + PODS].tolist()
    actions = rules.checked_actions(over, boosted, joint)
    motion, info = race.motion.copy(), race.info.copy()
    kernels.step_batch(motion[None], race.checkpoints[None], info[None], actions)
    return Race(motion, race.checkpoints, info)


def returns(race: Race) -> tuple[float, float]:
    return kernels.returns_of(race.info)


def end_reason(race: Race) -> str:
    return rules.end_reason(to_reference(race))


def encode_many(races: Sequence[Race], players: Sequence[int]) -> dict[str, np.ndarray]:
    """`encoding.encode_many`: {"pods": float32 (n, 2, FEATURES)}."""
    if len(players) != len(races) or any(player not in (0, 1) for player in players):
        raise GameError(f"csb: one player (0 or 1) per state, got {list(players)!r}")
    return {"pods": kernels.encode_batch(*stack(races), np.array(players, dtype=np.int64))}


def encode(race: Race, player: int) -> dict[str, np.ndarray]:
    return {"pods": encode_many([race], [player])["pods"][0]}


# `playouts.playouts`: on the kernels given distinct PCG64 generators (as `kernels.playouts`), else on
# the reference states.
playouts = distinct_playouts(REFERENCE, to_reference, stack, kernels.playout_returns)


# The game of this module's functions (kernel_games.RULES) and the reference's views of its states.
GAME: Game[Race] = kernel_game(REFERENCE, sys.modules[__name__])
