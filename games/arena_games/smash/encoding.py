"""The network inputs of Smash the Code: seed 003's towers, as three float32 tensors of planes.

All planes are HEIGHT x width (12 x 6), row 0 the top of the well, column 0 its left; "me" is the
player asked, "them" the other.
    own        6 planes of my well: 0 skulls, then colours 1..5 (1 where the cell holds it;
               an empty cell is 0 in every plane)
    opponent   the same 6 planes of their well
    pieces     22 constant planes (a plane is all 1 or all 0, or the value everywhere):
               0..4 this turn's pair, colour of A one-hot (colour c at plane c - 1),
               5..9 its colour of B, 10..14 the next pair's A, 15..19 its B,
               20 my garbage meter, 21 theirs: nuisance points waiting to become a line / 6
               (unsent points / 420, in [0, 1))
Seed 003 fed its own well to a residual tower, the opponent's to a shallow one, and the current
piece, next piece and garbage meter as a 12 x 7 x 3 block through a 1x1 convolution; its board was
7 wide. Colours one-hot (not one plane of colour numbers) because colours are names, not amounts.
The policy head "place" has 4 * width - 2 = 22 outputs, one per placement of this turn's pair
(rules.placements: rotation-major). The seed's 440 outputs would be 22 x 20, plausibly this pair's
placement times something of the next pair; we keep the one decision a turn asks for, as a search
needs one action per turn.
"""

from __future__ import annotations

import numpy as np

from arena_games.api import GameError
from arena_games.smash.rules import COLOURS, HEIGHT, POINTS_PER_LINE, SmashState, Well

WELL_PLANES = 1 + COLOURS  # skull, then colours 1..5
PIECE_PLANES = 4 * COLOURS + 2  # 22
MY_METER, THEIR_METER = 4 * COLOURS, 4 * COLOURS + 1


def inputs(width: int) -> dict[str, tuple[int, ...]]:
    """The input shapes of the game `width` columns wide."""
    return {
        "own": (WELL_PLANES, HEIGHT, width),
        "opponent": (WELL_PLANES, HEIGHT, width),
        "pieces": (PIECE_PLANES, HEIGHT, width),
    }


def well_planes(well: Well) -> np.ndarray:
    """float32 (6, HEIGHT, width): plane v is 1 where the cell holds v (0 skull, 1..5 colours)."""
    planes = np.zeros((WELL_PLANES, HEIGHT, len(well)), dtype=np.float32)
    for x, column in enumerate(well):
        for y, cell in enumerate(column):
            planes[cell, HEIGHT - 1 - y, x] = 1.0
    return planes


def encode(state: SmashState, player: int) -> dict[str, np.ndarray]:
    """{"own", "opponent", "pieces"} from the point of view of `player` (0 or 1), as above."""
    if player not in (0, 1):
        raise GameError(f"smash: players are 0 and 1, got {player!r}")
    width = state.config.width
    pieces = np.zeros((PIECE_PLANES, HEIGHT, width), dtype=np.float32)
    turn = min(state.turn, state.config.turn_limit - 1)  # the last pairs stay shown once over
    for slot, colour in enumerate((*state.pairs[turn], *state.pairs[turn + 1])):
        pieces[slot * COLOURS + colour - 1] = 1.0
    pieces[MY_METER] = state.unsent[player] / POINTS_PER_LINE
    pieces[THEIR_METER] = state.unsent[1 - player] / POINTS_PER_LINE
    return {
        "own": well_planes(state.wells[player]),
        "opponent": well_planes(state.wells[1 - player]),
        "pieces": pieces,
    }


def encode_many(
    cells: np.ndarray, pairs: np.ndarray, unsent: np.ndarray, player: np.ndarray
) -> dict[str, np.ndarray]:
    """`encode` for many games of the batched engine at once (`playouts.Batch` rows), float32 (n, ...).

    cells int8 (n, 2, HEIGHT, width), row 0 the BOTTOM (EMPTY -1, SKULL 0, colours 1..5);
    pairs int (n, 2, 2): this turn's pair and the next one; unsent int (n, 2); player int (n,):
    whose point of view per game. The same planes as `encode` gives for each game's state."""
    rows = np.arange(cells.shape[0])
    player = np.asarray(player)
    values = np.arange(WELL_PLANES, dtype=np.int8)[None, :, None, None]
    own = cells[rows, player][:, None, ::-1] == values  # flip: plane row 0 is the top
    opponent = cells[rows, 1 - player][:, None, ::-1] == values
    n, width = cells.shape[0], cells.shape[-1]
    pieces = np.zeros((n, PIECE_PLANES, HEIGHT, width), dtype=np.float32)
    slots = pairs.reshape(n, 4).astype(np.intp)
    pieces[rows[:, None], np.arange(4) * COLOURS + slots - 1] = 1.0
    pieces[:, MY_METER] = (unsent[rows, player] / POINTS_PER_LINE)[:, None, None]
    pieces[:, THEIR_METER] = (unsent[rows, 1 - player] / POINTS_PER_LINE)[:, None, None]
    return {"own": own.astype(np.float32), "opponent": opponent.astype(np.float32), "pieces": pieces}
