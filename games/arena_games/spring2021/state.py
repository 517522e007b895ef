"""Spring Challenge 2021's state (the rules are `arena_games.spring2021.rules`, whose docstring is
the spec): the constants, a tree's code on a cell, the config and the state, the start of a game
(`make_config`, `init`: day 0 after its gathering), the shadows, a day's GATHERING (`gather`), and
who is to move. Every function is pure; states are immutable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from arena_games.api import BadConfig, Config, merge_config
from arena_games.spring2021.board import (
    NUM_CELLS,
    RING_COUNT,
    SHADE_LINES,
    generate_map,
)

GAME_NAME = "spring2021"
WAIT_ACTION = NUM_CELLS  # 37
NUM_ACTIONS = NUM_CELLS + 1  # 38
BASE_COST = (0, 1, 3, 7)  # TREE_BASE_COST by target size (0 = a seed)
COMPLETE_COST = 4  # LIFECYCLE_END_COST
LARGE = 3  # the largest tree size
NO_TREE = -1
DEACTIVATED_SCORE = -1  # CommandManager.deactivatePlayer's score for a malformed line's author

DEFAULT_CONFIG: Mapping[str, int] = MappingProxyType(
    {
        "STARTING_SUN": 0,
        "STARTING_NUTRIENTS_LUSH": 20,  # the referee's name for the starting nutrients
        "MAX_ROUNDS": 24,  # days 0..MAX_ROUNDS - 1
        "MAX_EMPTY_CELLS": 10,  # holes drawn: MAX_EMPTY_CELLS at most (see board.generate_map)
        "MAP_RING_COUNT": RING_COUNT,  # only 3: the inputs and the action head are sized for 37 cells
    }
)
LIMITS = {  # inclusive bounds; the encoding has 24 day and 21 nutrient slots
    "STARTING_SUN": (0, 1000),
    "STARTING_NUTRIENTS_LUSH": (0, 20),
    "MAX_ROUNDS": (1, 24),
    "MAX_EMPTY_CELLS": (0, 10),
    "MAP_RING_COUNT": (RING_COUNT, RING_COUNT),
}
MAX_ROUNDS_LIMIT = LIMITS["MAX_ROUNDS"][1]
# Each frame a player does not wait makes one of its trees that was awake at the day's start dormant
# (seeds planted today are dormant), and there are at most 37 trees: <= 38 frames a day.
MAX_FRAMES_PER_DAY = NUM_CELLS + 1
MAX_STEPS = MAX_ROUNDS_LIMIT * MAX_FRAMES_PER_DAY  # 912

# A tree on a cell is one int: owner * 8 + dormant * 4 + size; NO_TREE (-1) for none.
OWNER_SHIFT, DORMANT_BIT, SIZE_BITS = 3, 4, 3


def tree_code(owner: int, size: int, dormant: bool) -> int:
    return owner << OWNER_SHIFT | (DORMANT_BIT if dormant else 0) | size


@dataclass(frozen=True, slots=True)
class SpringConfig:
    starting_sun: int
    starting_nutrients: int
    max_rounds: int
    max_empty_cells: int

    def to_dict(self) -> dict[str, int]:
        return {
            "STARTING_SUN": self.starting_sun,
            "STARTING_NUTRIENTS_LUSH": self.starting_nutrients,
            "MAX_ROUNDS": self.max_rounds,
            "MAX_EMPTY_CELLS": self.max_empty_cells,
            "MAP_RING_COUNT": RING_COUNT,
        }


@dataclass(frozen=True, slots=True)
class SpringState:
    """A position: always an ACTIONS frame of day `day`, or the end (day == max_rounds).

    `trees` has one code per cell (see tree_code; NO_TREE for none). `shadows` is the shadow size
    (0 none, 1..3) on each cell for today, as computed at the sun move from the trees then standing;
    the rules read it only at the gathering, it stays for the viewer. `gathered` is each player's sun
    gathered so far (not counting STARTING_SUN). `score` is DEACTIVATED_SCORE for a player deactivated
    for a malformed line (the game is then over). `log` is the frames played on day `log_day` (the
    latest day anyone acted): per frame, per player, the command as resolved ("" if it did not act).
    """

    config: SpringConfig
    richness: tuple[int, ...]
    trees: tuple[int, ...]
    day: int
    nutrients: int
    sun: tuple[int, int]
    score: tuple[int, int]
    gathered: tuple[int, int]
    waiting: tuple[bool, bool]
    shadows: tuple[int, ...]
    log_day: int = 0
    log: tuple[tuple[str, str], ...] = ()

    @property
    def deactivated(self) -> tuple[bool, bool]:
        """Per player: deactivated for a malformed line (see the module's doc)."""
        return (self.score[0] == DEACTIVATED_SCORE, self.score[1] == DEACTIVATED_SCORE)

    @property
    def is_over(self) -> bool:
        return self.day >= self.config.max_rounds or DEACTIVATED_SCORE in self.score


# --- config and start ---------------------------------------------------------------------------


def make_config(overrides: Config | None) -> SpringConfig:
    """The defaults updated by `overrides`; unknown keys, wrong types, values out of LIMITS: BadConfig."""
    merged = merge_config(DEFAULT_CONFIG, overrides, GAME_NAME)
    for key, (low, high) in LIMITS.items():
        if not low <= merged[key] <= high:
            raise BadConfig(f"{GAME_NAME}: config {key!r} must be in {low}..{high}, got {merged[key]}")
    return SpringConfig(
        starting_sun=merged["STARTING_SUN"],
        starting_nutrients=merged["STARTING_NUTRIENTS_LUSH"],
        max_rounds=merged["MAX_ROUNDS"],
        max_empty_cells=merged["MAX_EMPTY_CELLS"],
    )


def init(seed: int, config: Config | None = None) -> SpringState:
    """Day 0's first ACTIONS frame on the official map of `seed` (after day 0's gathering)."""
    settings = make_config(config)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise BadConfig(f"{GAME_NAME}: the seed must be an integer, got {seed!r}")
    richness, first, second = generate_map(int(seed), settings.max_empty_cells)
    trees = [NO_TREE] * NUM_CELLS
    for owner, cells in enumerate((first, second)):
        for cell in cells:
            trees[cell] = tree_code(owner, 1, False)
    start = SpringState(
        config=settings,
        richness=richness,
        trees=tuple(trees),
        day=0,
        nutrients=settings.starting_nutrients,
        sun=(settings.starting_sun, settings.starting_sun),
        score=(0, 0),
        gathered=(0, 0),
        waiting=(False, False),
        shadows=compute_shadows(tuple(trees), 0),
    )
    return gather(start)


def compute_shadows(trees: Sequence[int], direction: int) -> tuple[int, ...]:
    """Shadow size per cell with the sun in `direction`: a tree of size s shades the s cells after it."""
    shadows = [0] * NUM_CELLS
    lines = SHADE_LINES[direction]
    for cell, code in enumerate(trees):
        if code != NO_TREE and (size := code & SIZE_BITS):
            for shaded in lines[cell][:size]:
                if shadows[shaded] < size:
                    shadows[shaded] = size
    return tuple(shadows)


def gather(state: SpringState) -> SpringState:
    """GATHERING: both players wake, trees wake, each tree not spooked (shadow >= size) gives its size."""
    trees = tuple(code & ~DORMANT_BIT if code != NO_TREE else NO_TREE for code in state.trees)
    income = [0, 0]
    for cell, code in enumerate(trees):
        if code != NO_TREE and state.shadows[cell] < (size := code & SIZE_BITS):
            income[code >> OWNER_SHIFT] += size
    return replace(
        state,
        trees=trees,
        sun=(state.sun[0] + income[0], state.sun[1] + income[1]),
        gathered=(state.gathered[0] + income[0], state.gathered[1] + income[1]),
        waiting=(False, False),
    )


def to_move(state: SpringState) -> tuple[int, ...]:
    """The players who have not waited today (both at a day's start); () once the game is over."""
    if state.is_over:
        return ()
    return tuple(player for player in (0, 1) if not state.waiting[player])
