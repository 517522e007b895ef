"""Seeded Pente openings: a few quiet stones near the centre, legal under the given config.

An opening has 3 to 5 moves (fewer if the ply cap would end the game). Each stone goes on a random
legal point within Chebyshev distance OPENING_RADIUS of the centre that touches no stone of its own
colour (8-neighbourhood). With no two same-coloured stones adjacent there is no pair to threaten
and no two in a row, so the position is quiet and roughly balanced. The first stone is the centre
under `first_move_center`; the tournament rule is respected through the legal mask.
"""

from __future__ import annotations

import numpy as np

from arena_games.api import Config, JointAction
from arena_games.pente.rules import PenteState, init, legal_masks, step
from arena_games.pente.tables import DISTANCE_FROM_CENTRE, OFF_BOARD_CELL, RAYS

OPENING_MOVES = (3, 5)  # fewest and most moves of an opening
OPENING_RADIUS = 4  # the opening's stones stay in the 9x9 square around the centre
_OPENING_AREA = DISTANCE_FROM_CENTRE <= OPENING_RADIUS


def _quiet_points(state: PenteState) -> np.ndarray:
    """bool (361,): legal points near the centre with no neighbouring stone of the mover's colour."""
    cells = np.append(np.frombuffer(state.board, dtype=np.uint8), OFF_BOARD_CELL)
    touches_own = (cells[RAYS[:, :, 0]] == state.ply % 2 + 1).any(axis=1)
    return legal_masks(state, state.ply % 2)[0] & _OPENING_AREA & ~touches_own


def opening(seed: int, config: Config | None = None) -> tuple[JointAction, ...]:
    """The joint actions of the opening for `seed`, played from `init(seed, config)`."""
    rng = np.random.default_rng(seed)
    state = init(seed, config)
    moves = min(int(rng.integers(OPENING_MOVES[0], OPENING_MOVES[1] + 1)), state.config.ply_cap - 1)
    joints: list[JointAction] = []
    while state.ply < moves:
        joint = ((int(rng.choice(np.flatnonzero(_quiet_points(state)))),),)
        state = step(state, joint)
        joints.append(joint)
    return tuple(joints)
