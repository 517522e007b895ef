"""The network's inputs for Pente, from the point of view of one player.

"board": float32 (6, 19, 19), indexed [plane, y, x] (point = y * 19 + x):
  0  the player's stones
  1  the opponent's stones
  2  ones if the player is to move, else zeros
  3  ones if the player is P1 (moves first; the opening rules bind P1), else zeros
  4  ones: marks the board under zero padding, so a convolution sees the edge
  5  empty points the opening rules forbid for the next move (the centre-first rule at ply 0, the
     tournament rule's 5x5 square at ply index 2), else zeros
"captures": float32 (2,): pairs captured by the player, then by the opponent, divided by 5
  (1.0 = the capture win).
"""

from __future__ import annotations

import numpy as np

from arena_games.pente.rules import PAIRS_TO_WIN, PenteState, opening_ban_kind
from arena_games.pente.tables import EMPTY, NO_BAN, NUM_POINTS, OPENING_BANS, SIZE

BOARD_PLANES = 6
INPUTS = {"board": (BOARD_PLANES, SIZE, SIZE), "captures": (2,)}


def encode(state: PenteState, player: int) -> dict[str, np.ndarray]:
    cells = np.frombuffer(state.board, dtype=np.uint8)
    planes = np.zeros((BOARD_PLANES, NUM_POINTS), dtype=np.float32)
    planes[0] = cells == player + 1
    planes[1] = cells == 2 - player
    planes[2] = not state.end and state.ply % 2 == player
    planes[3] = player == 0
    planes[4] = 1.0
    ban = NO_BAN if state.end else opening_ban_kind(state.ply, state.config)
    if ban != NO_BAN:
        planes[5] = OPENING_BANS[ban] & (cells == EMPTY)
    captures = np.array([state.captures[player], state.captures[1 - player]], dtype=np.float32)
    return {"board": planes.reshape(INPUTS["board"]), "captures": captures / PAIRS_TO_WIN}
