"""The network input of Spring 2021: seed 001's 534 numbers (528 bits, then 6 floats), one tensor "obs".

Layout of `encode(state, player)["obs"]`, float32, shape (534,); "me" is `player`, "them" the other:
    0..36     blocked: 1 where the cell is a hole (richness 0) or holds a tree of either player
    37..258   my block, 222 = 6 x 37 cells:
                37..73 my dormant trees, 74..110 my seeds (size 0), 111..147 my size-1 trees,
                148..184 my size-2 trees, 185..221 my size-3 trees,
                222..258 my sun, one-hot: slot min(sun, 37) - 1, none when sun is 0
    259..480  their block, the same 222 in the same order
    481..504  day, one-hot (days 0..23)
    505..525  nutrients, one-hot (0..20)
    526       1 if I have waited today, 527  1 if they have
    528..530  my score / 100, my sun / 100, my sun gathered so far / 100
    531..533  their score / 100, their sun / 100, their sun gathered so far / 100
The seed lists the sun one-hot as "37 positions, more than 37 sun is set to 37": we read that as
slots for 1..37 sun (0 sun sets no slot). "Total sun gathered" counts gatherings, not STARTING_SUN.
"""

from __future__ import annotations

import numpy as np

from arena_games.api import GameError
from arena_games.spring2021.board import NUM_CELLS
from arena_games.spring2021.rules import DORMANT_BIT, NO_TREE, OWNER_SHIFT, SIZE_BITS, SpringState

BLOCKED = 0
PLAYER_BLOCKS = (NUM_CELLS, NUM_CELLS + 6 * NUM_CELLS)  # 37 (me), 259 (them)
DORMANT, SIZE0, SUN = 0, NUM_CELLS, 5 * NUM_CELLS  # offsets inside a player block (size s at SIZE0 + 37 s)
SUN_SLOTS = NUM_CELLS
DAY = NUM_CELLS + 12 * NUM_CELLS  # 481
DAYS = 24
NUTRIENTS = DAY + DAYS  # 505
NUTRIENT_SLOTS = 21
WAITING = NUTRIENTS + NUTRIENT_SLOTS  # 526 (me), 527 (them)
FLOATS = WAITING + 2  # 528: (score, sun, gathered) / 100 for me, then for them
INPUT_SIZE = FLOATS + 6  # 534
INPUTS = {"obs": (INPUT_SIZE,)}
SCALE = 100.0


def encode(state: SpringState, player: int) -> dict[str, np.ndarray]:
    """{"obs": float32 (534,)} from the point of view of `player` (0 or 1), laid out as above."""
    if player not in (0, 1):
        raise GameError(f"spring2021: players are 0 and 1, got {player!r}")
    obs = np.zeros(INPUT_SIZE, dtype=np.float32)
    blocks = {player: PLAYER_BLOCKS[0], 1 - player: PLAYER_BLOCKS[1]}
    for cell, code in enumerate(state.trees):
        if code == NO_TREE:
            if not state.richness[cell]:
                obs[BLOCKED + cell] = 1.0
            continue
        obs[BLOCKED + cell] = 1.0
        block = blocks[code >> OWNER_SHIFT]
        obs[block + SIZE0 + NUM_CELLS * (code & SIZE_BITS) + cell] = 1.0
        if code & DORMANT_BIT:
            obs[block + DORMANT + cell] = 1.0
    for who, block in blocks.items():
        if sun := state.sun[who]:
            obs[block + SUN + min(sun, SUN_SLOTS) - 1] = 1.0
    obs[DAY + min(state.day, DAYS - 1)] = 1.0
    obs[NUTRIENTS + min(state.nutrients, NUTRIENT_SLOTS - 1)] = 1.0
    for index, who in enumerate((player, 1 - player)):
        obs[WAITING + index] = float(state.waiting[who])
        obs[FLOATS + 3 * index : FLOATS + 3 * index + 3] = (
            state.score[who] / SCALE,
            state.sun[who] / SCALE,
            state.gathered[who] / SCALE,
        )
    return {"obs": obs}
