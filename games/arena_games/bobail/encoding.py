"""The network input of Bobail: the seed app's 43 x 5 x 5 planes (bobail.md §8.2), all 0 or 1.

Layout of `encode(state, player)["board"]`, float32, shape (43, 5, 5) = (plane, row', col'):
  planes 3k, 3k+1, 3k+2 for k = 0..13: the board k half-moves ago (k = 0 is the board now), as
      `player`'s pawns, the opponent's pawns, the bobail. Boards before the start stay all 0.
  plane 42: all 0 when player 0 (the spec's "player 1") is to move, all 1 when player 1 is.
The board is seen from `player`'s side, like the actions: for player 0 rotated 180 degrees
(row' = 4 - row, col' = 4 - col), for player 1 as it is. The platform encodes for the side to
move, as the seed app always did.

The seed has no phase plane, and needs none: the phase can be read back from the planes. In a
pawn half the previous half-move moved the bobail (or there is no previous board: the first
half-move), and in a bobail half it moved a pawn, which leaves the bobail where it was. So the side
to move slides a pawn iff planes 3..5 are all 0 or the bobail plane 2 differs from plane 5.
"""

from __future__ import annotations

import numpy as np

from arena_games.api import GameError
from arena_games.bobail.rules import SIZE, SQUARES, BobailState, unpack_board

HISTORY_BOARDS = 14  # boards in the input, newest first
PLANES_PER_BOARD = 3  # own pawns, opponent's pawns, bobail
TURN_PLANE = HISTORY_BOARDS * PLANES_PER_BOARD  # 42
INPUT_SHAPE = (TURN_PLANE + 1, SIZE, SIZE)  # (43, 5, 5)

_SQUARE_INDICES = np.arange(SQUARES, dtype=np.int64)


def encode(state: BobailState, player: int) -> dict[str, np.ndarray]:
    """{"board": float32 (43, 5, 5)} for `player` (0 or 1), laid out as the module docstring says."""
    if player not in (0, 1):
        raise GameError(f"bobail: players are 0 and 1, got {player!r}")
    masks = []  # per board, newest first: [own pawns, opponent's pawns, bobail] as 25-bit masks
    for board in state.history[: -HISTORY_BOARDS - 1 : -1]:
        pawns0, pawns1, bobail = unpack_board(board)
        own, opponent = (pawns0, pawns1) if player == 0 else (pawns1, pawns0)
        masks.append((own, opponent, 1 << bobail))
    bits = np.array(masks, dtype=np.int64)[:, :, None] >> _SQUARE_INDICES & 1  # (boards, 3, 25)
    if player == 0:
        bits = bits[:, :, ::-1]  # square s -> 24 - s is row -> 4 - row, col -> 4 - col
    planes = np.zeros((INPUT_SHAPE[0], SQUARES), dtype=np.float32)
    planes[: bits.shape[0] * PLANES_PER_BOARD] = bits.reshape(-1, SQUARES)
    planes[TURN_PLANE] = state.player
    return {"board": planes.reshape(INPUT_SHAPE)}
